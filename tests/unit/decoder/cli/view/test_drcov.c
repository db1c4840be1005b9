/* SPDX-License-Identifier: MIT */
/* --format drcov: blocks between branches, modules, and the binary table. */
#include "events.h"
#include "view/view.h"

struct bb {
    uint32_t start;
    uint16_t size, mod;
};

/* The text part, and the table's entries decoded. */
static size_t run(struct memout *m, const struct vbts_symtab *sym, const char *symfile,
                  const struct vbts_event *ev, size_t n, char *head, size_t headlen, struct bb *bb, size_t max)
{
    memout_open(m);
    void *v = drcov_view.new(m->f, sym, symfile, err_, sizeof(err_));
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(drcov_view.event(v, &ev[i]), 0);
    cr_assert_eq(drcov_view.finish(v), 0);
    drcov_view.free(v);
    memout_text(m);
    const char *t = strstr(m->buf, "BB Table: ");
    cr_assert_not_null(t);
    const char *nl = strchr(t, '\n');
    cr_assert_lt((size_t)(nl + 1 - m->buf), headlen);
    memcpy(head, m->buf, (size_t)(nl + 1 - m->buf));
    head[nl + 1 - m->buf] = '\0';
    size_t count = strtoul(t + 10, NULL, 10);
    cr_assert_eq(m->len - (size_t)(nl + 1 - m->buf), 8 * count);
    cr_assert_leq(count, max);
    const uint8_t *p = (const uint8_t *)nl + 1;
    for (size_t i = 0; i < count; i++, p += 8)
        bb[i] = (struct bb){ (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24,
                             (uint16_t)(p[4] | p[5] << 8), (uint16_t)(p[6] | p[7] << 8) };
    return count;
}

Test(drcov, blocks_between_branches)
{
    struct vbts_symtab *sym = test_symtab();
    const struct vbts_event ev[] = {
        ev_marker(0, 0, VBTS_MARK_START, 1, 0),
        ev_branch(0, 1, 0x1004, 0x1100, VBTS_KIND_CALL),        /* the call's first byte only */
        ev_branch(0, 2, 0x1108, 0x1400, VBTS_KIND_INTERRUPT),   /* 0x1100..0x1107: 0x1108 had not run */
        ev_branch(0, 3, 0x1410, 0x1108, VBTS_KIND_IRET),        /* 0x1400..0x1410 */
        ev_branch(0, 4, 0x1120, 0x1009, VBTS_KIND_RET),         /* 0x1108..0x1120 */
        ev_marker(0, 5, VBTS_MARK_LOST, 3, 0),
        ev_branch(0, 6, 0x1030, 0x1000, VBTS_KIND_JMP),         /* after a gap: its first byte */
        ev_branch(0, 7, 0x1030, 0x1000, VBTS_KIND_JMP),         /* 0x1000..0x1030 */
        ev_branch(0, 8, 0x1030, 0x1000, VBTS_KIND_JMP),         /* the same block again: once */
        ev_branch(0, 9, 0x0ff0, 0x7000000000, VBTS_KIND_JMP),   /* went backwards: not a block */
        ev_branch(0, 10, 0x7000000010, 0x1000, VBTS_KIND_JMP),  /* a block in another 4 GiB region */
    };
    struct memout m;
    char head[1024];
    struct bb bb[16];
    size_t n = run(&m, sym, "/some/dir/prog.map", ev, sizeof(ev) / sizeof(ev[0]), head, sizeof(head), bb, 16);
    cr_assert_str_eq(head, "DRCOV VERSION: 2\nDRCOV FLAVOR: drcov\nModule Table: version 2, count 2\n"
                           "Columns: id, base, end, entry, checksum, timestamp, path\n"
                           "  0, 0x0000000000001000, 0x0000000000001411, 0x0000000000000000, 0x00000000, 0x00000000, prog.map\n"
                           "  1, 0x0000007000000000, 0x0000007000000011, 0x0000000000000000, 0x00000000, 0x00000000, region-0x7000000000\n"
                           "BB Table: 7 bbs\n");
    const struct bb want[] = {
        { 0x0, 0x31, 0 }, { 0x4, 1, 0 }, { 0x30, 1, 0 }, { 0x100, 8, 0 }, { 0x108, 0x19, 0 }, { 0x400, 0x11, 0 },
        { 0x0, 0x11, 1 },
    };
    cr_assert_eq(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++)
        cr_assert(bb[i].start == want[i].start && bb[i].size == want[i].size && bb[i].mod == want[i].mod,
                  "bb %zu: %#x+%#x in %u", i, bb[i].start, bb[i].size, bb[i].mod);
    memout_close(&m);
    vbts_symtab_free(sym);
}

/* No symbols: every module is a region; a run longer than 0xffff is split. */
Test(drcov, long_runs_split_without_symbols)
{
    const struct vbts_event ev[] = {
        ev_branch(0, 0, 0x10000, 0x20000, VBTS_KIND_JMP),
        ev_branch(0, 1, 0x3ffff, 0x10000, VBTS_KIND_JMP),
    };
    struct memout m;
    char head[1024];
    struct bb bb[8];
    size_t n = run(&m, NULL, NULL, ev, 2, head, sizeof(head), bb, 8);
    cr_assert(strstr(head, "count 1\n") && strstr(head, "  0, 0x0000000000000000, 0x0000000000040000, "),
              "%s", head);
    cr_assert_eq(n, 4);
    cr_assert(bb[0].start == 0x10000 && bb[0].size == 1);
    cr_assert(bb[1].start == 0x20000 && bb[1].size == 0xffff);
    cr_assert(bb[2].start == 0x2ffff && bb[2].size == 0xffff);
    cr_assert(bb[3].start == 0x3fffe && bb[3].size == 2);
    memout_close(&m);
}

/* A trace without a branch: the header, no module, an empty table. */
Test(drcov, no_branches_no_blocks)
{
    const struct vbts_event ev[] = { ev_marker(0, 0, VBTS_MARK_START, 1, 0), ev_marker(0, 1, VBTS_MARK_STOP, 2, 0) };
    struct memout m;
    char head[1024];
    struct bb bb[1];
    cr_assert_eq(run(&m, NULL, NULL, ev, 2, head, sizeof(head), bb, 1), 0);
    cr_assert_str_eq(head, "DRCOV VERSION: 2\nDRCOV FLAVOR: drcov\nModule Table: version 2, count 0\n"
                           "Columns: id, base, end, entry, checksum, timestamp, path\nBB Table: 0 bbs\n");
    memout_close(&m);
}
