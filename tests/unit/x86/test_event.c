/* SPDX-License-Identifier: MIT */
/* Events the monitor raises: KVM holds them for delivery, observers hear of them. */
#include <criterion/criterion.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "x86/arch.h"
#include "x86/event.h"
#include "x86/kvm_x86.h"

static struct vm vm;
static int heard;
static struct event last;

static void observer(struct vcpu *cpu, const struct event *ev, void *ctx)
{
    (void)cpu;
    (void)ctx;
    heard++;
    last = *ev;
}

static void setup(void)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    vm_init(&vm);
    struct kvm_x86_config c = { 0 };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &c), 0, "%s", error_last());
    cr_assert_eq(kvm_x86_enter_protected32(&vm.vcpus[0], 0x100000, 0, 0), 0);
    heard = 0;
    cr_assert_eq(event_observe(&vm, observer, NULL), 0);
}

static void teardown(void)
{
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

TestSuite(event, .init = setup, .fini = teardown);

Test(event, exception_with_error_code)
{
    struct event ev = { .kind = EVENT_EXCEPTION, .vector = 13, .has_error = true, .error = 0x18 };
    cr_assert_eq(event_raise(&vm.vcpus[0], &ev), 0, "%s", error_last());
    struct kvm_vcpu_events e;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_VCPU_EVENTS, &e), 0);
    cr_assert(e.exception.injected || e.exception.pending);
    cr_assert_eq(e.exception.nr, 13);
    cr_assert_eq(e.exception.error_code, 0x18);
    cr_assert_eq(heard, 1);
    cr_assert_eq(last.vector, 13);
}

Test(event, soft_interrupt_moves_rip_first)
{
    struct event ev = { .kind = EVENT_SOFT_INT, .vector = 3, .insn_len = 1 };
    cr_assert_eq(event_raise(&vm.vcpus[0], &ev), 0, "%s", error_last());
    struct kvm_regs r;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &r), 0);
    cr_assert_eq(r.rip, 0x100001);
    cr_assert_eq(heard, 1);
    cr_assert_eq(last.kind, EVENT_SOFT_INT);
}

Test(event, no_soft_interrupt_on_a_pending_fault)
{
    struct event gp = { .kind = EVENT_EXCEPTION, .vector = 13, .has_error = true };
    cr_assert_eq(event_raise(&vm.vcpus[0], &gp), 0, "%s", error_last());
    struct event ev = { .kind = EVENT_SOFT_INT, .vector = 0x80, .insn_len = 2 };
    cr_assert_eq(event_raise(&vm.vcpus[0], &ev), -1, "one event at a time");
    cr_assert_str_eq(error_last(), "an event is already being delivered");
    struct kvm_regs r;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &r), 0);
    cr_assert_eq(r.rip, 0x100000, "RIP stays where it was");
    cr_assert_eq(heard, 1);
}
