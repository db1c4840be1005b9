/* SPDX-License-Identifier: MIT */
#include "trace/loads.h"

#include <string.h>

/* The guest-physical address of [lin, lin + n) where it lies in one page: 0 where not. */
static uint64_t one_page(const struct cpu_view *v, uint64_t lin, uint64_t n)
{
    struct gmem_paging pg;
    uint64_t gpa;
    cpu_paging(v->sregs, &pg);
    if (n == 0 || n > 8 || (lin & 0xfff) + n > 0x1000 || gmem_translate(v->mem, &pg, lin, &gpa) != GMEM_OK)
        return 0;
    return gpa;
}

void loads_forget(const struct cpu_view *v, uint64_t lo, uint64_t hi, struct stretch *s)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    for (uint64_t at = lo; at < hi && s->nfwd; at = (at | 0xfff) + 1) {
        uint64_t end = (at | 0xfff) + 1 < hi ? (at | 0xfff) + 1 : hi, gpa;
        if (gmem_translate(v->mem, &pg, at, &gpa) != GMEM_OK)
            continue;
        for (unsigned i = s->nfwd; i-- > 0;)
            if (gpa < s->fwd[i].gpa + s->fwd[i].len && s->fwd[i].gpa < gpa + (end - at))
                s->fwd[i] = s->fwd[--s->nfwd];
    }
}

bool loads_forwarded(const struct cpu_view *v, uint64_t lin, unsigned n, const struct stretch *s, uint64_t *val)
{
    uint64_t gpa = one_page(v, lin, n);
    for (unsigned i = 0; gpa && i < s->nfwd; i++)
        if (s->fwd[i].gpa == gpa && s->fwd[i].len == n) {
            *val = s->fwd[i].val;
            return true;
        }
    return false;
}

void loads_walked(const struct cpu_view *v, uint64_t lin, struct stretch *s)
{
    struct gmem_paging pg;
    struct gmem_access a;
    uint64_t gpa;
    cpu_paging(v->sregs, &pg);
    if (gmem_walk(v->mem, &pg, lin, &gpa, &a) != GMEM_OK)
        a.nentry = 0;   /* the access faults: the stretch goes no further */
    for (unsigned i = 0; i < a.nentry && s->npt < STRETCH_MAX_PT; i++) {
        uint64_t page = a.entry[i] & ~0xfffull;
        unsigned k = 0;
        while (k < s->npt && s->pt[k] != page)
            k++;
        if (k == s->npt)
            s->pt[s->npt++] = page;
    }
}

bool loads_paging_entry(const struct cpu_view *v, uint64_t lin, unsigned n, const struct stretch *s)
{
    struct gmem_paging pg;
    cpu_paging(v->sregs, &pg);
    if (s->npt == STRETCH_MAX_PT)
        return true;
    for (uint64_t at = lin; at - lin < n; at = (at | 0xfff) + 1) {
        uint64_t gpa;
        if (gmem_translate(v->mem, &pg, at, &gpa) != GMEM_OK)
            return true;
        for (unsigned k = 0; k < s->npt; k++)
            if (s->pt[k] == (gpa & ~0xfffull))
                return true;
    }
    return false;
}

void loads_remember(const struct cpu_view *v, uint64_t lin, unsigned n, uint64_t val, struct stretch *s)
{
    uint64_t gpa = one_page(v, lin, n);
    if (!gpa)
        return;
    if (s->nfwd == STRETCH_MAX_FWD)
        memmove(&s->fwd[0], &s->fwd[1], sizeof(s->fwd[0]) * --s->nfwd);
    s->fwd[s->nfwd].gpa = gpa;
    s->fwd[s->nfwd].len = n;
    s->fwd[s->nfwd++].val = n < 8 ? val & ((1ull << (8 * n)) - 1) : val;
}
