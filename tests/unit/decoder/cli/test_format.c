/* SPDX-License-Identifier: MIT */
/* vbts-decode's lines: text and JSON for branches and markers, with and without symbols. */
#include "format.h"
#include "view/events.h"

static const char *line(const struct vbts_event *ev, enum format_kind kind, const struct vbts_symtab *sym)
{
    static char buf[FORMAT_LINE_MAX + 1];
    size_t n = format_event(buf, ev, kind, sym);
    cr_assert_leq(n, FORMAT_LINE_MAX);
    buf[n] = '\0';
    return buf;
}

Test(format, branches)
{
    struct vbts_symtab *sym = test_symtab();
    struct vbts_event e = ev_branch(3, 7, 0x1004, 0x1100, VBTS_KIND_CALL);
    cr_assert_str_eq(line(&e, FORMAT_TEXT, NULL), "  3  0x0000000000001004 -> 0x0000000000001100  call\n");
    cr_assert_str_eq(line(&e, FORMAT_TEXT, sym),
                     "  3  0x0000000000001004 -> 0x0000000000001100  call  main+0x4 -> f+0x0\n");
    cr_assert_str_eq(line(&e, FORMAT_JSON, sym), "{\"cpu\":3,\"seq\":7,\"from\":\"0x1004\",\"to\":\"0x1100\","
                                                 "\"kind\":\"call\",\"from_sym\":\"main+0x4\",\"to_sym\":\"f+0x0\"}\n");
    e.kind = 200;
    cr_assert_str_eq(line(&e, FORMAT_JSON, NULL),
                     "{\"cpu\":3,\"seq\":7,\"from\":\"0x1004\",\"to\":\"0x1100\",\"kind\":\"kind-200\"}\n");
    vbts_symtab_free(sym);
}

Test(format, markers)
{
    struct vbts_event e = ev_marker(0, 0, VBTS_MARK_START, 1795505094311304420ull, 0);
    cr_assert_str_eq(line(&e, FORMAT_TEXT, NULL), "  0  -- start 2026-11-24T07:24:54.311304420Z\n");
    e = ev_marker(1, 9, VBTS_MARK_STOP, 0, VBTS_STOP_LIMIT);
    cr_assert_str_eq(line(&e, FORMAT_JSON, NULL),
                     "{\"cpu\":1,\"seq\":9,\"kind\":\"stop\",\"reason\":\"limit\",\"time_ns\":0}\n");
    e = ev_marker(0, 2, VBTS_MARK_LOST, 12, 0);
    cr_assert_str_eq(line(&e, FORMAT_TEXT, NULL), "  0  -- lost 12\n");
    e = ev_marker(0, 3, VBTS_MARK_CTX_ARRIVE, 0x5000, 40);
    cr_assert_str_eq(line(&e, FORMAT_JSON, NULL),
                     "{\"cpu\":0,\"seq\":3,\"kind\":\"ctx-arrive\",\"cr3\":\"0x5000\",\"t_ns\":40}\n");
    e = ev_marker(0, 4, 99, 0x10, 5);
    cr_assert_str_eq(line(&e, FORMAT_TEXT, NULL), "  0  -- marker-99 to=0x10 aux=5\n");
}
