/* SPDX-License-Identifier: MIT */
/* The sink: per-vCPU staging sealed into chunks, STOP at the end, counts. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "export/sink.h"
#include "vbts/decode.h"

Test(sink, records_reach_the_file_in_order)
{
    char path[] = "/tmp/vbts-test-sink.XXXXXX";
    int tmp = mkstemp(path);
    close(tmp);
    const char *dests[] = { path };
    struct sink_config c = { .dests = dests, .ndests = 1, .buffer_size = 24 * 1024 };
    struct sink *s = sink_open(&c, 2);
    cr_assert_not_null(s, "%s", error_last());
    sink_emit_start(s, 0);
    for (uint64_t i = 0; i < 5000; i++)
        sink_emit(s, 0, (struct vbts_record){ 0x1000 + i, 0x2000 + i, (uint64_t)VBTS_KIND_JMP << VBTS_KIND_SHIFT });
    sink_emit(s, 1, (struct vbts_record){ 1, 2, (uint64_t)VBTS_KIND_CALL << VBTS_KIND_SHIFT });
    cr_assert_eq(sink_branches(s, 0), 5000);
    cr_assert_not(sink_stopped(s, 0));
    sink_stop(s, 0, VBTS_STOP_GUEST_EXIT);
    sink_stop(s, 0, VBTS_STOP_ERROR);           /* idempotent: one STOP */
    sink_stop(s, 1, VBTS_STOP_GUEST_EXIT);
    cr_assert(sink_stopped(s, 0));
    cr_assert_not(sink_failed(s));
    cr_assert_eq(sink_close(s), 0, "%s", error_last());

    int fd = open(path, O_RDONLY);
    struct vbts_reader *r = vbts_reader_new(fd);
    cr_assert_not_null(r);
    struct vbts_event ev;
    uint64_t n0 = 0, stops = 0;
    int st;
    while ((st = vbts_reader_next(r, &ev)) == 1) {
        if (ev.cpu == 0 && !ev.is_marker) {
            cr_assert_eq(ev.rec.from, 0x1000 + n0);
            n0++;
        }
        if (ev.is_marker && ev.qualifier == VBTS_MARK_STOP)
            stops++;
    }
    cr_assert_eq(st, 0, "clean end: %s", vbts_strerror(st));
    cr_assert_eq(n0, 5000);
    cr_assert_eq(stops, 2, "one STOP per vCPU");
    vbts_reader_free(r);
    close(fd);
    unlink(path);
}

Test(sink, buffer_sizes_are_checked)
{
    const char *dests[] = { "/tmp/unused.vbts" };
    struct sink_config c = { .dests = dests, .ndests = 1, .buffer_size = 10 };
    cr_assert_null(sink_open(&c, 1));
    cr_assert_str_eq(error_last(), "--buffer-size: 10 bytes is less than one record (24 bytes)");
    c.buffer_size = 2400;
    c.buffer_limit = 4000;
    cr_assert_null(sink_open(&c, 2));
    cr_assert_str_eq(error_last(), "--buffer-size: 2 vCPU buffers of 2400 bytes exceed the buffer limit of 4000 bytes (--buffer-limit)");
}
