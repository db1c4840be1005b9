/* SPDX-License-Identifier: MIT */
#include "core/gmem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"

int gmem_init(struct gmem *m, uint64_t size)
{
    /* NORESERVE: a large --memory costs only what the guest touches. */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return error_fail_errno("cannot allocate %llu bytes of guest memory",
                               (unsigned long long)size);
    m->host = p;
    m->size = size;
    return 0;
}

void gmem_fini(struct gmem *m)
{
    if (m->host)
        munmap(m->host, m->size);
    m->host = NULL;
}

void *gmem_ptr(const struct gmem *m, uint64_t gpa, uint64_t len)
{
    uint64_t low = gmem_low_size(m);

    if (len == 0)
        return NULL;
    if (gpa < low)
        return (len <= low - gpa) ? m->host + gpa : NULL;
    if (gpa < GMEM_HIGH_BASE)
        return NULL;
    uint64_t off = gpa - GMEM_HIGH_BASE;
    uint64_t high = gmem_high_size(m);
    if (off >= high || len > high - off)
        return NULL;
    return m->host + low + off;
}

#define CR0_PG     (1ull << 31)
#define CR4_PSE    (1ull << 4)
#define CR4_PAE    (1ull << 5)
#define CR4_LA57   (1ull << 12)
#define EFER_LMA   (1ull << 10)
#define EFER_NXE   (1ull << 11)
#define PTE_P      1ull
#define PTE_RW     (1ull << 1)
#define PTE_US     (1ull << 2)
#define PTE_A      (1ull << 5)
#define PTE_D      (1ull << 6)
#define PTE_PS     (1ull << 7)
#define PTE_XD     (1ull << 63)
#define ADDR_MASK  0x000ffffffffff000ull

/* A level's entry narrows what the mapping allows. */
static void narrow(struct gmem_access *a, uint64_t e, bool nx)
{
    a->write &= (e & PTE_RW) != 0;
    a->user &= (e & PTE_US) != 0;
    if (nx && (e & PTE_XD))
        a->exec = false;
}

/* What a walk for the guest's own access sets in the entries: nothing, A, or A and D at the leaf. */
enum mark { MARK_NONE, MARK_A, MARK_AD };

static enum gmem_xlate read_entry(const struct gmem *m, uint64_t gpa, size_t size, uint64_t *e)
{
    const void *p = gmem_ptr(m, gpa, size);
    if (!p)
        return GMEM_NOT_RAM;
    if (size == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        *e = v;
    } else {
        memcpy(e, p, 8);
    }
    return (*e & PTE_P) ? GMEM_OK : GMEM_NOT_PRESENT;
}

/* As the CPU does, atomically: other vCPUs walk and change the same tables. */
static void mark_entry(const struct gmem *m, uint64_t gpa, size_t size, enum mark mk, bool leaf)
{
    if (mk == MARK_NONE)
        return;
    uint64_t bits = PTE_A | (mk == MARK_AD && leaf ? PTE_D : 0);
    void *p = gmem_ptr(m, gpa, size);
    if (!p)
        return;
    if (size == 4)
        __atomic_fetch_or((uint32_t *)p, (uint32_t)bits, __ATOMIC_SEQ_CST);
    else
        __atomic_fetch_or((uint64_t *)p, bits, __ATOMIC_SEQ_CST);
}

/* Walk 64-bit-entry tables from `table`, `levels` deep, 9 index bits each. */
static void note_entry(struct gmem_access *a, uint64_t at)
{
    if (a->nentry < sizeof(a->entry) / sizeof(a->entry[0]))
        a->entry[a->nentry++] = at;
}

