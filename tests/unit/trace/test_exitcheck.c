/* SPDX-License-Identifier: MIT */
/* Every exit checked against the prediction (exitcheck.c): one case per exit reason. */
#include <criterion/criterion.h>

#include "trace/exitcheck.h"

#define AT 0x100020ull
#define NEXT 0x100022ull

Test(exitcheck, the_engines_own_exits_and_kicks_are_not_checked)
{
    cr_assert_eq(exitcheck_step(KVM_EXIT_DEBUG, AT, NEXT, false), EXITCHECK_NONE);
    cr_assert_eq(exitcheck_step(KVM_EXIT_INTR, AT, NEXT, false), EXITCHECK_NONE,
                 "a kick: the step may be done, its trap pending");
    cr_assert_eq(exitcheck_step(KVM_EXIT_FAIL_ENTRY, AT, 0, false), EXITCHECK_NONE);
}

Test(exitcheck, io_mmio_and_msrs_stop_at_the_instruction_kvm_completes)
{
    uint32_t owed[] = { KVM_EXIT_IO, KVM_EXIT_MMIO, KVM_EXIT_X86_RDMSR, KVM_EXIT_X86_WRMSR };
    for (unsigned i = 0; i < sizeof(owed) / sizeof(owed[0]); i++) {
        cr_assert_eq(exitcheck_step(owed[i], AT, AT, false), EXITCHECK_OWED, "reason %u", owed[i]);
        cr_assert_eq(exitcheck_step(owed[i], AT, NEXT, false), EXITCHECK_RAN,
                     "reason %u elsewhere: what ran is read as a step", owed[i]);
    }
}

Test(exitcheck, hlt_internal_errors_and_the_rest)
{
    cr_assert_eq(exitcheck_step(KVM_EXIT_HLT, AT, AT + 1, false), EXITCHECK_RAN, "past the HLT KVM ran");
    cr_assert_eq(exitcheck_step(KVM_EXIT_INTERNAL_ERROR, AT, AT, false), EXITCHECK_AT,
                 "an emulation failure of the predicted instruction");
    cr_assert_eq(exitcheck_step(KVM_EXIT_INTERNAL_ERROR, AT, 0x200000, false), EXITCHECK_RAN);
    cr_assert_eq(exitcheck_step(KVM_EXIT_SYSTEM_EVENT, AT, AT, false), EXITCHECK_AT);
    cr_assert_eq(exitcheck_step(KVM_EXIT_SYSTEM_EVENT, AT, 0x300, false), EXITCHECK_RAN);
    cr_assert_eq(exitcheck_step(KVM_EXIT_IRQ_WINDOW_OPEN, AT, 0x300, false), EXITCHECK_RAN);
}

Test(exitcheck, a_shutdown_that_reset_the_vcpu_has_nothing_to_check)
{
    cr_assert_eq(exitcheck_step(KVM_EXIT_SHUTDOWN, AT, 0xffff0, true), EXITCHECK_GONE);
    cr_assert_eq(exitcheck_step(KVM_EXIT_SHUTDOWN, AT, AT, false), EXITCHECK_AT,
                 "kvm_pvm keeps the state: the triple fault came at the instruction");
    cr_assert_eq(exitcheck_step(KVM_EXIT_SHUTDOWN, AT, 0x400, false), EXITCHECK_RAN);
    struct kvm_regs r = { .rip = 0xfff0 };
    struct kvm_sregs s = { .cs = { .selector = 0xf000, .base = 0xffff0000 }, .cr0 = 0x60000010 };
    cr_assert(exitcheck_reset(&r, &s));
    s.cr0 |= 1;
    cr_assert_not(exitcheck_reset(&r, &s));
}
