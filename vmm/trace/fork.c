/* SPDX-License-Identifier: MIT */
#include "trace/fork.h"

#include <stdlib.h>
#include <string.h>

#include "vbts/format.h"

/* A path of a fork being planned: its stretch (everything on the way to its leaf) and where its own part starts. */
struct way {
    struct stretch s;
    unsigned from, rec_from;        /* its own instructions and records in s */
    struct stretch *fork;           /* where it forks again (its branch added), or NULL */
    struct way *sub[2];             /* ...its two ways on */
};

/* dst watches the handlers, and knows the stores, of every way planned up to src. */
static void inherit(struct stretch *dst, const struct stretch *src)
{
    dst->nh = src->nh;
    memcpy(dst->handler, src->handler, sizeof(dst->handler));
    memcpy(dst->vectors, src->vectors, sizeof(dst->vectors));
    dst->st = src->st;
}

/* The two ways on from the conditional branch that ends `at`: false (nothing changed) if they cannot be told apart. */
static bool split(const struct cpu_view *v, int max, const uint64_t *stop, unsigned room, struct stretch *t,
                  const struct stretch *at, struct way *w[2], const struct stretch *const *others, unsigned nothers)
{
    struct branch_pred p;
    const char *why;
    uint64_t j = at->end, next;
    if (at->why != STRETCH_END_JCC || at->nh > max || room < 3 ||
        branch_predict_at(v, j, &p, &why) < 0 || p.kind != VBTS_KIND_JCC || !p.target_known)
        return false;
    /* A target the CPU refuses (#GP at the branch) is left to it. */
    if (!cpu_ip_allowed(v->sregs, p.target - at->cs_base))
        return false;
    stretch_copy(t, at);
    t->loops = false;       /* no instruction on two ways, nor twice on one: an exception's frame names it */
    t->fork_at = j;
    t->navoid = nothers;
    for (unsigned i = 0; i < nothers; i++)
        t->avoid[i] = others[i];
    if (!stretch_extend(v, j, max, stop, t, &next))
        return false;
    unsigned base = t->nins, share = (room - 1) / 2;
    /* Taken: the branch's record first. */
    t->rec[t->nrec++] = (struct stretch_rec){ j, p.target, VBTS_KIND_JCC };
    if (!stretch_path(v, max, stop, base, base + share, p.target, t, &w[0]->s))
        return false;
    t->nrec--;
    /* The other way avoids this one, and sees its handlers and stores. */
    t->avoid[t->navoid++] = &w[0]->s;
    inherit(t, &w[0]->s);
    if (!stretch_path(v, max, stop, base, base + share, next, t, &w[1]->s) || w[0]->s.end == w[1]->s.end)
        return false;
    w[0]->from = w[1]->from = base;
    w[0]->rec_from = w[1]->rec_from = t->nrec;     /* the taken way's: the branch's record first */
    w[0]->fork = w[1]->fork = NULL;
    return true;
}

/* Append s's instructions from `from` and records from `rec_from` to f: the segment they make. */
static void append(struct stretch *f, const struct stretch *s, unsigned from, unsigned rec_from, unsigned seg[4])
{
    unsigned n = s->nins - from, nr = s->nrec - rec_from, base = f->nrec;
    seg[0] = f->nins;
    seg[2] = f->nrec;
    if (f->nins + n > f->cap || f->nrec + nr > f->cap)
        abort();        /* the monitor's bug: the ways share the room they were given */
    for (unsigned i = 0; i < n; i++) {
        stretch_append(f, s->ins[from + i]);
        f->recs_before[f->nins - 1] = (uint16_t)(s->recs_before[from + i] - rec_from + base);
    }
    memcpy(&f->rec[f->nrec], &s->rec[rec_from], nr * sizeof(f->rec[0]));
    f->nrec += nr;
    seg[1] = f->nins;
    seg[3] = f->nrec;
}

static void add_leaf(struct stretch *f, const struct stretch *s, unsigned nseg, const unsigned seg[2][4])
{
    struct stretch_leaf *l = &f->leaf[f->nleaf++];
    *l = (struct stretch_leaf){ .end = s->end, .nseg = nseg, .sp_exact = s->sp_exact, .sp_delta = s->sp_delta,
                                .why = s->why };
    stretch_leaf_regs(l, s);
    for (unsigned k = 0; k < nseg; k++) {
        l->seg[k].first = seg[k][0];
        l->seg[k].last = seg[k][1];
        l->seg[k].rec_first = seg[k][2];
        l->seg[k].rec_last = seg[k][3];
    }
}

