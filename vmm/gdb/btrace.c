/* SPDX-License-Identifier: MIT */
#include "gdb/btrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int btrace_enable(struct btrace *b, uint64_t size, uint64_t pc)
{
    uint64_t cap = size / BTRACE_RECORD_SIZE;
    if (cap == 0)
        cap = 1;
    struct btrace_rec *ring = calloc(cap, sizeof(*ring));
    if (!ring)
        return -1;
    btrace_disable(b);
    *b = (struct btrace){ .on = true, .size = size, .cap = cap, .ring = ring, .begin_pc = pc };
    return 0;
}

void btrace_disable(struct btrace *b)
{
    free(b->ring);
    *b = (struct btrace){ 0 };
}

void btrace_add(struct btrace *b, uint64_t from, uint64_t to)
{
    if (!b->on)
        return;
    b->ring[b->head % b->cap] = (struct btrace_rec){ from, to };
    b->head++;
}

struct out {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void emit(struct out *o, const char *fmt, unsigned long long a, unsigned long long b)
{
    if (o->failed)
        return;
    if (o->cap - o->len < 128) {
        size_t cap = o->cap * 2 + 4096;
        char *n = realloc(o->buf, cap);
        if (!n) {
            o->failed = true;
            return;
        }
        o->buf = n;
        o->cap = cap;
    }
    o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, fmt, a, b);
}

static char *finish(struct out *o, size_t *len)
{
    if (o->failed) {
        free(o->buf);
        return NULL;
    }
    *len = o->len;
    return o->buf;
}

char *btrace_xml(struct btrace *b, enum btrace_read how, uint64_t pc, size_t *len,
                 const char **err)
{
    uint64_t first = b->head > b->cap ? b->head - b->cap : 0;   /* oldest record held */
    uint64_t from = first;
    bool whole = b->head <= b->cap;     /* nothing lost since recording began */
    if (how == BTRACE_READ_DELTA) {
        if (b->mark < first) {
            *err = "Overflow.";
            return NULL;
        }
        from = b->mark;
    }
    bool none = how == BTRACE_READ_NEW && b->mark == b->head;
    b->mark = b->head;
    struct out o = { 0 };
    emit(&o, "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n", 0, 0);
    if (!none) {
        /* Newest first: the current block runs from the last branch's target to pc. */
        uint64_t end = pc;
        for (uint64_t i = b->head; i > from; i--) {
            const struct btrace_rec *r = &b->ring[(i - 1) % b->cap];
            emit(&o, "<block begin=\"0x%llx\" end=\"0x%llx\"/>\n", r->to, end);
            end = r->from;
        }
        /*
         * The oldest block starts where recording began, if nothing was
         * lost.  A delta's oldest block starts where the previous read
         * ended, which gdb fills in (begin 0, as gdbserver sends it).
         */
        if (how == BTRACE_READ_DELTA)
            emit(&o, "<block begin=\"0x%llx\" end=\"0x%llx\"/>\n", 0, end);
        else if (whole)
            emit(&o, "<block begin=\"0x%llx\" end=\"0x%llx\"/>\n", b->begin_pc, end);
    }
    emit(&o, "</btrace>\n", 0, 0);
    char *x = finish(&o, len);
    if (!x)
        *err = "out of memory.";
    return x;
}

char *btrace_conf_xml(const struct btrace *b, size_t *len)
{
    struct out o = { 0 };
    emit(&o, "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n",
         0, 0);
    if (b->on)
        emit(&o, "<bts size=\"0x%llx\"/>\n", b->size, 0);
    emit(&o, "</btrace-conf>\n", 0, 0);
    return finish(&o, len);
}
