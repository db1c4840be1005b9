/* SPDX-License-Identifier: MIT */
/*
 * Events the monitor raises in the guest: an exception from a device or a
 * completed instruction, an interrupt from the monitor's own local APIC, a
 * software interrupt host-compat finishes.  event_raise() hands it to KVM;
 * observers (the trace engine) learn that the next step shows its delivery.
 */
#ifndef VBTS_X86_EVENT_H
#define VBTS_X86_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vcpu.h"

enum event_kind {
    EVENT_EXCEPTION,            /* vector < 32, optional error code; #PF takes cr2 */
    EVENT_INTERRUPT,            /* external, from the monitor's APIC (KVM_INTERRUPT) */
    EVENT_NMI,
    EVENT_SOFT_INT,             /* int3/int n completed: RIP moves past insn_len first */
    EVENT_COMPLETED,            /* none: the monitor completed the instruction (event_completed) */
};

struct event {
    enum event_kind kind;
    uint8_t vector;
    bool has_error;
    uint32_t error;
    uint64_t cr2;
    uint8_t insn_len;
    /* Set by event_raise when it delivered the event in software (event_soft): */
    bool delivered;
    uint8_t from_cpl;           /* the privilege it interrupted */
    uint64_t from, to;          /* the linear RIP it interrupted, the handler */
};

struct delivery;

typedef void (*event_observer_fn)(struct vcpu *cpu, const struct event *ev, void *ctx);

/*
 * While on, events are delivered in software (x86/deliver.c) on the
 * vCPU's synced registers, so that a single-stepping engine stands at the
 * handler's first instruction instead of KVM's delivery running the
 * handler without steps (hosts that step with RFLAGS.TF).
 */
void event_soft(struct vcpu *cpu, bool on);
bool event_is_soft(const struct vcpu *cpu);

/*
 * Deliver d in software on cpu->run->s.regs and hand the result to KVM
 * (registers, segments, CR2, NMI blocking).  *from is the linear RIP the
 * event interrupted, *to the handler, *vector the vector delivered (a
 * refused int n is a #GP).  -1 with the error set when the delivery is
 * one the CPU would not complete (x86/deliver.h says which).
 */
int event_deliver(struct vcpu *cpu, const struct delivery *d, uint64_t *from, uint64_t *to,
                  unsigned *vector);
/* The same, and a delivery that faults on the way in goes on as the CPU's does (deliver_nested: -2, a shutdown). */
int event_deliver_nested(struct vcpu *cpu, const struct delivery *d, uint64_t *from, uint64_t *to,
                         unsigned *vector);

/*
 * After vcpu_probe(): the event KVM was about to inject (an interrupt, an
 * NMI, an exception it queued), taken back from KVM into *d.  1 if there
 * was one, 0 if not, -1 with the error set.
 */
/* STAR, LSTAR and FMASK: 0, or -1 with the error set. */
struct deliver_syscall_msrs;
int event_syscall_msrs(struct vcpu *cpu, struct deliver_syscall_msrs *m);
/*
 * Run the SYSCALL (insn_len bytes) at the vCPU's RIP as the CPU does
 * (deliver_syscall) on its sync registers, and set them: 0 and LSTAR in
 * *to, or -1 with the error set (registers unchanged).
 */
int event_syscall(struct vcpu *cpu, uint8_t insn_len, uint64_t *to);
int event_take_pending(struct vcpu *cpu, struct delivery *d);
/*
 * The monitor ran an IRET for the host: as the CPU's, it ends the NMI
 * handler's blocking of NMIs.  0, or -1 with the error set.
 */
int event_iret_done(struct vcpu *cpu);

int event_observe(struct vm *vm, event_observer_fn fn, void *ctx);
/*
 * The monitor completed the instruction at the vCPU's RIP for the host,
 * raising nothing: its state is set, in the exit's registers too.
 * Observers see an EVENT_COMPLETED: what the CPU would show as the end of
 * a step (the next KVM_RUN runs the next instruction).
 */
void event_completed(struct vcpu *cpu);
/* -1 (error set) if KVM refused it or an event is already being delivered. */
int event_raise(struct vcpu *cpu, const struct event *ev);

#endif
