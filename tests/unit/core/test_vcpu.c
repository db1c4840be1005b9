/* SPDX-License-Identifier: MIT */
/* The exit registry: handlers in registration order, PASS and DONE, the core's defaults. */
#include <criterion/criterion.h>
#include <string.h>
#include <linux/kvm.h>

#include "core/vm.h"

static char order[16];

static enum vcpu_verdict first(struct vcpu *cpu, void *ctx)
{
    (void)cpu;
    strcat(order, ctx);
    return VCPU_EXIT_PASS;
}

static enum vcpu_verdict taker(struct vcpu *cpu, void *ctx)
{
    (void)cpu;
    strcat(order, ctx);
    return VCPU_EXIT_DONE;
}

static struct vm vm;
static struct vcpu cpu;
static struct kvm_run run;

static void setup(void)
{
    vm_init(&vm);
    memset(&run, 0, sizeof(run));
    cpu = (struct vcpu){ .vm = &vm, .index = 0, .fd = -1, .run = &run, .run_size = sizeof(run) };
    vm.vcpus = &cpu;
    vm.ncpus = 1;
    order[0] = 0;
}

TestSuite(vcpu, .init = setup);

Test(vcpu, handlers_in_order_until_done)
{
    cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_HLT, first, "a"), 0);
    cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_DEBUG, first, "x"), 0);
    cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_HLT, taker, "b"), 0);
    cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_HLT, taker, "c"), 0);
    run.exit_reason = KVM_EXIT_HLT;
    vcpu_dispatch_exit(&cpu);
    cr_assert_str_eq(order, "ab", "handlers of other reasons are not called; DONE stops");
    cr_assert(!vm_ending(&vm), "taken: the core's default (end on HLT) does not run");
}

Test(vcpu, defaults_when_nobody_takes_it)
{
    cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_HLT, first, "a"), 0);
    run.exit_reason = KVM_EXIT_HLT;
    vcpu_dispatch_exit(&cpu);
    cr_assert_str_eq(order, "a");
    cr_assert_eq(atomic_load(&vm.end), VM_END_HALT);
    cr_assert_str_eq(vm.end_msg, "guest halted");
}

Test(vcpu, unknown_msr_is_gp_and_unknown_exit_ends)
{
    run.exit_reason = KVM_EXIT_X86_RDMSR;
    run.msr.error = 0;
    vcpu_dispatch_exit(&cpu);
    cr_assert_eq(run.msr.error, 1);
    run.exit_reason = 0x7777;
    vcpu_dispatch_exit(&cpu);
    cr_assert_eq(vm.exit_status, VBTS_EXIT_MONITOR);
    cr_assert_str_eq(vm.end_msg, "unhandled KVM exit 30583 on vCPU 0");
}

Test(vcpu, registry_is_bounded)
{
    for (int i = 0; i < VCPU_MAX_HANDLERS; i++)
        cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_IO, first, "z"), 0);
    cr_assert_eq(vcpu_on_exit(&vm, KVM_EXIT_IO, first, "z"), -1);
    cr_assert_str_eq(error_last(), "too many exit handlers (32)");
}
