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
#define PTE_P      1ull
#define PTE_PS     (1ull << 7)
#define ADDR_MASK  0x000ffffffffff000ull

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

/* Walk 64-bit-entry tables from `table`, `levels` deep, 9 index bits each. */
static enum gmem_xlate walk64(const struct gmem *m, uint64_t table, int levels,
                              uint64_t lin, uint64_t *gpa)
{
    for (int level = levels; level >= 1; level--) {
        int shift = 12 + 9 * (level - 1);
        uint64_t e;
        enum gmem_xlate r = read_entry(m, table + ((lin >> shift) & 0x1ff) * 8, 8, &e);
        if (r != GMEM_OK)
            return r;
        /* Large pages exist at the 1 GiB and 2 MiB levels. */
        if (level <= 3 && level >= 2 && (e & PTE_PS)) {
            uint64_t page_mask = (1ull << shift) - 1;
            *gpa = ((e & ADDR_MASK) & ~page_mask) | (lin & page_mask);
            return GMEM_OK;
        }
        table = e & ADDR_MASK;
    }
    *gpa = table | (lin & 0xfff);
    return GMEM_OK;
}

enum gmem_xlate gmem_translate(const struct gmem *m, const struct gmem_paging *pg,
                               uint64_t lin, uint64_t *gpa)
{
    if (!(pg->cr0 & CR0_PG)) {
        *gpa = (pg->efer & EFER_LMA) ? lin : (uint32_t)lin;
        return GMEM_OK;
    }
    if (pg->efer & EFER_LMA) {
        int bits = (pg->cr4 & CR4_LA57) ? 57 : 48;
        int64_t s = (int64_t)(lin << (64 - bits)) >> (64 - bits);
        if ((uint64_t)s != lin)
            return GMEM_NON_CANONICAL;
        return walk64(m, pg->cr3 & ADDR_MASK, (pg->cr4 & CR4_LA57) ? 5 : 4, lin, gpa);
    }
    lin = (uint32_t)lin;
    if (pg->cr4 & CR4_PAE) {
        uint64_t pdpte;
        enum gmem_xlate r = read_entry(m, (pg->cr3 & 0xffffffe0u) + (lin >> 30) * 8, 8, &pdpte);
        if (r != GMEM_OK)
            return r;
        return walk64(m, pdpte & ADDR_MASK, 2, lin, gpa);
    }
    uint64_t pde, pte;
    enum gmem_xlate r = read_entry(m, (pg->cr3 & 0xfffff000u) + (lin >> 22) * 4, 4, &pde);
    if (r != GMEM_OK)
        return r;
    if ((pg->cr4 & CR4_PSE) && (pde & PTE_PS)) {
        /* PSE-36: PDE bits 13..20 are physical address bits 32..39. */
        *gpa = (pde & 0xffc00000u) | ((pde >> 13) & 0xffull) << 32 | (lin & 0x3fffff);
        return GMEM_OK;
    }
    r = read_entry(m, (pde & 0xfffff000u) + ((lin >> 12) & 0x3ff) * 4, 4, &pte);
    if (r != GMEM_OK)
        return r;
    *gpa = (pte & 0xfffff000u) | (lin & 0xfff);
    return GMEM_OK;
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
