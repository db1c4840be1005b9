/* SPDX-License-Identifier: MIT */
#include "view/stack.h"

#include <stdbool.h>
#include <stdlib.h>

/* One vCPU's frames; levels past STACK_MAX_DEPTH are only counted. */
struct cpu_stack {
    struct stack_frame f[STACK_MAX_DEPTH];
    unsigned n;
    uint64_t over;
    uint64_t last_seq;
    /* A jump into another function, decided at the vCPU's next branch (jumped). */
    bool jumped;
    struct stack_frame jump_to;
    uint64_t jump_seq;
};

struct stack {
    const struct vbts_symtab *symtab;
    struct stack_ops ops;
    void *ctx;
    struct cpu_stack *cpu[UINT16_MAX + 1];
};

struct stack_frame stack_frame_at(const struct vbts_symtab *symtab, uint64_t addr, enum stack_how how)
{
    struct stack_frame f = { .how = (uint8_t)how };
    uint64_t off;
    if (symtab && (f.name = vbts_symtab_lookup(symtab, addr, &off)))
        f.func = addr - off;
    return f;
}

struct stack *stack_new(const struct vbts_symtab *symtab, const struct stack_ops *ops, void *ctx)
{
    struct stack *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->symtab = symtab;
    s->ops = *ops;
    s->ctx = ctx;
    return s;
}

void stack_free(struct stack *s)
{
    if (!s)
        return;
    for (size_t i = 0; i <= UINT16_MAX; i++)
        free(s->cpu[i]);
    free(s);
}

static void enter(struct stack *s, unsigned cpu, uint64_t seq, struct cpu_stack *c, struct stack_frame f)
{
    if (c->n == STACK_MAX_DEPTH) {
        c->over++;
        return;
    }
    c->f[c->n] = f;
    if (s->ops.enter)
        s->ops.enter(s->ctx, cpu, seq, &c->f[c->n], c->n);
    c->n++;
}

static void leave_all(struct stack *s, unsigned cpu, uint64_t seq, struct cpu_stack *c)
{
    c->over = 0;
    while (c->n) {
        c->n--;
        if (s->ops.leave)
            s->ops.leave(s->ctx, cpu, seq, &c->f[c->n], c->n);
    }
}

/* The innermost frame becomes f's function, keeping how its level was entered. */
static void replace(struct stack *s, unsigned cpu, uint64_t seq, struct cpu_stack *c, struct stack_frame f)
{
    struct stack_frame *top = &c->f[c->n - 1];
    if (s->ops.leave)
        s->ops.leave(s->ctx, cpu, seq, top, c->n - 1);
    f.how = top->how;
    f.site = top->site;
    f.replaced = true;
    *top = f;
    if (s->ops.enter)
        s->ops.enter(s->ctx, cpu, seq, top, c->n - 1);
}

/* Code reached without a branch (fall-through) in another function replaces the frame. */
static void follow(struct stack *s, unsigned cpu, uint64_t seq, struct cpu_stack *c, uint64_t addr)
{
    if (!s->symtab || c->over)
        return;
    struct stack_frame f = stack_frame_at(s->symtab, addr, STACK_JUMP);
    if (f.func != c->f[c->n - 1].func)
        replace(s, cpu, seq, c, f);
}

/*
 * A jump into another function is a tail call, unless that function's
 * first branch returns: then it is the jumping function's return, moved
 * elsewhere (Linux's `jmp __x86_return_thunk` for every `ret`).  So the
 * replacement waits for the vCPU's next record.
 */
static void jump(struct stack *s, uint64_t seq, struct cpu_stack *c, uint64_t addr)
{
    if (!s->symtab || c->over)
        return;
    struct stack_frame f = stack_frame_at(s->symtab, addr, STACK_JUMP);
    if (f.func == c->f[c->n - 1].func)
        return;
    c->jumped = true;
    c->jump_to = f;
    c->jump_seq = seq;
}

/* The waiting jump, now known to be a tail call (next is the vCPU's next record, or NULL). */
static bool settle_jump(struct stack *s, unsigned cpu, struct cpu_stack *c, const struct vbts_event *next)
{
    if (!c->jumped)
        return false;
    c->jumped = false;
    if (next && !next->is_marker && next->kind == VBTS_KIND_RET &&
        stack_frame_at(s->symtab, next->rec.from, STACK_JUMP).func == c->jump_to.func)
        return true;    /* a return thunk: the return is the jumping function's */
    replace(s, cpu, c->jump_seq, c, c->jump_to);
    return false;
}

