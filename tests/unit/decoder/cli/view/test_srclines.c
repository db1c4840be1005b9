/* SPDX-License-Identifier: MIT */
/* Source lines and functions from DWARF: ranges, lookups, and the refusals. */
#include "dwarf_obj.h"
#include "view/srclines.h"

Test(srclines, lines_functions_and_lookups)
{
    struct dwarf_obj o;
    dwarf_obj_build(&o);
    char err[256];
    struct srclines *s = srclines_load(o.obj, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(s->nfiles, 1);
    cr_assert_str_eq(s->file[0], o.src);
    /* Lines with code: 2-4, 7-10, 13-15, and nothing else. */
    uint32_t want[] = { 2, 3, 4, 7, 8, 9, 10, 13, 14, 15 };
    cr_assert_eq(s->nlines, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        first_row(s, want[i]);
    for (size_t i = 1; i < s->nranges; i++)
        cr_assert_leq(s->range[i - 1].lo, s->range[i].lo);
    cr_assert_eq(s->nfuncs, 3);
    cr_assert(!strcmp(s->func[0].name, "g") && s->func[0].lineno == 1 && s->func[0].entry == s->range[0].lo);
    cr_assert(!strcmp(s->func[1].name, "f") && s->func[1].lineno == 6);
    cr_assert(!strcmp(s->func[2].name, "unused") && s->func[2].lineno == 12);
    cr_assert_lt(s->func[0].entry, s->func[1].entry);
    cr_assert_lt(s->func[1].entry, s->func[2].entry);
    cr_assert_eq(srclines_func_at(s, s->func[1].entry), 1);
    cr_assert_eq(srclines_func_at(s, s->func[1].entry + 1), s->nfuncs);
    /* A row holds its addresses; past the last row, nothing. */
    const struct srclines_range *r9 = first_row(s, 9);
    cr_assert_eq(&s->range[srclines_range_at(s, r9->lo)], r9);
    cr_assert_eq(&s->range[srclines_range_at(s, r9->hi - 1)], r9);
    cr_assert_eq(srclines_range_from(s, r9->lo), (size_t)(r9 - s->range));
    cr_assert_eq(srclines_range_at(s, s->range[s->nranges - 1].hi), s->nranges);
    cr_assert_eq(srclines_range_from(s, s->range[s->nranges - 1].hi), s->nranges);
    cr_assert_eq(srclines_range_at(s, s->range[0].lo - 1), s->nranges);
    srclines_free(s);
    dwarf_obj_remove(&o);
}

Test(srclines, refusals_say_why)
{
    char err[256];
    cr_assert_null(srclines_load("/nonexistent/vmlinux", err, sizeof(err)));
    cr_assert_str_eq(err, "/nonexistent/vmlinux: no DWARF debug information (--format lcov needs an ELF built with -g)");
    struct dwarf_obj o;
    dwarf_obj_build(&o);
    char cmd[300];
    /* An object file: its DWARF is not relocated. */
    snprintf(cmd, sizeof(cmd), "cc -g -c -o %s.o %s", o.obj, o.src);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s.o", o.obj);
    cr_assert_null(srclines_load(cmd, err, sizeof(err)));
    char want[256];
    snprintf(want, sizeof(want), "%s.o: a relocatable object; --format lcov needs the linked ELF", o.obj);
    cr_assert_str_eq(err, want);
    unlink(cmd);
    snprintf(cmd, sizeof(cmd), "objcopy --strip-debug %s", o.obj);
    cr_assert_eq(system(cmd), 0);
    cr_assert_null(srclines_load(o.obj, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s: no DWARF debug information (--format lcov needs an ELF built with -g)", o.obj);
    cr_assert_str_eq(err, want);
    dwarf_obj_remove(&o);
}
