/* SPDX-License-Identifier: MIT */
/*
 * --format lcov over a trace written by hand against a real line table:
 * f calls g twice, each call returning into the middle of f's line.
 */
#include "dwarf_obj.h"
#include "events.h"
#include "view/srclines.h"
#include "view/view.h"

Test(lcov, lines_entered_and_functions_called)
{
    struct dwarf_obj o;
    dwarf_obj_build(&o);
    char err[256];
    struct srclines *s = srclines_load(o.obj, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    uint64_t g = s->func[0].entry, f = s->func[1].entry;
    uint64_t l4 = first_row(s, 4)->lo, l8 = first_row(s, 8)->lo, l9 = first_row(s, 9)->lo;
    uint64_t l10 = first_row(s, 10)->lo;
    srclines_free(s);
    const struct vbts_event ev[] = {
        ev_marker(0, 0, VBTS_MARK_START, 1, 0),
        ev_branch(0, 1, 0x9000, f, VBTS_KIND_CALL),         /* into f from outside */
        ev_branch(0, 2, l8, g, VBTS_KIND_CALL),             /* f: lines 7, 8 */
        ev_branch(0, 3, l4, l8 + 1, VBTS_KIND_RET),         /* g: 2, 3, 4; back into line 8 */
        ev_branch(0, 4, l9, g, VBTS_KIND_CALL),             /* f: the rest of 8 (not again), 9 */
        ev_branch(0, 5, l4, l9 + 1, VBTS_KIND_RET),         /* g again */
        ev_branch(0, 6, l10, 0x9005, VBTS_KIND_RET),        /* f: the rest of 9, 10 */
        ev_marker(0, 7, VBTS_MARK_STOP, 2, 0),
    };
    struct memout m;
    memout_open(&m);
    void *v = lcov_view.new(m.f, NULL, o.obj, err, sizeof(err));
    cr_assert_not_null(v, "%s", err);
    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
        cr_assert_eq(lcov_view.event(v, &ev[i]), 0);
    cr_assert_eq(lcov_view.finish(v), 0);
    lcov_view.free(v);
    char want[1024];
    snprintf(want, sizeof(want),
             "TN:\nSF:%s\nFN:1,g\nFN:6,f\nFN:12,unused\nFNDA:2,g\nFNDA:1,f\nFNDA:0,unused\nFNF:3\nFNH:2\n"
             "DA:2,2\nDA:3,2\nDA:4,2\nDA:7,1\nDA:8,1\nDA:9,1\nDA:10,1\nDA:13,0\nDA:14,0\nDA:15,0\n"
             "LF:10\nLH:7\nend_of_record\n",
             o.src);
    cr_assert_str_eq(memout_text(&m), want);
    memout_close(&m);
    dwarf_obj_remove(&o);
}

Test(lcov, needs_an_elf_with_dwarf)
{
    char err[256];
    struct memout m;
    memout_open(&m);
    cr_assert_null(lcov_view.new(m.f, NULL, NULL, err, sizeof(err)));
    cr_assert_str_eq(err, "--format lcov needs --symbols ELF, an ELF file with DWARF (built with -g)");
    cr_assert_null(lcov_view.new(m.f, NULL, "/nonexistent", err, sizeof(err)));
    cr_assert_str_eq(err, "/nonexistent: no DWARF debug information (--format lcov needs an ELF built with -g)");
    cr_assert_str_eq(memout_text(&m), "");
    memout_close(&m);
}
