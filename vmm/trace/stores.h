/* SPDX-License-Identifier: MIT */
/*
 * What a stretch's stores may write, as guest-physical ranges, in the
 * order its instructions make them: code it decoded, a paging entry it
 * read, or a slot it read a target from, after one of them, was read
 * before it changed.
 * prefix: stores
 */
#ifndef VBTS_TRACE_STORES_H
#define VBTS_TRACE_STORES_H

#include <stdbool.h>
#include <stdint.h>

#include "x86/cpu.h"

/* Ranges noted: a stretch with more ends before its next store. */
#define STORES_MAX 16

struct stores {
    unsigned n;
    struct { uint64_t gpa, len; } st[STORES_MAX];
    /*
     * A store that overlaps or touches a range from this one on, in its
     * page, widens it (a loop's stores): ranges before it are each
     * someone's "stores from here on" (a call's, the host's), and stay.
     */
    unsigned keep;
    uint64_t pages;     /* a bit per page a range lies in, by page number mod 64: most checks end here */
};

/* Note the guest-physical range [gpa, gpa + len) as written; false if there is no room. */
bool stores_add(struct stores *s, uint64_t gpa, uint64_t len);

/*
 * Note the linear bytes [lo, hi) as written, through v's paging (bytes
 * not mapped are not written: the store faults).  False if they are too
 * many to note.  Since `keep`, a range it touches grows instead.
 */
bool stores_note(struct stores *s, const struct cpu_view *v, uint64_t lo, uint64_t hi);

/*
 * May a store noted from the `from`-th on have written any byte of the
 * linear range [lin, lin + len), or a paging entry that maps it?  True
 * also where it is not mapped now.
 */
bool stores_hit(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len);

/* The same for the stores noted from the `from`-th to before the `to`-th. */
bool stores_hit_between(const struct stores *s, unsigned from, unsigned to, const struct cpu_view *v, uint64_t lin,
                        uint64_t len);

/* The same for the paging entries alone: may [lin, lin + len) map elsewhere, or not at all, now? */
bool stores_remap(const struct stores *s, unsigned from, const struct cpu_view *v, uint64_t lin, uint64_t len);

#endif
