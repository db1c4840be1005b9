/* SPDX-License-Identifier: MIT */
/* --format calls: gdb's numbering and indentation, events marked, markers as comments. */
#include "events.h"
#include "view/view.h"

static const char *run(struct memout *m, const struct vbts_symtab *sym, const struct vbts_event *ev, size_t n)
{
    memout_open(m);
    void *v = calls_view.new(m->f, sym, NULL, err_, sizeof(err_));
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(calls_view.event(v, &ev[i]), 0);
    cr_assert_eq(calls_view.finish(v), 0);
    calls_view.free(v);
    return memout_text(m);
}

Test(calls, history_of_two_vcpus)
{
    struct vbts_symtab *sym = test_symtab();
    const struct vbts_event ev[] = {
        ev_marker(0, 0, VBTS_MARK_START, 1, 0),
        ev_marker(0, 1, VBTS_MARK_CTX_ARRIVE, 0x5000, 3),
        ev_branch(0, 2, 0x1004, 0x1100, VBTS_KIND_CALL),
        ev_branch(1, 0, 0x1304, 0x1200, VBTS_KIND_CALL),
        ev_branch(0, 3, 0x1108, 0x1400, VBTS_KIND_INTERRUPT),
        ev_branch(0, 4, 0x1410, 0x1108, VBTS_KIND_IRET),
        ev_branch(0, 5, 0x1120, 0x1009, VBTS_KIND_RET),
        ev_marker(0, 6, VBTS_MARK_LOST, 12, 0),
        ev_branch(0, 7, 0x1004, 0x1500, VBTS_KIND_SYSCALL),
        ev_marker(0, 8, VBTS_MARK_STOP, 2, VBTS_STOP_LIMIT),
        ev_marker(1, 1, VBTS_MARK_STOP, 2, 77),
    };
    struct memout m;
    cr_assert_str_eq(run(&m, sym, ev, sizeof(ev) / sizeof(ev[0])),
                     "# 0 ctx-arrive cr3=0x5000\n"
                     "0\t1\tmain\n"
                     "0\t2\t  f\n"
                     "1\t1\th\n"
                     "1\t2\t  g\n"
                     "0\t3\t    isr [interrupt]\n"
                     "0\t4\t  f\n"
                     "0\t5\tmain\n"
                     "# 0 lost 12 records\n"
                     "0\t6\tmain\n"
                     "0\t7\t  sys [syscall]\n"
                     "# 0 stop limit\n"
                     "# 1 stop reason-77\n");
    memout_close(&m);
    vbts_symtab_free(sym);
}

Test(calls, without_symbols)
{
    const struct vbts_event ev[] = {
        ev_branch(0, 0, 0x1004, 0x1100, VBTS_KIND_CALL),
        ev_branch(0, 1, 0x1104, 0x2000, VBTS_KIND_EXCEPTION),
    };
    struct memout m;
    cr_assert_str_eq(run(&m, NULL, ev, 2), "0\t1\t??\n0\t2\t  0x1100\n0\t3\t    0x2000 [exception]\n");
    memout_close(&m);
}

/* Only the frame an event entered is marked; a tail call at its level is not. */
Test(calls, tail_call_in_a_handler_is_not_marked)
{
    struct vbts_symtab *sym = test_symtab();
    const struct vbts_event ev[] = {
        ev_branch(0, 0, 0x1004, 0x1400, VBTS_KIND_EXCEPTION),
        ev_branch(0, 1, 0x1404, 0x1200, VBTS_KIND_JMP),
        ev_branch(0, 2, 0x1204, 0x1210, VBTS_KIND_JCC),
    };
    struct memout m;
    cr_assert_str_eq(run(&m, sym, ev, 3), "0\t1\tmain\n0\t2\t  isr [exception]\n0\t3\t  g\n");
    memout_close(&m);
    vbts_symtab_free(sym);
}
