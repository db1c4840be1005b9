/* SPDX-License-Identifier: MIT */
#include "trace/stores.h"

static uint64_t page_bits(uint64_t gpa, uint64_t len)
{
    uint64_t first = gpa >> 12, last = (gpa + len - 1) >> 12;
    if (len == 0 || gpa + len < gpa || last - first >= 63)
        return ~0ull;
    uint64_t m = 0;
    for (uint64_t p = first; p <= last; p++)
        m |= 1ull << (p % 64);
    return m;
}

/* A range since s->keep in the page of [gpa, gpa + len) that overlaps or touches it takes it in. */
static bool widen(struct stores *s, uint64_t gpa, uint64_t len)
{
    for (unsigned i = s->keep; i < s->n; i++) {
        uint64_t a = s->st[i].gpa, b = a + s->st[i].len;
        if ((a >> 12) != (gpa >> 12) || gpa > b || a > gpa + len)
            continue;
        uint64_t lo = a < gpa ? a : gpa, hi = b > gpa + len ? b : gpa + len;
        s->st[i].gpa = lo;
        s->st[i].len = hi - lo;
        s->pages |= page_bits(lo, hi - lo);
        return true;
    }
    return false;
}

bool stores_add(struct stores *s, uint64_t gpa, uint64_t len)
{
    if (s->n == STORES_MAX)
        return false;
    s->st[s->n].gpa = gpa;
    s->st[s->n++].len = len;
    s->pages |= page_bits(gpa, len);
    return true;
}

bool stores_note(struct stores *s, const struct cpu_view *v, uint64_t lo, uint64_t hi)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    if (hi < lo || hi - lo > 2 * 4096ull)
        return false;
    for (uint64_t at = lo; at < hi;) {
        uint64_t end = (at | 0xfff) + 1, gpa;
        if (end > hi || end == 0)
            end = hi;
        /* Not mapped: the store faults there, on a watched handler, and writes nothing. */
        if (gmem_translate(v->mem, &pg, at, &gpa) == GMEM_OK && !widen(s, gpa, end - at) &&
            !stores_add(s, gpa, end - at))
            return false;
        at = end;
    }
    return true;
}

static bool overlaps(const struct stores *s, unsigned from, unsigned to, uint64_t gpa, uint64_t len)
{
    if (!(s->pages & page_bits(gpa, len)))
        return false;
    for (unsigned i = from; i < to; i++)
        if (gpa < s->st[i].gpa + s->st[i].len && s->st[i].gpa < gpa + len)
            return true;
    return false;
}

static bool hit(const struct stores *s, unsigned from, unsigned to, const struct cpu_view *v, uint64_t lin,
                uint64_t len, bool bytes)
{
    if (to > s->n)
        to = s->n;
    if (from >= to)
        return false;
    if (lin + len < lin)
        return true;
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    for (uint64_t at = lin; at < lin + len;) {
        uint64_t end = (at | 0xfff) + 1, gpa;
        struct gmem_access a;
        if (end > lin + len || end == 0)
            end = lin + len;
        if (gmem_walk(v->mem, &pg, at, &gpa, &a) != GMEM_OK || (bytes && overlaps(s, from, to, gpa, end - at)))
            return true;
        for (unsigned i = 0; i < a.nentry; i++)
            if (overlaps(s, from, to, a.entry[i], 8))
                return true;
        at = end;
    }
    return false;
}

bool stores_hit(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len)
{
    return hit(s, from, s->n, v, lin, len, true);
}

bool stores_hit_between(const struct stores *s, unsigned from, unsigned to, const struct cpu_view *v, uint64_t lin,
                        uint64_t len)
{
    return hit(s, from, to, v, lin, len, true);
}

bool stores_remap(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len)
{
    return hit(s, from, s->n, v, lin, len, false);
}
