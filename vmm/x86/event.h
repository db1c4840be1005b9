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
};

struct event {
    enum event_kind kind;
    uint8_t vector;
    bool has_error;
    uint32_t error;
    uint64_t cr2;
    uint8_t insn_len;
};

typedef void (*event_observer_fn)(struct vcpu *cpu, const struct event *ev, void *ctx);

int event_observe(struct vm *vm, event_observer_fn fn, void *ctx);
/* -1 (error set) if KVM refused it or an event is already being delivered. */
int event_raise(struct vcpu *cpu, const struct event *ev);

#endif
