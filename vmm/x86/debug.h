/* SPDX-License-Identifier: MIT */
/*
 * The one owner of KVM_SET_GUEST_DEBUG.  Several clients want single-steps
 * or execution breakpoints on a vCPU (the trace engine, host-compat, ...);
 * each states what it wants, and the owner merges the wishes into the one
 * debug state KVM has, and hands each KVM_EXIT_DEBUG to the client whose
 * breakpoint or step it is.
 */
#ifndef VBTS_X86_DEBUG_H
#define VBTS_X86_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vcpu.h"

enum debug_client { DEBUG_TRACE, DEBUG_HOSTCOMPAT, DEBUG_NCLIENTS };

#define DEBUG_MAX_BP 4

struct debug_want {
    bool step;                  /* single-step */
    bool unless_stepped;        /* drop these wishes while another client steps */
    int nbp;                    /* execution breakpoints, at linear addresses */
    uint64_t bp[DEBUG_MAX_BP];
};

/* Per vCPU (x86/arch.h): the clients' wishes and what KVM was given. */
struct debug_state {
    struct debug_want want[DEBUG_NCLIENTS];
    bool stepping;              /* KVM single-steps this vCPU */
    int slot_owner[DEBUG_MAX_BP];   /* client of each DR0-3 slot, or -1 */
    int slot_index[DEBUG_MAX_BP];   /* which of that client's breakpoints */
};

/* A debug exit for `who`: hits is a bit per breakpoint of its own that fired, 0 for a step. */
typedef enum vcpu_verdict (*debug_exit_fn)(struct vcpu *cpu, unsigned hits, void *ctx);
/* Stepping of the vCPU went from on to off. */
typedef void (*debug_step_off_fn)(struct vcpu *cpu, void *ctx);

/* Claims KVM_EXIT_DEBUG for the VM (once, at setup). */
int debug_install(struct vm *vm);
int debug_on_exit(struct vm *vm, enum debug_client who, debug_exit_fn fn, void *ctx);
int debug_on_step_off(struct vm *vm, debug_step_off_fn fn, void *ctx);

struct kvm_guest_debug;
/*
 * The merged state for KVM: single-step if any standing client steps, the
 * standing clients' breakpoints in DR0-3 in client order (slot_owner and
 * slot_index say whose).  Returns whether it single-steps.
 */
bool debug_merge(struct debug_state *d, struct kvm_guest_debug *out);

/* A client's new wishes; KVM_SET_GUEST_DEBUG with the merged state.  -1, error set. */
int debug_set(struct vcpu *cpu, enum debug_client who, const struct debug_want *w);
bool debug_stepping(const struct vcpu *cpu);

#endif
