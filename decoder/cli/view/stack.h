/* SPDX-License-Identifier: MIT */
/*
 * Call stacks rebuilt from a trace's branch kinds, one per vCPU, for the
 * views that show nesting (calls, folded, chrome).  Calls, `int n`,
 * exceptions, interrupts and system calls enter a frame; returns, irets
 * and sysrets leave one; with symbols, a jump into another function (a
 * tail call) or a return into a function other than the caller replaces
 * the innermost frame, except a jump to code that returns at once, which
 * is the jumping function's return (a return thunk).  A return goes back
 * to the level whose call it returns after (its target just past that
 * call), leaving every level above, so code that returns past a frame
 * (Linux's SRSO thunk: call, then drop the return address and ret) keeps
 * the depth right.  The views see every change as callbacks, in order, so
 * each keeps only what it shows.
 */
#ifndef VBTS_DECODER_VIEW_STACK_H
#define VBTS_DECODER_VIEW_STACK_H

#include <stdbool.h>
#include <stdint.h>
#include <vbts/decode.h>
#include <vbts/symbols.h>

/* Frames deeper than this are not entered, only counted (a hostile or
 * runaway trace cannot make a view's stack unbounded). */
#define STACK_MAX_DEPTH 1024

/* How a frame was entered. */
enum stack_how {
    STACK_ROOT,       /* where the vCPU's trace began, or a return past it */
    STACK_CALL,
    STACK_INT,        /* int n, int3, into, int1 */
    STACK_EXCEPTION,
    STACK_INTERRUPT,
    STACK_SYSCALL,    /* syscall or sysenter (up to the kernel); sysret and sysexit leave it */
    STACK_JUMP,       /* a jump or fall-through into another function */
};

struct stack_frame {
    uint64_t func;    /* the function's address: its symbol's, else the entry; 0 unknown */
    const char *name; /* its symbol, or NULL */
    uint8_t how;      /* enum stack_how */
    uint64_t site;    /* the call or interrupted instruction that entered the level; 0 none */
    bool replaced;    /* it replaced the level's frame (a tail call), which `how` entered */
};

struct stack_ops {
    /* f begins at depth (0 is outermost) at record seq: after a call, an
     * event, or as the replacement of the frame that just ended */
    void (*enter)(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth);
    /* f, at depth, ends at record seq */
    void (*leave)(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth);
    /* f, at depth, runs again: what it entered has left */
    void (*resume)(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth);
    /* a branch executed in f, at depth, before the branch takes effect;
     * f is NULL past STACK_MAX_DEPTH */
    void (*branch)(void *ctx, const struct vbts_event *ev, const struct stack_frame *f, unsigned depth);
    /* a marker, after the frames it closes (stop, lost) have left */
    void (*marker)(void *ctx, const struct vbts_event *ev);
};

struct stack;

/* NULL if out of memory.  symtab may be NULL; ops members may be NULL. */
struct stack *stack_new(const struct vbts_symtab *symtab, const struct stack_ops *ops, void *ctx);
void stack_free(struct stack *s);

/* Feed the next record; -1 if out of memory. */
int stack_event(struct stack *s, const struct vbts_event *ev);

/* The end of the input: every frame still open leaves (a trace cut short). */
void stack_finish(struct stack *s);

/* The function at addr as a frame would name it. */
struct stack_frame stack_frame_at(const struct vbts_symtab *symtab, uint64_t addr, enum stack_how how);

#endif
