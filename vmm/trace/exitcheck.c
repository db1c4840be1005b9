/* SPDX-License-Identifier: MIT */
#include "trace/exitcheck.h"

enum exitcheck_verdict exitcheck_step(uint32_t reason, uint64_t predicted, uint64_t rip, bool reset)
{
    switch (reason) {
    case KVM_EXIT_DEBUG:            /* the engine's own: a step or a breakpoint it set */
    case KVM_EXIT_INTR:             /* a kick: the step may be done, its trap still pending */
    case KVM_EXIT_FAIL_ENTRY:       /* nothing ran */
        return EXITCHECK_NONE;
    case KVM_EXIT_SHUTDOWN:
        if (reset)
            return EXITCHECK_GONE;
        break;
    default:
        break;
    }
    if (rip != predicted)
        return EXITCHECK_RAN;
    switch (reason) {
    case KVM_EXIT_IO:
    case KVM_EXIT_MMIO:
    case KVM_EXIT_X86_RDMSR:
    case KVM_EXIT_X86_WRMSR:
        return EXITCHECK_OWED;
    default:
        return EXITCHECK_AT;
    }
}

bool exitcheck_reset(const struct kvm_regs *r, const struct kvm_sregs *s)
{
    return r->rip == 0xfff0 && s->cs.selector == 0xf000 && !(s->cr0 & 1);
}
