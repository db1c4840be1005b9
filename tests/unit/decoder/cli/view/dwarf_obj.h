/* SPDX-License-Identifier: MIT */
/* A small C file built with -g at test time: a linked ELF with DWARF for srclines and lcov. */
#ifndef VBTS_TEST_VIEW_DWARF_OBJ_H
#define VBTS_TEST_VIEW_DWARF_OBJ_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "view/srclines.h"

/* Straight-line functions, so that a trace of them is easy to write by hand. */
static const char dwarf_obj_src[] = "int g(int x)\n"            /* 1 */
                                    "{\n"                       /* 2 */
                                    "    return x + 1;\n"       /* 3 */
                                    "}\n"                       /* 4 */
                                    "\n"                        /* 5 */
                                    "int f(int x)\n"            /* 6 */
                                    "{\n"                       /* 7 */
                                    "    int y = g(x);\n"       /* 8 */
                                    "    return y + g(y);\n"    /* 9 */
                                    "}\n"                       /* 10 */
                                    "\n"                        /* 11 */
                                    "int unused(void)\n"        /* 12 */
                                    "{\n"                       /* 13 */
                                    "    return 7;\n"           /* 14 */
                                    "}\n";                      /* 15 */

struct dwarf_obj {
    char dir[64], src[96], obj[96];
};

static inline void dwarf_obj_build(struct dwarf_obj *o)
{
    strcpy(o->dir, "/tmp/vbts-dwarf.XXXXXX");
    cr_assert_not_null(mkdtemp(o->dir));
    snprintf(o->src, sizeof(o->src), "%s/prog.c", o->dir);
    snprintf(o->obj, sizeof(o->obj), "%s/prog", o->dir);
    FILE *f = fopen(o->src, "w");
    cr_assert_not_null(f);
    fputs(dwarf_obj_src, f);
    fclose(f);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "cc -g -O0 -fno-asynchronous-unwind-tables -nostdlib -static -Wl,-e,g -o %s %s",
             o->obj, o->src);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* The lowest row of source line n; fails the test if there is none. */
static inline const struct srclines_range *first_row(const struct srclines *s, uint32_t n)
{
    const struct srclines_range *best = NULL;
    for (size_t i = 0; i < s->nranges; i++)
        if (s->line[s->range[i].line].lineno == n && (!best || s->range[i].lo < best->lo))
            best = &s->range[i];
    cr_assert_not_null(best, "no row of line %u", n);
    return best;
}

static inline void dwarf_obj_remove(struct dwarf_obj *o)
{
    unlink(o->obj);
    unlink(o->src);
    rmdir(o->dir);
}

#endif
