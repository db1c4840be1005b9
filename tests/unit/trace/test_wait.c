/* SPDX-License-Identifier: MIT */
/* vCPUs that wait (wait.c): an AP before its SIPI, a vCPU after a HLT, on a real VM with KVM's irqchip. */
#include <criterion/criterion.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "trace/engine.h"
#include "trace/trace.h"
#include "trace/wait.h"
#include "x86/debug.h"
#include "x86/kvm_x86.h"

static struct vm vm;
static struct trace_config tc;
static struct trace *tr;

static void setup(void)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    vm_init(&vm);
    struct kvm_x86_config xc = { .irqchip = true };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 2, &xc), 0, "%s", error_last());
    cr_assert_eq(debug_install(&vm), 0);
    struct trace_options to = { 0 };
    cr_assert_eq(trace_config_build(&tc, &to), 0);
    cr_assert_not_null(tr = trace_install(&vm, &tc, NULL), "%s", error_last());
}

static void teardown(void)
{
    trace_free(tr);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

TestSuite(wait, .init = setup, .fini = teardown);

static unsigned mp_state(int cpu)
{
    struct kvm_mp_state mp;
    cr_assert_eq(ioctl(vm.vcpus[cpu].fd, KVM_GET_MP_STATE, &mp), 0);
    return mp.mp_state;
}

/* The BSP has started; an AP waits for INIT and SIPI, and KVM_RUN may take it there. */
Test(wait, start)
{
    struct trace_vcpu *bsp = &tr->cpu[0], *ap = &tr->cpu[1];
    cr_assert_eq(wait_start(bsp), 0, "%s", error_last());
    cr_assert(bsp->started && !bsp->sipi_wait);
    cr_assert_eq(mp_state(1), KVM_MP_STATE_UNINITIALIZED);
    cr_assert_eq(wait_start(ap), 0, "%s", error_last());
    cr_assert(!ap->started && ap->sipi_wait, "predicted afresh once the SIPI came");
}

/* After a HLT with interrupts off: halted, and an NMI ends the wait. */
Test(wait, halted_until_an_nmi)
{
    struct trace_vcpu *t = &tr->cpu[0];
    t->stepping = true;
    t->halted_off = true;
    t->cpu->run->s.regs.regs.rflags = 0x2;
    cr_assert_eq(ioctl(t->cpu->fd, KVM_NMI, 0), 0);
    cr_assert_eq(wait_halted(t), 0, "%s", error_last());
    cr_assert_not(t->halted_off);
    cr_assert_eq(mp_state(0), KVM_MP_STATE_HALTED, "halted, as the CPU after HLT");
    cr_assert(t->stepping);
    t->stepping = false;
}

/* A poll's pause doubles up to its bound, and stays there. */
Test(wait, backoff_doubles_up_to_its_bound)
{
    long ns = 1000;
    wait_backoff(&ns, 4000);
    cr_assert_eq(ns, 2000);
    wait_backoff(&ns, 4000);
    wait_backoff(&ns, 4000);
    cr_assert_eq(ns, 4000);
    wait_backoff(&ns, 4000);
    cr_assert_eq(ns, 4000);
}
