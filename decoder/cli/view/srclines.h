/* SPDX-License-Identifier: MIT */
/*
 * An ELF's source lines and functions, from its DWARF (libdw), as address
 * ranges: for the coverage views.  The line table's rows become ranges
 * (a row covers up to the next row of its sequence), sorted by address;
 * each range names a (file, line); each function has its entry address.
 */
#ifndef VBTS_DECODER_VIEW_SRCLINES_H
#define VBTS_DECODER_VIEW_SRCLINES_H

#include <stddef.h>
#include <stdint.h>

#include "view/slots.h"

struct srclines_range {
    uint64_t lo, hi;    /* [lo, hi) */
    uint32_t line;      /* index into line[] */
};

struct srclines_line {
    uint32_t file, lineno;
};

struct srclines_func {
    uint64_t entry;
    char *name;
    uint32_t file, lineno;
};

struct srclines {
    char **file;        /* absolute where the CU's directory says so */
    size_t nfiles, files_cap;
    struct srclines_line *line;
    size_t nlines, lines_cap;
    struct srclines_range *range;
    size_t nranges, ranges_cap;
    struct srclines_func *func;  /* sorted by entry */
    size_t nfuncs, funcs_cap;
    struct slots line_slots;    /* lines by (file, lineno) */
    struct slots file_slots;    /* files by name */
};

/* NULL with a one-line reason in err: no file, no DWARF, no line table, no memory. */
struct srclines *srclines_load(const char *path, char *err, size_t errlen);
void srclines_free(struct srclines *s);

/* The range holding addr; s->nranges if none. */
size_t srclines_range_at(const struct srclines *s, uint64_t addr);
/* The first range starting at or after addr (s->nranges if none). */
size_t srclines_range_from(const struct srclines *s, uint64_t addr);
/* The function whose entry is addr; s->nfuncs if none. */
size_t srclines_func_at(const struct srclines *s, uint64_t addr);

#endif