static enum gmem_xlate walk64(const struct gmem *m, uint64_t table, int levels,
                              uint64_t lin, uint64_t *gpa, struct gmem_access *a, bool nx,
                              enum mark mk)
{
    for (int level = levels; level >= 1; level--) {
        int shift = 12 + 9 * (level - 1);
        uint64_t e, at = table + ((lin >> shift) & 0x1ff) * 8;
        note_entry(a, at);
        enum gmem_xlate r = read_entry(m, at, 8, &e);
        if (r != GMEM_OK)
            return r;
        narrow(a, e, nx);
        /* Large pages exist at the 1 GiB and 2 MiB levels. */
        bool large = level <= 3 && level >= 2 && (e & PTE_PS);
        mark_entry(m, at, 8, mk, large || level == 1);
        if (large) {
            uint64_t page_mask = (1ull << shift) - 1;
            *gpa = ((e & ADDR_MASK) & ~page_mask) | (lin & page_mask);
            return GMEM_OK;
        }
        table = e & ADDR_MASK;
    }
    *gpa = table | (lin & 0xfff);
    return GMEM_OK;
}

static enum gmem_xlate walk_now(const struct gmem *m, const struct gmem_paging *pg, uint64_t lin,
                                uint64_t *gpa, struct gmem_access *a, enum mark mk)
{
    *a = (struct gmem_access){ .write = true, .user = true, .exec = true };
    if (!(pg->cr0 & CR0_PG)) {
        *gpa = (pg->efer & EFER_LMA) ? lin : (uint32_t)lin;
        return GMEM_OK;
    }
    bool nx = pg->efer & EFER_NXE;
    if (pg->efer & EFER_LMA) {
        int bits = (pg->cr4 & CR4_LA57) ? 57 : 48;
        int64_t s = (int64_t)(lin << (64 - bits)) >> (64 - bits);
        if ((uint64_t)s != lin)
            return GMEM_NON_CANONICAL;
        return walk64(m, pg->cr3 & ADDR_MASK, (pg->cr4 & CR4_LA57) ? 5 : 4, lin, gpa, a, nx, mk);
    }
    lin = (uint32_t)lin;
    if (pg->cr4 & CR4_PAE) {
        /* PAE's PDPTEs carry no access bits (they are reserved there). */
        uint64_t pdpte;
        note_entry(a, (pg->cr3 & 0xffffffe0u) + (lin >> 30) * 8);
        enum gmem_xlate r = read_entry(m, (pg->cr3 & 0xffffffe0u) + (lin >> 30) * 8, 8, &pdpte);
        if (r != GMEM_OK)
            return r;
        return walk64(m, pdpte & ADDR_MASK, 2, lin, gpa, a, nx, mk);
    }
    uint64_t pde, pte, at = (pg->cr3 & 0xfffff000u) + (lin >> 22) * 4;
    note_entry(a, at);
    enum gmem_xlate r = read_entry(m, at, 4, &pde);
    if (r != GMEM_OK)
        return r;
    narrow(a, pde, false);
    bool large = (pg->cr4 & CR4_PSE) && (pde & PTE_PS);
    mark_entry(m, at, 4, mk, large);
    if (large) {
        /* PSE-36: PDE bits 13..20 are physical address bits 32..39. */
        *gpa = (pde & 0xffc00000u) | ((pde >> 13) & 0xffull) << 32 | (lin & 0x3fffff);
        return GMEM_OK;
    }
    at = (pde & 0xfffff000u) + ((lin >> 12) & 0x3ff) * 4;
    note_entry(a, at);
    r = read_entry(m, at, 4, &pte);
    if (r != GMEM_OK)
        return r;
    narrow(a, pte, false);
    mark_entry(m, at, 4, mk, true);
    *gpa = (pte & 0xfffff000u) | (lin & 0xfff);
    return GMEM_OK;
}

/*
 * Walks remembered while this thread's caller reads guest memory and
 * writes none (gmem_memo_begin): the branch engine's planner walks the
 * same few pages for each instruction it plans.
 */
