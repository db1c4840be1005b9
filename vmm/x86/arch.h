/* SPDX-License-Identifier: MIT */
/*
 * The x86 layer's state, hung on the core's vm->arch and vcpu->arch:
 * how the VM was built, the debug-register owner's and host-compat's
 * per-vCPU state, and who listens to debug exits and raised events.
 */
#ifndef VBTS_X86_ARCH_H
#define VBTS_X86_ARCH_H

#include <stdbool.h>

#include "core/vm.h"
#include "x86/debug.h"
#include "x86/event.h"
#include "x86/hostcompat.h"
#include "x86/vcpu_state.h"

#define ARCH_MAX_LISTENERS 4

struct arch_vm {
    bool irqchip;               /* KVM's PIC/IOAPIC/LAPIC/PIT (Linux guests) */
    bool ds_cpuid;              /* CPUID announces DS and DTES64 (guest BTS) */
    bool no_steal_time;         /* CPUID hides KVM steal time */
    bool no_hypercalls;         /* CPUID hides the PV features that make hypercalls */
    bool user_msr;              /* MSR accesses KVM would #GP exit to the monitor */
    bool hostcompat;            /* complete instructions the host cannot emulate */
    struct { debug_exit_fn fn; void *ctx; } debug_exit[DEBUG_NCLIENTS];
    int nstep_off;
    struct { debug_step_off_fn fn; void *ctx; } step_off[ARCH_MAX_LISTENERS];
    int nobservers;
    struct { event_observer_fn fn; void *ctx; } observer[ARCH_MAX_LISTENERS];
};

struct arch_vcpu {
    struct debug_state dbg;
    struct hostcompat_vcpu hc;
    bool soft_events;           /* events are delivered in software (x86/event.h) */
    struct vcpu_state end_state;    /* taken at the thread's end (x86/vcpu_state.h) */
};

static inline struct arch_vm *arch_vm(const struct vm *vm)
{
    return (struct arch_vm *)vm->arch;
}

static inline struct arch_vcpu *arch_vcpu(const struct vcpu *cpu)
{
    return (struct arch_vcpu *)cpu->arch;
}

#endif
