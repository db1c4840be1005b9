/* SPDX-License-Identifier: MIT */
/*
 * --format folded: "outer;...;inner COUNT" lines for flamegraph.pl, one
 * per distinct stack, where COUNT is the branches executed with that stack
 * innermost (records stand in for samples: BTS has no time).  The stacks
 * of all vCPUs are merged.  Stacks are kept as a tree of nodes, found by
 * (parent, function) in one hash table.
 */
#include <stdint.h>
#include <stdlib.h>

#include "view/slots.h"
#include "view/view.h"

struct node {
    uint32_t parent;
    uint32_t depth;
    struct stack_frame f;
    uint64_t count;
};

struct folded {
    struct view_stacked base;
    struct node *node;          /* node[0]: above every outermost frame, not printed */
    size_t n, cap;
    struct slots slots;         /* nodes by (parent, function) */
    uint32_t cur[UINT16_MAX + 1];
    int oom;
};

static size_t hash(uint32_t parent, uint64_t func)
{
    uint64_t h = (func ^ ((uint64_t)parent << 32 | parent)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29));
}

static size_t node_hash(const void *ctx, size_t i)
{
    const struct folded *v = ctx;
    return hash(v->node[i].parent, v->node[i].f.func);
}

/* The node for f under parent, made if new; 0 (the top) if out of memory. */
static uint32_t child(struct folded *v, uint32_t parent, const struct stack_frame *f)
{
    if (slots_reserve(&v->slots, 1, v->n, node_hash, v) < 0)
        goto oom;
    size_t h = slots_first(&v->slots, hash(parent, f->func));
    for (; v->slots.slot[h]; h = slots_next(&v->slots, h)) {
        struct node *x = &v->node[v->slots.slot[h] - 1];
        if (x->parent == parent && x->f.func == f->func)
            return v->slots.slot[h] - 1;
    }
    if (v->n == v->cap) {
        size_t cap = v->cap * 2;
        struct node *p = cap <= UINT32_MAX - 1 ? realloc(v->node, cap * sizeof(*p)) : NULL;
        if (!p)
            goto oom;
        v->node = p;
        v->cap = cap;
    }
    v->node[v->n] = (struct node){ parent, v->node[parent].depth + 1, *f, 0 };
    v->slots.slot[h] = (uint32_t)v->n + 1;
    return (uint32_t)v->n++;
oom:
    v->oom = 1;
    return 0;
}

static void on_enter(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth)
{
    (void)seq;
    (void)depth;
    struct folded *v = ctx;
    v->cur[cpu] = child(v, v->cur[cpu], f);
}

static void on_leave(void *ctx, unsigned cpu, uint64_t seq, const struct stack_frame *f, unsigned depth)
{
    (void)seq;
    (void)f;
    (void)depth;
    struct folded *v = ctx;
    v->cur[cpu] = v->node[v->cur[cpu]].parent;
}

static void on_branch(void *ctx, const struct vbts_event *ev, const struct stack_frame *f, unsigned depth)
{
    (void)f;
    (void)depth;
    struct folded *v = ctx;
    v->node[v->cur[ev->cpu]].count++;
}

static void folded_free(void *p)
{
    struct folded *v = p;
    if (v) {
        free(v->node);
        slots_free(&v->slots);
    }
    view_stacked_free(v);
}

static void *folded_new(FILE *out, const struct vbts_symtab *symtab, const char *symfile, char *err,
                        size_t errlen)
{
    (void)symfile;
    static const struct stack_ops ops = { .enter = on_enter, .leave = on_leave, .branch = on_branch };
    struct folded *v = view_stacked_new(sizeof(struct folded), out, symtab, &ops, err, errlen);
    if (v && !(v->node = calloc(1024, sizeof(*v->node)))) {
        folded_free(v);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (v) {
        v->cap = 1024;
        v->n = 1;
    }
    return v;
}

static int folded_event(void *p, const struct vbts_event *ev)
{
    struct folded *v = p;
    return stack_event(v->base.stack, ev) < 0 || v->oom ? -1 : 0;
}

static int folded_finish(void *p)
{
    struct folded *v = p;
    stack_finish(v->base.stack);
    const struct node **path = malloc(STACK_MAX_DEPTH * sizeof(*path));
    if (!path)
        return -1;
    for (size_t i = 1; i < v->n; i++) {
        if (!v->node[i].count)
            continue;
        size_t d = 0;
        for (uint32_t j = (uint32_t)i; j && d < STACK_MAX_DEPTH; j = v->node[j].parent)
            path[d++] = &v->node[j];
        while (d--) {
            view_put_name(v->base.out, &path[d]->f, "; ", false);
            putc(d ? ';' : ' ', v->base.out);
        }
        fprintf(v->base.out, "%llu\n", (unsigned long long)v->node[i].count);
    }
    free(path);
    return v->oom ? -1 : 0;
}

const struct view_type folded_view = { "folded", true, folded_new, folded_event, folded_finish, folded_free };
