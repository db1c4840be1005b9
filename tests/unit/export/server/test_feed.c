/* SPDX-License-Identifier: MIT */
/* Trace data into a connection: whole chunks as the producer sealed them, LOST where the ring let go. */
#include <criterion/criterion.h>
#include <string.h>

#include "export/server/conn.h"
#include "export/server/feed.h"
#include "export/server/listen.h"
#include "vbts/le.h"

static void publish(struct server *x, uint64_t from, uint64_t n)
{
    struct vbts_record r[64];
    for (uint64_t i = 0; i < n; i++)
        r[i] = (struct vbts_record){ from + i, from + i + 1, 0 };
    server_publish(x, 0, r, n);
}

Test(feed, stream_frames_chunks_and_marks_a_gap)
{
    struct server *x = server_new_detached(1, 10, VBTS_OVERFLOW_WRAP);
    publish(x, 1, 6);
    publish(x, 7, 6);                   /* wraps: the two oldest records are gone */
    struct conn *c = conn_new(x, -1, 0);
    c->st = C_STREAM;
    feed_start(x, c, D_STREAM, -1);
    feed_fill(x, c);
    const uint8_t *q = c->out + c->out_off;
    size_t len = c->out_len - c->out_off;
    /* The oldest records left are the tail of the first chunk (3..6), then the second. */
    cr_assert_eq(vbts_le32(q), VBTS_CHUNK_MAGIC);
    cr_assert_eq(vbts_le32(q + 8), 4, "a chunk of what is left of the first one");
    const uint8_t *second = q + sizeof(struct vbts_chunk_header) + 4 * 24;
    cr_assert_eq(vbts_le32(second + 8), 6);
    cr_assert_eq(len, 2 * sizeof(struct vbts_chunk_header) + 10 * 24);
    conn_free(x, c);
    server_free_detached(x);
}
