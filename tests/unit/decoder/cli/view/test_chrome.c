/* SPDX-License-Identifier: MIT */
/* --format chrome: B/E pairs per vCPU in stack order, markers as instants. */
#include "events.h"
#include "view/view.h"

Test(chrome, nested_events_and_markers)
{
    struct vbts_symtab *sym = test_symtab();
    const struct vbts_event ev[] = {
        ev_marker(0, 0, VBTS_MARK_START, 1000, 0),
        ev_branch(0, 1, 0x1004, 0x1100, VBTS_KIND_CALL),
        ev_branch(0, 2, 0x1104, 0x1400, VBTS_KIND_INTERRUPT),
        ev_marker(0, 3, VBTS_MARK_CTX_DEPART, 0x5000, 40),
        ev_marker(0, 4, VBTS_MARK_STOP, 2000, VBTS_STOP_GUEST_EXIT),
    };
    struct memout m;
    memout_open(&m);
    void *v = chrome_view.new(m.f, sym, NULL, err_, sizeof(err_));
    cr_assert_not_null(v);
    for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
        cr_assert_eq(chrome_view.event(v, &ev[i]), 0);
    cr_assert_eq(chrome_view.finish(v), 0);
    chrome_view.free(v);
    cr_assert_str_eq(memout_text(&m),
        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"time\":\"record index (1 us = 1 record)\"},\"traceEvents\":[\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"vCPU 0\"}},\n"
        "{\"name\":\"start\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":0,\"ts\":0,\"args\":{\"time_ns\":1000}},\n"
        "{\"name\":\"main\",\"cat\":\"root\",\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1},\n"
        "{\"name\":\"f\",\"cat\":\"call\",\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1},\n"
        "{\"name\":\"isr\",\"cat\":\"interrupt\",\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":2},\n"
        "{\"name\":\"ctx-depart\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":0,\"ts\":3,\"args\":{\"cr3\":\"0x5000\",\"t_ns\":40}},\n"
        "{\"ph\":\"E\",\"pid\":1,\"tid\":0,\"ts\":4},\n"
        "{\"ph\":\"E\",\"pid\":1,\"tid\":0,\"ts\":4},\n"
        "{\"ph\":\"E\",\"pid\":1,\"tid\":0,\"ts\":4},\n"
        "{\"name\":\"stop\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":0,\"ts\":4,\"args\":{\"reason\":\"guest-exit\",\"time_ns\":2000}}\n"
        "]}\n");
    memout_close(&m);
    vbts_symtab_free(sym);
}

/* A trace cut short still closes every frame it opened. */
Test(chrome, cut_short_closes_frames)
{
    const struct vbts_event ev[] = { ev_branch(2, 5, 0x1004, 0x1100, VBTS_KIND_CALL) };
    struct memout m;
    memout_open(&m);
    void *v = chrome_view.new(m.f, NULL, NULL, err_, sizeof(err_));
    cr_assert_eq(chrome_view.event(v, &ev[0]), 0);
    cr_assert_eq(chrome_view.finish(v), 0);
    chrome_view.free(v);
    const char *t = memout_text(&m);
    cr_assert(strstr(t, "{\"name\":\"0x1100\",\"cat\":\"call\",\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":5},\n"
                        "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":6},\n{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":6}\n]}\n"),
              "%s", t);
    memout_close(&m);
}
