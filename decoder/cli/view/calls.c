/* SPDX-License-Identifier: MIT */
/*
 * --format calls: one line each time a vCPU runs another function (a call,
 * an event, a return, a tail jump), "CPU<tab>N<tab>" and the name indented
 * two spaces a level, as gdb's record function-call-history /c numbers and
 * indents them.  A frame an event entered says so ("[exception]"); what
 * replaces it at that level (a tail call) does not.  Markers
 * that matter to the history are comments: "# CPU lost N", ctx switches,
 * the stop.
 */
#include <stdlib.h>

#include "view/view.h"

struct calls {
    struct view_stacked base;
    uint64_t n[UINT16_MAX + 1];     /* lines so far, per vCPU */
};

static const char *const how_note[] = {
    [STACK_INT] = " [int]",
    [STACK_EXCEPTION] = " [exception]",
    [STACK_INTERRUPT] = " [interrupt]",
    [STACK_SYSCALL] = " [syscall]",
};

static void line(struct calls *v, unsigned cpu, const struct stack_frame *f, unsigned depth)
{
    fprintf(v->base.out, "%u\t%llu\t%*s", cpu, (unsigned long long)++v->n[cpu], (int)(2 * depth), "");
    view_put_name(v->base.out, f, NULL, false);
    if (!f->replaced && f->how < sizeof(how_note) / sizeof(how_note[0]) && how_note[f->how])
        fputs(how_note[f->how], v->base.out);
    putc('\n', v->base.out);
}

static void on_enter(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth)
{
    (void)seq;
    line(ctx, cpu, f, depth);
}

static void on_marker(void *ctx, const struct vbts_event *ev)
{
    struct calls *v = ctx;
    const char *reason;
    switch (ev->qualifier) {
    case VBTS_MARK_LOST:
        fprintf(v->base.out, "# %u lost %llu records\n", ev->cpu, (unsigned long long)ev->rec.to);
        break;
    case VBTS_MARK_CTX_ARRIVE:
    case VBTS_MARK_CTX_DEPART:
        fprintf(v->base.out, "# %u %s cr3=0x%llx\n", ev->cpu, vbts_marker_name(ev->qualifier),
                (unsigned long long)ev->rec.to);
        break;
    case VBTS_MARK_STOP:
        reason = vbts_stop_reason_name((unsigned)ev->aux);
        if (reason)
            fprintf(v->base.out, "# %u stop %s\n", ev->cpu, reason);
        else
            fprintf(v->base.out, "# %u stop reason-%u\n", ev->cpu, (unsigned)ev->aux);
        break;
    default:
        break;
    }
}

static void *calls_new(FILE *out, const struct vbts_symtab *symtab, const char *symfile, char *err,
                       size_t errlen)
{
    (void)symfile;
    static const struct stack_ops ops = { .enter = on_enter, .resume = on_enter, .marker = on_marker };
    return view_stacked_new(sizeof(struct calls), out, symtab, &ops, err, errlen);
}

/* A jump still waiting for its next record is a tail call: its line too. */
static int calls_finish(void *v)
{
    stack_finish(((struct view_stacked *)v)->stack);
    return 0;
}

const struct view_type calls_view = { "calls", true, calls_new, view_stacked_event, calls_finish,
                                      view_stacked_free };
