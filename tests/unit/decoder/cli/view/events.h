/* SPDX-License-Identifier: MIT */
/* Records for the view tests, and a symbol map of a small program. */
#ifndef VBTS_TEST_VIEW_EVENTS_H
#define VBTS_TEST_VIEW_EVENTS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbts/decode.h>
#include <vbts/symbols.h>

static inline struct vbts_event ev_branch(unsigned cpu, uint64_t seq, uint64_t from, uint64_t to,
                                          enum vbts_kind kind)
{
    return (struct vbts_event){ .rec = { from, to, (uint64_t)kind << VBTS_KIND_SHIFT }, .seq = seq,
                                .cpu = (uint16_t)cpu, .kind = (uint8_t)kind };
}

static inline struct vbts_event ev_marker(unsigned cpu, uint64_t seq, enum vbts_mark_qual q, uint64_t to,
                                          uint64_t aux)
{
    return (struct vbts_event){ .rec = vbts_marker(q, to, aux), .seq = seq,
                                .cpu = (uint16_t)cpu, .is_marker = 1, .qualifier = (uint8_t)q, .aux = aux };
}

/* main at 0x1000, f at 0x1100, g at 0x1200, h at 0x1300, isr at 0x1400, sys at 0x1500. */
static inline struct vbts_symtab *test_symtab(void)
{
    char path[] = "/tmp/vbts-viewsym.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    static const char map[] = "0000000000001000 T main\n0000000000001100 T f\n0000000000001200 T g\n"
                              "0000000000001300 T h\n0000000000001400 T isr\n0000000000001500 T sys\n";
    cr_assert_eq(write(fd, map, sizeof(map) - 1), (ssize_t)sizeof(map) - 1);
    close(fd);
    char err[256];
    struct vbts_symtab *s = vbts_symtab_load(path, err, sizeof(err));
    unlink(path);
    cr_assert_not_null(s, "%s", err);
    return s;
}

/* Where a view's new() says why it failed. */
static char err_[512] __attribute__((unused));

/* A stream to write a view into, and what it holds. */
struct memout {
    FILE *f;
    char *buf;
    size_t len;
};

static inline void memout_open(struct memout *m)
{
    m->f = open_memstream(&m->buf, &m->len);
    cr_assert_not_null(m->f);
}

static inline const char *memout_text(struct memout *m)
{
    fflush(m->f);
    return m->buf;
}

static inline void memout_close(struct memout *m)
{
    fclose(m->f);
    free(m->buf);
}

#endif