static void leave_one(struct stack *s, unsigned cpu, uint64_t seq, struct cpu_stack *c, uint64_t to)
{
    if (c->over) {
        c->over--;
        return;
    }
    /* The level whose call `to` comes right after (an instruction is at
     * most 15 bytes; an interrupted one is returned to itself); else the
     * innermost. */
    unsigned k = c->n - 1;
    for (unsigned i = c->n - 1; i > 0; i--) {
        uint64_t site = c->f[i].site;
        if (site && to >= site && to - site <= 15) {
            k = i;
            break;
        }
    }
    while (c->n > k) {
        c->n--;
        if (s->ops.leave)
            s->ops.leave(s->ctx, cpu, seq, &c->f[c->n], c->n);
    }
    if (!c->n) {
        /* A return past where the trace began: the function returned to is the new outermost. */
        enter(s, cpu, seq, c, stack_frame_at(s->symtab, to, STACK_ROOT));
        return;
    }
    struct stack_frame f = stack_frame_at(s->symtab, to, STACK_JUMP);
    if (s->symtab && f.func != c->f[c->n - 1].func)
        replace(s, cpu, seq, c, f);
    else if (s->ops.resume)
        s->ops.resume(s->ctx, cpu, seq, &c->f[c->n - 1], c->n - 1);
}

static void push(struct stack *s, unsigned cpu, const struct vbts_event *ev, struct cpu_stack *c,
                 enum stack_how how)
{
    struct stack_frame f = stack_frame_at(s->symtab, ev->rec.to, how);
    if (!s->symtab)
        f.func = ev->rec.to;    /* no names: the entry address tells functions apart */
    f.site = ev->rec.from;
    enter(s, cpu, ev->seq, c, f);
}

int stack_event(struct stack *s, const struct vbts_event *ev)
{
    unsigned cpu = ev->cpu;
    struct cpu_stack *c = s->cpu[cpu];
    if (!c && !(c = s->cpu[cpu] = calloc(1, sizeof(*c))))
        return -1;
    c->last_seq = ev->seq;
    bool thunk = settle_jump(s, cpu, c, ev);
    if (ev->is_marker) {
        /* After a gap or at the end the stack is unknown: every frame leaves. */
        if (ev->qualifier == VBTS_MARK_STOP || ev->qualifier == VBTS_MARK_LOST)
            leave_all(s, cpu, ev->seq, c);
        if (s->ops.marker)
            s->ops.marker(s->ctx, ev);
        return 0;
    }
    uint64_t seq = ev->seq;
    if (!c->n && !c->over)
        enter(s, cpu, seq, c, stack_frame_at(s->symtab, ev->rec.from, STACK_ROOT));
    if (!thunk)
        follow(s, cpu, seq, c, ev->rec.from);    /* fell through into the next function */
    if (s->ops.branch) {
        if (c->over)
            s->ops.branch(s->ctx, ev, NULL, c->n);
        else
            s->ops.branch(s->ctx, ev, &c->f[c->n - 1], c->n - 1);
    }
    switch (ev->kind) {
    case VBTS_KIND_CALL:
    case VBTS_KIND_CALL_IND:
        push(s, cpu, ev, c, STACK_CALL);
        break;
    case VBTS_KIND_INT:
        push(s, cpu, ev, c, STACK_INT);
        break;
    case VBTS_KIND_EXCEPTION:
        push(s, cpu, ev, c, STACK_EXCEPTION);
        break;
    case VBTS_KIND_INTERRUPT:
        push(s, cpu, ev, c, STACK_INTERRUPT);
        break;
    case VBTS_KIND_SYSCALL:
        /* One kind for both ways; kernels sit above their user space (x86-64's
         * upper half, i386's 3G/1G split), so a system call branches up, and its
         * return down, also in a trace that began inside the kernel. */
        if (ev->rec.to > ev->rec.from)
            push(s, cpu, ev, c, STACK_SYSCALL);
        else
            leave_one(s, cpu, seq, c, ev->rec.to);
        break;
    case VBTS_KIND_RET:
    case VBTS_KIND_IRET:
        leave_one(s, cpu, seq, c, ev->rec.to);
        break;
    default:
        jump(s, seq, c, ev->rec.to);
        break;
    }
    return 0;
}

void stack_finish(struct stack *s)
{
    for (unsigned i = 0; i <= UINT16_MAX; i++)
        if (s->cpu[i]) {
            settle_jump(s, i, s->cpu[i], NULL);
            leave_all(s, i, s->cpu[i]->last_seq + 1, s->cpu[i]);
        }
}