/* The tree: the common part and its branch, then each way's own part (and branch), then its ways on. */
static void assemble(struct stretch *f, const struct stretch *out, struct way *const top[2],
                     const struct stretch *latest)
{
    stretch_copy(f, out);
    stretch_append(f, out->end);
    f->nprefix = f->nins;
    f->nprefix_rec = f->nrec;
    f->nleaf = 0;
    for (unsigned k = 0; k < 2; k++) {
        const struct way *w = top[k];
        unsigned seg[2][4];
        if (!w->fork) {
            append(f, &w->s, w->from, w->rec_from, seg[0]);
            add_leaf(f, &w->s, 1, seg);
            continue;
        }
        unsigned head[4];
        append(f, w->fork, w->from, w->rec_from, head);
        for (unsigned i = 0; i < 2; i++) {
            memcpy(seg[0], head, sizeof(head));
            append(f, &w->sub[i]->s, w->sub[i]->from, w->sub[i]->rec_from, seg[1]);
            add_leaf(f, &w->sub[i]->s, 2, seg);
        }
    }
    inherit(f, latest);
}

/* No handler on any way, nor at a leaf (a breakpoint there fires on arrival); leaves apart; DR0-3 enough. */
static bool apart(const struct stretch *f, int max)
{
    for (unsigned l = 0; l < f->nleaf; l++) {
        if (stretch_index(f, f->leaf[l].end) >= 0)
            return false;
        for (unsigned m = 0; m < l; m++)
            if (f->leaf[m].end == f->leaf[l].end)
                return false;
        for (int i = 0; i < f->nh; i++)
            if (f->handler[i] == f->leaf[l].end)
                return false;
    }
    for (int i = 0; i < f->nh; i++)
        if (stretch_index(f, f->handler[i]) >= 0)
            return false;
    return f->nh + (int)f->nleaf <= max + 1 && f->nins <= STRETCH_MAX_INSNS;
}

/*
 * At the conditional branch that ends it, the stretch may go on along
 * both ways, each to a leaf of its own, and each of those again where
 * breakpoint slots are left: the breakpoint that fires names the way the
 * CPU went.  That holds while no leaf, and no handler, lies on the way to
 * another (nor on the common part), and no instruction is on two ways (an
 * exception's frame names one).  Each way gets half of what instructions
 * are left to it, and the handler slots its leaves leave.
 */
void fork_plan(const struct cpu_view *v, int max, const uint64_t *stop, struct stretch *out)
{
    static __thread struct stretch t, deep[2], f;
    static __thread struct way ways[6];
    /* Each holds what a stretch without loops may have; the tree, its ways' parts. */
    static __thread uint64_t mem[9][STRETCH_MEM(STRETCH_MAX_INSNS) / 8 + 1], tree[STRETCH_MEM(2 * STRETCH_MAX_INSNS) / 8 + 1];
    struct way *top[2] = { &ways[0], &ways[1] };
    if (out->nins + 3 > STRETCH_MAX_INSNS)
        return;     /* no room left for its ways */
    if (!f.cap) {
        stretch_attach(&t, mem[0], STRETCH_MAX_INSNS);
        stretch_attach(&deep[0], mem[1], STRETCH_MAX_INSNS);
        stretch_attach(&deep[1], mem[2], STRETCH_MAX_INSNS);
        for (unsigned i = 0; i < 6; i++)
            stretch_attach(&ways[i].s, mem[3 + i], STRETCH_MAX_INSNS);
        stretch_attach(&f, tree, 2 * STRETCH_MAX_INSNS);
    }
    if (!split(v, max - 1, stop, STRETCH_MAX_INSNS - out->nins, &t, out, top, NULL, 0))
        return;
    unsigned leaves = 2, base = top[0]->from;
    unsigned used = base + (top[0]->s.nins - base) + (top[1]->s.nins - base);
    const struct stretch *latest = &top[1]->s;     /* planned last: every handler and store so far */
    /* Two levels: each way forks again where slots and instructions are left, avoiding every other way. */
    for (unsigned k = 0; k < 2; k++) {
        struct way *sub[2] = { &ways[2 + 2 * k], &ways[3 + 2 * k] };
        const struct stretch *others[2];
        struct way *o = top[1 - k];
        unsigned n = 0;
        if (o->fork) {
            others[n++] = &o->sub[0]->s;
            others[n++] = &o->sub[1]->s;
        } else {
            others[n++] = &o->s;
        }
        unsigned room = STRETCH_MAX_INSNS > used ? (STRETCH_MAX_INSNS - used) / (k ? 1 : 2) : 0;
        struct stretch *in = &top[k]->s;
        inherit(in, latest);
        if (max - (int)leaves < 0 || !split(v, max - (int)leaves, stop, room, &deep[k], in, sub, others, n))
            continue;
        top[k]->fork = &deep[k];
        top[k]->sub[0] = sub[0];
        top[k]->sub[1] = sub[1];
        used += 1 + (sub[0]->s.nins - sub[0]->from) + (sub[1]->s.nins - sub[1]->from);
        latest = &sub[1]->s;
        leaves++;
    }
    assemble(&f, out, top, latest);
    if (!apart(&f, max))
        return;
    f.end = f.leaf[0].end;
    f.sp_exact = f.leaf[0].sp_exact;
    f.sp_delta = f.leaf[0].sp_delta;
    f.why = f.leaf[0].why;
    f.fork_at = 0;
    f.navoid = 0;
    stretch_copy(out, &f);
}
