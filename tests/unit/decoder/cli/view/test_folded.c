/* SPDX-License-Identifier: MIT */
/* --format folded: one line per stack, branches counted where they ran. */
#include "events.h"
#include "view/view.h"

static const char *run(struct memout *m, const struct vbts_symtab *sym, const struct vbts_event *ev, size_t n)
{
    memout_open(m);
    void *v = folded_view.new(m->f, sym, NULL, err_, sizeof(err_));
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(folded_view.event(v, &ev[i]), 0);
    cr_assert_eq(folded_view.finish(v), 0);
    folded_view.free(v);
    return memout_text(m);
}

Test(folded, stacks_and_counts)
{
    struct vbts_symtab *sym = test_symtab();
    const struct vbts_event ev[] = {
        ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),        /* main */
        ev_branch(0, 1, 0x1104, 0x1110, VBTS_KIND_JCC),         /* main;f */
        ev_branch(0, 2, 0x1114, 0x1400, VBTS_KIND_EXCEPTION),   /* main;f */
        ev_branch(0, 3, 0x1404, 0x1200, VBTS_KIND_CALL),        /* main;f;isr */
        ev_branch(0, 4, 0x1204, 0x1408, VBTS_KIND_RET),         /* main;f;isr;g */
        ev_branch(0, 5, 0x1410, 0x1114, VBTS_KIND_IRET),        /* main;f;isr */
        ev_branch(0, 6, 0x1120, 0x1009, VBTS_KIND_RET),         /* main;f */
        ev_branch(1, 0, 0x1104, 0x1110, VBTS_KIND_JCC),         /* f (another vCPU, merged) */
        ev_branch(0, 7, 0x1010, 0x1000, VBTS_KIND_JMP),         /* main */
    };
    struct memout m;
    cr_assert_str_eq(run(&m, sym, ev, sizeof(ev) / sizeof(ev[0])),
                     "main 2\nmain;f 3\nmain;f;isr 2\nmain;f;isr;g 1\nf 1\n");
    memout_close(&m);
    vbts_symtab_free(sym);
}

/* A frame name cannot break a line: ';' and ' ' and other bytes become '?'. */
Test(folded, names_stay_one_frame)
{
    char path[] = "/tmp/vbts-foldsym.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    static const char map[] = "0000000000001000 T a;b\n0000000000001100 T x\033y\n";
    cr_assert_eq(write(fd, map, sizeof(map) - 1), (ssize_t)sizeof(map) - 1);
    close(fd);
    char err[256];
    struct vbts_symtab *sym = vbts_symtab_load(path, err, sizeof(err));
    unlink(path);
    cr_assert_not_null(sym, "%s", err);
    const struct vbts_event ev[] = {
        ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),
        ev_branch(0, 1, 0x1104, 0x1009, VBTS_KIND_RET),
    };
    struct memout m;
    cr_assert_str_eq(run(&m, sym, ev, 2), "a?b 1\na?b;x?y 1\n");
    memout_close(&m);
    vbts_symtab_free(sym);
}
