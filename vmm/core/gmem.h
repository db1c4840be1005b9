/* SPDX-License-Identifier: MIT */
/*
 * Guest physical memory.  Every guest-supplied address goes through
 * gmem_ptr(), which refuses any range that is not wholly inside RAM; callers
 * never index host memory with an unchecked guest value.
 */
#ifndef VBTS_CORE_GMEM_H
#define VBTS_CORE_GMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RAM above this is moved to 4 GiB, leaving the usual PCI hole below 4 GiB. */
#define GMEM_LOW_LIMIT   0xc0000000ull
#define GMEM_HIGH_BASE   0x100000000ull

struct gmem {
    uint8_t *host;      /* one host mapping holding low and high RAM back to back */
    uint64_t size;      /* bytes of RAM */
};

int gmem_init(struct gmem *m, uint64_t size);
void gmem_fini(struct gmem *m);

/* Bytes of RAM below GMEM_LOW_LIMIT and at/above GMEM_HIGH_BASE. */
static inline uint64_t gmem_low_size(const struct gmem *m)
{
    return m->size < GMEM_LOW_LIMIT ? m->size : GMEM_LOW_LIMIT;
}

static inline uint64_t gmem_high_size(const struct gmem *m)
{
    return m->size - gmem_low_size(m);
}

/* Host pointer for [gpa, gpa+len) or NULL if any byte is not RAM. */
void *gmem_ptr(const struct gmem *m, uint64_t gpa, uint64_t len);

/* True if [gpa, gpa+len) is RAM. */
static inline bool gmem_contains(const struct gmem *m, uint64_t gpa, uint64_t len)
{
    return gmem_ptr(m, gpa, len) != NULL || len == 0;
}

/*
 * The guest's view of linear memory: the register state that selects the
 * paging mode.  Filled from kvm_sregs by the caller so that this file does
 * not depend on KVM headers.
 */
struct gmem_paging {
    uint64_t cr0, cr3, cr4, efer;
};

enum gmem_xlate {
    GMEM_OK = 0,
    GMEM_NOT_PRESENT,   /* a paging-structure entry is not present */
    GMEM_NOT_RAM,       /* a table or the final page is outside RAM */
    GMEM_NON_CANONICAL, /* 4-level paging, address not canonical */
};

/* What the mapping of a linear address allows, every level's entry together. */
struct gmem_access {
    bool write;         /* R/W set at every level */
    bool user;          /* U/S set at every level */
    bool exec;          /* no level has XD (with EFER.NXE) */
    unsigned nentry;    /* the paging entries the walk read (guest-physical; 8 bytes or, */
    uint64_t entry[5];  /* without PAE, 4): a store there may remap the address */
};

/* Linear to guest-physical with what the mapping allows (all of it without paging). */
enum gmem_xlate gmem_walk(const struct gmem *m, const struct gmem_paging *pg, uint64_t lin,
                          uint64_t *gpa, struct gmem_access *a);

/*
 * Between these, this thread reads guest memory and writes none, nor
 * does anyone else: walks (gmem_walk, gmem_translate, the linear reads)
 * are remembered by page.  The branch engine's planner.
 */
void gmem_memo_begin(void);
void gmem_memo_end(void);
/* Between them, a number no other such span of this thread has had; else 0. */
unsigned gmem_memo_epoch(void);

/*
 * The walk the CPU makes for the guest's own access, which the caller has
 * found allowed: it sets the accessed bit in every entry used and, for a
 * write, the dirty bit in the last.  The monitor's own reads use the walks
 * above, which change nothing.
 */
enum gmem_xlate gmem_walk_mark(const struct gmem *m, const struct gmem_paging *pg, uint64_t lin,
                               bool write, uint64_t *gpa);

/* Linear to guest-physical, walking the guest's own page tables. */
enum gmem_xlate gmem_translate(const struct gmem *m, const struct gmem_paging *pg,
                               uint64_t lin, uint64_t *gpa);

/* Copy len bytes at a linear address, page by page; GMEM_OK or why not. */
enum gmem_xlate gmem_read_linear(const struct gmem *m, const struct gmem_paging *pg,
                                 uint64_t lin, void *buf, size_t len);

/*
 * Copy len bytes to a linear address.  Pages before a failing one are
 * written, as a CPU's stores would be; *fault is the failing address.
 */
enum gmem_xlate gmem_write_linear(const struct gmem *m, const struct gmem_paging *pg,
                                  uint64_t lin, const void *buf, size_t len, uint64_t *fault);

#endif
