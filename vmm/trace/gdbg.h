/* SPDX-License-Identifier: MIT */
/*
 * The guest's own debugging while vbts steps it.  The engines hold the
 * CPU's TF and DR0-3 for themselves, and KVM keeps the guest's DR7 out of
 * the CPU while they do; so the guest's TF, DR0-3, DR6, DR7 and
 * DEBUGCTL.BTF are kept here, and the #DBs they raise are raised here, in
 * software, where the CPU raises them: an instruction breakpoint before
 * its instruction (unless RF), a single-step trap after each instruction
 * (none after MOV SS, POP SS; with BTF only after branches), a data
 * breakpoint after the instruction whose access it covers, DR6 as the
 * handler reads it.  PUSHF and the frames of events show the guest's TF.
 * What is not modelled stops the trace in one line (docs/engine.md).
 * prefix: gdbg
 */
#ifndef VBTS_TRACE_GDBG_H
#define VBTS_TRACE_GDBG_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "trace/branch.h"

struct trace_vcpu;
struct cpu_view;

struct gdbg_state {
    bool tf;                /* the guest's RFLAGS.TF */
    bool rf;                /* ...RF: the next instruction's breakpoints do not fire */
    uint64_t dr[4], dr6, dr7;
    uint64_t events;        /* trace_vcpu.events when last looked at */
    uint64_t frame;         /* the last frame given the guest's TF (its RIP slot): not the CPU's */
    /* The instruction about to run (gdbg_before), read after it (gdbg_after): */
    bool ready;
    struct branch_pred pred;
    uint64_t at;            /* its linear address */
    uint8_t len;
    uint16_t cs;            /* the code segment it runs in */
    bool tf_before;
    bool monitors_tf;       /* an IRET's image holds the monitor's TF, not the guest's */
    uint64_t r11;           /* SYSRET's RFLAGS, as the guest had it */
    struct kvm_regs regs;   /* the registers it runs with (a second instruction's, kvm_pvm) */
    uint64_t iret_rsp;      /* an IRET: the RSP it loads */
    uint16_t iret_cs;       /* ...and CS */
    unsigned data_hits;     /* B0-3 of the data breakpoints its accesses hit */
    unsigned held;          /* ...of a MOV SS, reported after the next instruction */
    bool held_bs;
    unsigned nested;        /* #DB faults delivered in a row with no instruction run */
};

/* The guest's TF or breakpoints are on: every instruction is stepped. */
bool gdbg_engaged(const struct trace_vcpu *t);

/* Stepping begins: the guest's debug registers and TF as KVM has them.  0, or -1 (error set). */
int gdbg_start(struct trace_vcpu *t);
/*
 * The window opened after the start trigger waited in DR0-3, where KVM
 * loads the monitor's DR7, not the guest's: breakpoints the guest has
 * armed did not fire meanwhile, and the trace stops (-1); else 0.
 */
int gdbg_after_wait(struct trace_vcpu *t);
/* Stepping ended: the guest's TF back in RFLAGS.  0, or -1 (error set). */
int gdbg_end(struct trace_vcpu *t);

/*
 * Before the instruction in t->pred runs: an instruction breakpoint or
 * general detect raises its #DB now (1: the vCPU is at the handler,
 * predict again), a frame an event pushed gets the guest's TF; 0 to run
 * it; -1 when the trace stops.
 */
int gdbg_before(struct trace_vcpu *t, const struct cpu_view *v);
/* After it completed at rip: TF and RF as it left them, its #DB trap.  0, or -1. */
int gdbg_after(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip);

/* DR7's breakpoints that hit an access of len bytes at lin, of kind rw (1: write, 3: read or write). */
unsigned gdbg_data_hits(const uint64_t dr[4], uint64_t dr7, uint64_t lin, uint64_t len, bool write);
/* ...and the instruction breakpoints at lin. */
unsigned gdbg_exec_hits(const uint64_t dr[4], uint64_t dr7, uint64_t lin);

#endif
