/* SPDX-License-Identifier: MIT */
/* Runs of straight-line code between a vCPU's branches. */
#include "events.h"
#include "view/blocks.h"

static struct blocks b;

static void expect(const struct vbts_event *ev, bool found, uint64_t start, uint64_t len, bool entered,
                   uint8_t kind)
{
    struct blocks_run r = { 0 };
    cr_assert_eq(blocks_next(&b, ev, &r), found, "record seq %llu", (unsigned long long)ev->seq);
    if (found)
        cr_assert(r.start == start && r.len == len && r.entered == entered && r.kind == kind,
                  "seq %llu: got %#llx+%llu entered %d kind %u", (unsigned long long)ev->seq,
                  (unsigned long long)r.start, (unsigned long long)r.len, r.entered, r.kind);
}

Test(blocks, runs_between_branches)
{
    memset(&b, 0, sizeof(b));
    struct vbts_event e;
    e = ev_marker(0, 0, VBTS_MARK_START, 1, 0);
    expect(&e, false, 0, 0, false, 0);
    e = ev_branch(0, 1, 0x1004, 0x1100, VBTS_KIND_CALL);        /* unknown start: its own byte */
    expect(&e, true, 0x1004, 1, false, 0);
    e = ev_branch(0, 2, 0x1108, 0x1400, VBTS_KIND_INTERRUPT);   /* 0x1108 had not run */
    expect(&e, true, 0x1100, 8, true, VBTS_KIND_CALL);
    e = ev_branch(1, 0, 0x2000, 0x2100, VBTS_KIND_JMP);         /* another vCPU: its own runs */
    expect(&e, true, 0x2000, 1, false, 0);
    e = ev_branch(0, 3, 0x1410, 0x1108, VBTS_KIND_IRET);
    expect(&e, true, 0x1400, 0x11, true, VBTS_KIND_INTERRUPT);
    e = ev_branch(0, 4, 0x1108, 0x1000, VBTS_KIND_INTERRUPT);   /* nothing ran: no run */
    expect(&e, false, 0, 0, false, 0);
    e = ev_marker(0, 5, VBTS_MARK_LOST, 9, 0);
    expect(&e, false, 0, 0, false, 0);
    e = ev_branch(0, 6, 0x3000, 0x3100, VBTS_KIND_JCC);         /* after a gap: unknown start */
    expect(&e, true, 0x3000, 1, false, 0);
    e = ev_branch(0, 7, 0x30ff, 0x3200, VBTS_KIND_JCC);         /* backwards: not a run */
    expect(&e, false, 0, 0, false, 0);
    e = ev_branch(0, 8, 0x3200 + BLOCKS_RUN_MAX, 0x3300, VBTS_KIND_JCC);   /* too long */
    expect(&e, false, 0, 0, false, 0);
    e = ev_branch(0, 9, 0x3310, 0x3400, VBTS_KIND_RET);          /* runs go on after a long one */
    expect(&e, true, 0x3300, 0x11, true, VBTS_KIND_JCC);
}

/* Addresses at the top of the space do not wrap. */
Test(blocks, no_wrap_at_the_top)
{
    memset(&b, 0, sizeof(b));
    struct vbts_event e = ev_branch(0, 0, UINT64_MAX, UINT64_MAX, VBTS_KIND_JMP);
    expect(&e, false, 0, 0, false, 0);
    e = ev_branch(0, 1, UINT64_MAX - 1, UINT64_MAX - 0x10, VBTS_KIND_JMP);
    expect(&e, true, UINT64_MAX - 1, 1, false, 0);
    e = ev_branch(0, 2, UINT64_MAX, 0, VBTS_KIND_JMP);
    expect(&e, false, 0, 0, false, 0);
}
