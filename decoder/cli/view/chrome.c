/* SPDX-License-Identifier: MIT */
/*
 * --format chrome: the Trace Event Format (Chrome's about:tracing,
 * Perfetto's legacy JSON importer): B and E events per vCPU (tid), nested
 * as the stack nests.  BTS records carry no time, so a vCPU's record index
 * stands in: 1 µs on the time axis is one record.  Markers are instant
 * events and carry their real times in args (ns).
 */
#include <stdlib.h>

#include "view/view.h"

struct chrome {
    struct view_stacked base;
    bool named[UINT16_MAX + 1];     /* thread_name metadata written */
    bool any;
};

static const char *const how_cat[] = {
    [STACK_ROOT] = "root",      [STACK_CALL] = "call",           [STACK_INT] = "int",
    [STACK_EXCEPTION] = "exception", [STACK_INTERRUPT] = "interrupt", [STACK_SYSCALL] = "syscall",
    [STACK_JUMP] = "jump",
};

/* The separator, and the vCPU's name before its first event. */
static void begin(struct chrome *v, unsigned cpu)
{
    fputs(v->any ? ",\n" : "\n", v->base.out);
    v->any = true;
    if (!v->named[cpu]) {
        v->named[cpu] = true;
        fprintf(v->base.out,
                "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":\"vCPU %u\"}},\n",
                cpu, cpu);
    }
}

static void on_enter(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth)
{
    (void)depth;
    struct chrome *v = ctx;
    begin(v, cpu);
    fputs("{\"name\":\"", v->base.out);
    view_put_name(v->base.out, f, NULL, true);
    fprintf(v->base.out, "\",\"cat\":\"%s\",\"ph\":\"B\",\"pid\":1,\"tid\":%u,\"ts\":%llu}", how_cat[f->how], cpu,
            (unsigned long long)seq);
}

static void on_leave(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth)
{
    (void)depth;
    (void)f;
    struct chrome *v = ctx;
    begin(v, cpu);
    fprintf(v->base.out, "{\"ph\":\"E\",\"pid\":1,\"tid\":%u,\"ts\":%llu}", cpu, (unsigned long long)seq);
}

static void on_marker(void *ctx, const struct vbts_event *ev)
{
    struct chrome *v = ctx;
    const char *name = vbts_marker_name(ev->qualifier);
    begin(v, ev->cpu);
    if (name)
        fprintf(v->base.out, "{\"name\":\"%s\"", name);
    else
        fprintf(v->base.out, "{\"name\":\"marker-%u\"", ev->qualifier);
    fprintf(v->base.out, ",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%u,\"ts\":%llu,\"args\":{", ev->cpu,
            (unsigned long long)ev->seq);
    unsigned long long to = ev->rec.to, aux = ev->aux;
    switch (ev->qualifier) {
    case VBTS_MARK_START:
        fprintf(v->base.out, "\"time_ns\":%llu", to);
        break;
    case VBTS_MARK_STOP:
        name = vbts_stop_reason_name((unsigned)aux);
        if (name)
            fprintf(v->base.out, "\"reason\":\"%s\",\"time_ns\":%llu", name, to);
        else
            fprintf(v->base.out, "\"reason\":\"reason-%llu\",\"time_ns\":%llu", aux, to);
        break;
    case VBTS_MARK_LOST:
        fprintf(v->base.out, "\"records\":%llu", to);
        break;
    case VBTS_MARK_CTX_ARRIVE:
    case VBTS_MARK_CTX_DEPART:
        fprintf(v->base.out, "\"cr3\":\"0x%llx\",\"t_ns\":%llu", to, aux);
        break;
    default:
        fprintf(v->base.out, "\"to\":\"0x%llx\",\"aux\":%llu", to, aux);
        break;
    }
    fputs("}}", v->base.out);
}

static void *chrome_new(FILE *out, const struct vbts_symtab *symtab, const char *symfile, char *err,
                        size_t errlen)
{
    (void)symfile;
    static const struct stack_ops ops = { .enter = on_enter, .leave = on_leave, .marker = on_marker };
    void *v = view_stacked_new(sizeof(struct chrome), out, symtab, &ops, err, errlen);
    if (v)
        fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"time\":\"record index (1 us = 1 record)\"},"
              "\"traceEvents\":[",
              out);
    return v;
}

static int chrome_finish(void *p)
{
    struct chrome *v = p;
    stack_finish(v->base.stack);
    fputs("\n]}\n", v->base.out);
    return 0;
}

const struct view_type chrome_view = { "chrome", true, chrome_new, view_stacked_event, chrome_finish,
                                       view_stacked_free };
