/* SPDX-License-Identifier: MIT */
/*
 * What a vCPU waited for when its thread ended: its local APIC (timer,
 * IRR, ISR, TPR), the events KVM held for it, its run state, and the debug
 * state the monitor left on it.  A run a signal ends (a hang in CI, a
 * user's Ctrl-C) prints it, so that a guest that sleeps for ever says what
 * it sleeps on: a timer that was never armed, one whose deadline passed
 * without an interrupt, an interrupt held back, a vector stuck in ISR.
 */
#ifndef VBTS_X86_VCPU_STATE_H
#define VBTS_X86_VCPU_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

struct vm;
struct vcpu;

struct vcpu_state {
    bool known;                 /* taken after the vCPU's last KVM_RUN */
    uint64_t rflags;
    uint32_t mp_state;
    bool has_lapic;             /* an in-kernel local APIC (Linux guests) */
    uint32_t svr, tpr, ppr, lvt_timer, tmict, tmcct, tdcr;
    uint32_t irr[8], isr[8];
    bool has_tsc;               /* the two MSRs below were read */
    uint64_t tsc_deadline, tsc;
    bool has_events;
    struct kvm_vcpu_events ev;
    uint32_t debug_control;     /* KVM_GUESTDBG_* the monitor left set */
    uint64_t guest_dr7;         /* the guest's own DR7 */
};

/* Registers the snapshot at each vCPU thread's end (once, at setup). */
int vcpu_state_install(struct vm *vm);

/*
 * Takes the snapshot of a vCPU, from its own thread, outside KVM_RUN.
 * What KVM refuses to tell is left out, never an error.
 */
void vcpu_state_take(struct vcpu *cpu, struct vcpu_state *s);

/*
 * One line for the snapshot, e.g. "IF=1 halted; LAPIC on, TPR 0, timer
 * tsc-deadline vector 0xec, deadline passed 1234 TSC ticks ago; IRR -;
 * ISR -; events: none; guest debug: none".  buf is always terminated.
 */
void vcpu_state_describe(const struct vcpu_state *s, char *buf, size_t len);

/* The snapshot of vCPU i taken at its thread's end, or NULL. */
const struct vcpu_state *vcpu_state_of(const struct vm *vm, int i);

#endif
