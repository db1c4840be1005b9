/* SPDX-License-Identifier: MIT */
/*
 * Reading a step that did not end where the instruction goes: which event
 * was delivered, and which instructions ran without a step exit of their
 * own.  Pure functions of a register snapshot and guest memory; the
 * engines decide what to record from their answers.
 */
#ifndef VBTS_TRACE_ATTRIB_H
#define VBTS_TRACE_ATTRIB_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/branch.h"

/* How many swallowed steps in a row a reading may assume (seen on kvm_pvm: 4). */
#define ATTRIB_SKIP_MAX 4

/*
 * Instructions from `lin` on whose step exits were swallowed lead to `rip`:
 * up to `max` of them, straight-line, the last of which may be a branch.
 * On success the record that branch makes, if any, is in *rec.  An
 * indirect branch's target is taken on trust only as the first of them.
 */
bool attrib_skip(const struct cpu_view *v, uint64_t lin, uint64_t rip, int max,
                 bool allow_indirect, struct branch_pred *rec, bool *has_rec);

/*
 * What the run from `lin` to `rip` (straight-line, at most `max`, the last
 * may branch) does to the stack pointer: true with *delta when every write
 * to it is a push, a pop, a near call or return, or adds a constant; false
 * when some other instruction writes it, or the run cannot be decoded.  An event's
 * delivery always moves the stack pointer (the frame it pushes, or a new
 * stack), so a step that moved it otherwise than the run does was an
 * event, however well straight-line code explains the new RIP.
 */
bool attrib_run_sp(const struct cpu_view *v, uint64_t lin, uint64_t rip, int max, int64_t *delta);

/*
 * After these the next instruction may run without a step exit of its
 * own: MOV SS on every host (its shadow holds the trap back); STI and
 * PAUSE where QEMU's TCG stands in for the CPU (an inhibiting instruction
 * gets no trap, and PAUSE leaves the translation block without one).
 */
bool attrib_swallows_step(const struct branch_pred *p);

/*
 * The instruction at `next` ran without a step exit and left the vCPU at
 * `rip`; so may a run of them, each after one that swallows the step.
 * *s is the last, when they explain `rip`.
 */
bool attrib_shadowed(const struct cpu_view *v, uint64_t next, uint64_t rip, struct branch_pred *s);

enum attrib_status { ATTRIB_OK, ATTRIB_NONE, ATTRIB_SEVERAL };

struct attrib_event {
    enum attrib_status status;
    int vector;                 /* the vector delivered (SEVERAL: one of them) */
    int other;                  /* SEVERAL: another, with a different record */
    uint64_t handler;           /* its handler, the record's `to` */
    bool has_skip;              /* the handler's first instructions ran unseen... */
    struct branch_pred skip;    /* ...and this branch among them makes a record */
};

/*
 * The vCPU is at `rip` after an event: the IDT vector whose handler is
 * `rip`, or whose handler's first instructions (up to `max` swallowed
 * steps) lead there.  `hint` is the vector the monitor raised or the
 * instruction is known to raise, or -1; `only` restricts the search to
 * it.  Vectors with different records explaining it, none hinted, is
 * SEVERAL; vectors with the same record (one handler, same kind) are one.
 */
void attrib_event(const struct cpu_view *v, uint64_t rip, int hint, bool only, int max,
                  struct attrib_event *out);

/*
 * Can the instruction at `from`, in the state `at` it ran in, raise the
 * exception `vector`?  Only the vectors an instruction alone decides are
 * judged (true for the others: #DB, NMI, #MC, interrupts).  A "no" means
 * the host delivered what a CPU would not (kvm_pvm: #GP for SYSCALL from
 * user mode), and the trace must not take it for the guest's.
 */
bool attrib_may_raise(const struct cpu_view *at, uint64_t from, int vector);

/* The record kind of an event on `vector`: an unexplained one from 32 up, or the NMI's, is an interrupt. */
unsigned attrib_kind(unsigned kind, int vector);

#endif
