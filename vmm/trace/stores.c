/* SPDX-License-Identifier: MIT */
#include "trace/stores.h"

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
        if (gmem_translate(v->mem, &pg, at, &gpa) == GMEM_OK) {
            if (s->n == STORES_MAX)
                return false;
            s->st[s->n].gpa = gpa;
            s->st[s->n++].len = end - at;
        }
        at = end;
    }
    return true;
}

static bool overlaps(const struct stores *s, unsigned from, uint64_t gpa, uint64_t len)
{
    for (unsigned i = from; i < s->n; i++)
        if (gpa < s->st[i].gpa + s->st[i].len && s->st[i].gpa < gpa + len)
            return true;
    return false;
}

static bool hit(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len,
                bool bytes)
{
    if (from >= s->n)
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
        if (gmem_walk(v->mem, &pg, at, &gpa, &a) != GMEM_OK || (bytes && overlaps(s, from, gpa, end - at)))
            return true;
        for (unsigned i = 0; i < a.nentry; i++)
            if (overlaps(s, from, a.entry[i], 8))
                return true;
        at = end;
    }
    return false;
}

bool stores_hit(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len)
{
    return hit(s, from, v, lin, len, true);
}

bool stores_remap(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len)
{
    return hit(s, from, v, lin, len, false);
}
