/* SPDX-License-Identifier: MIT */
/*
 * What a stretch being planned knows of guest memory beyond what it held
 * when planning began: the values its own stores left (a load of just
 * those bytes reads them: forwarded), and the pages of the paging entries
 * its accesses walk, where the CPU sets accessed and dirty bits as it
 * runs (a load from one is not known).  State in struct stretch (fwd[],
 * pt[]); what a store may reach is trace/stores.h's.
 * prefix: loads
 */
#ifndef VBTS_TRACE_LOADS_H
#define VBTS_TRACE_LOADS_H

#include "trace/stretch.h"

/* An access of the stretch to linear lin: the paging entries that map it are walked. */
void loads_walked(const struct cpu_view *v, uint64_t lin, struct stretch *s);
/* May [lin, lin + n) hold a paging entry its accesses walk (or more of them than it keeps)? */
bool loads_paging_entry(const struct cpu_view *v, uint64_t lin, unsigned n, const struct stretch *s);

/* A store of the stretch to [lo, hi): what stores before it left there is not the last word. */
void loads_forget(const struct cpu_view *v, uint64_t lo, uint64_t hi, struct stretch *s);
/* ...and one of `val` to [lin, lin + n), n <= 8 in one page: a load of just those bytes reads it. */
void loads_remember(const struct cpu_view *v, uint64_t lin, unsigned n, uint64_t val, struct stretch *s);
/* What the stretch's own last store to exactly [lin, lin + n) left there, where it knows. */
bool loads_forwarded(const struct cpu_view *v, uint64_t lin, unsigned n, const struct stretch *s, uint64_t *val);

#endif
