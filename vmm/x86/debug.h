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

/* In the order their breakpoints get DR0-3: a later client gets the slots left over. */
enum debug_client { DEBUG_TRACE, DEBUG_HOSTCOMPAT, DEBUG_GDB, DEBUG_NCLIENTS };

#define DEBUG_MAX_BP 4

struct debug_want {
    bool step;                  /* single-step */
    bool block_irq;             /* KVM injects no interrupt or NMI (KVM_GUESTDBG_BLOCKIRQ) */
    bool unless_stepped;        /* drop these wishes while another client steps */
    bool exclusive;             /* ...or runs with these: yielding clients yield to them too */
    int nbp;                    /* breakpoints, at linear addresses */
    uint64_t bp[DEBUG_MAX_BP];
    /* DR7's R/W and LEN fields of each: 0 and 0 for an execution breakpoint. */
    uint8_t bp_rw[DEBUG_MAX_BP];
    uint8_t bp_len[DEBUG_MAX_BP];
};

/* DR7 R/W values: break on execution, on data writes, on data reads or writes. */
#define DEBUG_RW_EXEC  0
#define DEBUG_RW_WRITE 1
#define DEBUG_RW_ACCESS 3
/* DR6: the exit is (also) a single-step trap. */
#define DEBUG_DR6_BS (1u << 14)

/* Per vCPU (x86/arch.h): the clients' wishes and what KVM was given. */
struct debug_state {
    struct debug_want want[DEBUG_NCLIENTS];
    bool stepping;              /* KVM single-steps this vCPU */
    bool applied;               /* KVM has the merged wishes */
    bool exclusive;             /* ...and they include an exclusive client's */
    uint32_t control;           /* the KVM_GUESTDBG_* flags KVM was given last */
    bool hide_guest;            /* while stepping, the guest's own DR7 stays out of the CPU */
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

/* DR0-3 slots the clients before `who` take on this vCPU: what is left for it. */
int debug_slots_left(const struct vcpu *cpu, enum debug_client who);

/*
 * Breakpoints the clients other than `who` want that stand now (none that
 * yield to `who`'s); all of DR0-3 if one of them single-steps.
 */
int debug_bps_of_others(const struct vcpu *cpu, enum debug_client who);

/*
 * Another client than `who` has an execution breakpoint at `lin`, or a data
 * breakpoint anywhere: code the monitor runs in software must stop there
 * (or not run), for the CPU to fire it.
 */
bool debug_others_break_at(const struct vcpu *cpu, enum debug_client who, uint64_t lin);

/* The host's KVM holds interrupts back for a stepping client (Linux 5.16+). */
bool debug_can_block_irq(const struct vm *vm);

/* A client's new wishes; KVM_SET_GUEST_DEBUG with the merged state.  -1, error set. */
int debug_set(struct vcpu *cpu, enum debug_client who, const struct debug_want *w);
bool debug_stepping(const struct vcpu *cpu);
/*
 * The same state again.  Hosts that single-step with RFLAGS.TF (VMX, SVM)
 * keep TF only while RIP is where KVM_SET_GUEST_DEBUG last found it, and
 * drop it when they emulate an instruction or the monitor moves RIP: a
 * stepping client re-arms before every KVM_RUN.
 */
int debug_rearm(struct vcpu *cpu);
/*
 * The guest has breakpoints of its own, which the trace honours in
 * software (trace/gdbg.c): while a client steps, KVM loads the clients'
 * DR7 (KVM_GUESTDBG_USE_HW_BP, none enabled) rather than the guest's, so
 * that they cannot fire in the CPU as well.
 */
int debug_hide_guest(struct vcpu *cpu, bool on);
/*
 * The same, but with interrupts let in: for one KVM_RUN that ends before
 * the guest runs (vcpu_probe), so that KVM takes a pending interrupt.
 * The next debug_rearm() or debug_set() holds them back again.
 */
int debug_let_irq(struct vcpu *cpu);

#endif