#define MEMO_SIZE 32
static __thread struct memo {
    unsigned epoch;
    const struct gmem *m;
    struct gmem_paging pg;
    uint64_t page, gpa;         /* the page's linear and guest-physical addresses */
    enum gmem_xlate r;
    struct gmem_access a;
} memo[MEMO_SIZE];
static __thread unsigned memo_epoch, memo_last;    /* memo_epoch 0: not remembering */

void gmem_memo_begin(void)
{
    if (++memo_last == 0) {
        memset(memo, 0, sizeof(memo));
        memo_last = 1;
    }
    memo_epoch = memo_last;
}

void gmem_memo_end(void)
{
    memo_epoch = 0;
}

unsigned gmem_memo_epoch(void)
{
    return memo_epoch;
}

static enum gmem_xlate walk(const struct gmem *m, const struct gmem_paging *pg, uint64_t lin,
                            uint64_t *gpa, struct gmem_access *a, enum mark mk)
{
    if (mk != MARK_NONE || !memo_epoch)
        return walk_now(m, pg, lin, gpa, a, mk);
    uint64_t page = lin & ~0xfffull;
    struct memo *e = &memo[(page >> 12) % MEMO_SIZE];
    if (e->epoch != memo_epoch || e->page != page || e->m != m || e->pg.cr3 != pg->cr3 || e->pg.cr0 != pg->cr0 ||
        e->pg.cr4 != pg->cr4 || e->pg.efer != pg->efer) {
        *e = (struct memo){ .epoch = memo_epoch, .m = m, .pg = *pg, .page = page };
        e->r = walk_now(m, pg, page, &e->gpa, &e->a, mk);
    }
    *a = e->a;
    *gpa = e->gpa | (lin & 0xfff);
    return e->r;
}

enum gmem_xlate gmem_walk(const struct gmem *m, const struct gmem_paging *pg, uint64_t lin,
                          uint64_t *gpa, struct gmem_access *a)
{
    return walk(m, pg, lin, gpa, a, MARK_NONE);
}

enum gmem_xlate gmem_walk_mark(const struct gmem *m, const struct gmem_paging *pg, uint64_t lin,
                               bool write, uint64_t *gpa)
{
    struct gmem_access a;
    return walk(m, pg, lin, gpa, &a, write ? MARK_AD : MARK_A);
}

enum gmem_xlate gmem_translate(const struct gmem *m, const struct gmem_paging *pg,
                               uint64_t lin, uint64_t *gpa)
{
    struct gmem_access a;
    return gmem_walk(m, pg, lin, gpa, &a);
}

/* Both directions walk page by page: contiguous linear is not contiguous RAM. */
static enum gmem_xlate copy_linear(const struct gmem *m, const struct gmem_paging *pg,
                                   uint64_t lin, uint8_t *buf, size_t len, bool write,
                                   uint64_t *fault)
{
    while (len) {
        uint64_t gpa;
        enum gmem_xlate r = gmem_translate(m, pg, lin, &gpa);
        if (fault)
            *fault = lin;
        if (r != GMEM_OK)
            return r;
        size_t n = 4096 - (lin & 0xfff);
        if (n > len)
            n = len;
        void *p = gmem_ptr(m, gpa, n);
        if (!p)
            return GMEM_NOT_RAM;
        if (write)
            memcpy(p, buf, n);
        else
            memcpy(buf, p, n);
        buf += n;
        lin += n;
        len -= n;
    }
    return GMEM_OK;
}

enum gmem_xlate gmem_read_linear(const struct gmem *m, const struct gmem_paging *pg,
                                 uint64_t lin, void *buf, size_t len)
{
    return copy_linear(m, pg, lin, buf, len, false, NULL);
}

enum gmem_xlate gmem_write_linear(const struct gmem *m, const struct gmem_paging *pg,
                                  uint64_t lin, const void *buf, size_t len, uint64_t *fault)
{
    return copy_linear(m, pg, lin, (uint8_t *)buf, len, true, fault);
}
