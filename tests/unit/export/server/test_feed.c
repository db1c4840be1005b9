/* SPDX-License-Identifier: MIT */
/* Trace data into a connection: whole chunks as the producer sealed them, LOST where the ring let go. */
#include <criterion/criterion.h>
#include <string.h>
#include <zstd.h>

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

/* The queue a connection gets for the same ring, compressed or not. */
static size_t stream_bytes(bool compress, uint8_t *out, size_t cap, size_t *frames)
{
    struct server *x = server_new_detached(1, 10, VBTS_OVERFLOW_WRAP);
    publish(x, 1, 6);
    publish(x, 7, 6);
    struct conn *c = conn_new(x, -1, 0);
    if (compress)
        cr_assert_eq(conn_compress(c), 0);
    feed_start_stream(x, c);
    feed_fill(x, c);
    size_t len = c->out_len - c->out_off;
    cr_assert_leq(len, cap);
    memcpy(out, c->out + c->out_off, len);
    *frames = 0;
    for (size_t off = 0; compress && off < len; (*frames)++) {
        size_t f = ZSTD_findFrameCompressedSize(out + off, len - off);
        cr_assert(!ZSTD_isError(f), "frame %zu at %zu", *frames, off);
        off += f;
    }
    conn_free(x, c);
    server_free_detached(x);
    return len;
}

Test(feed, compressed_stream_is_the_plain_one_frame_by_frame)
{
    static uint8_t plain[4096], packed[4096], unpacked[4096];
    size_t frames;
    size_t n = stream_bytes(false, plain, sizeof(plain), &frames);
    cr_assert_eq(n, sizeof(struct vbts_file_header) + 2 * sizeof(struct vbts_chunk_header) + 10 * 24);
    size_t z = stream_bytes(true, packed, sizeof(packed), &frames);
    cr_assert_eq(vbts_le32(packed), 0xfd2fb528u, "zstd's magic first");
    cr_assert_eq(frames, 3, "the header, then one frame per chunk");
    size_t got = ZSTD_decompress(unpacked, sizeof(unpacked), packed, z);
    cr_assert(!ZSTD_isError(got), "%s", ZSTD_getErrorName(got));
    cr_assert_eq(got, n);
    cr_assert_arr_eq(unpacked, plain, n);
}

Test(feed, compressed_chunk_needs_room_for_its_bound)
{
    struct server *x = server_new_detached(1, 10, VBTS_OVERFLOW_WRAP);
    struct conn *c = conn_new(x, -1, 0);
    size_t n = MAX_CHUNK_BYTES;
    conn_out_reserve(c, OUTQ_SIZE - n);
    cr_assert(conn_chunk_fits(c, n), "plain: exactly the chunk's bytes");
    cr_assert_eq(conn_compress(c), 0);
    cr_assert_not(conn_chunk_fits(c, n), "compressed: a frame may be a little larger");
    conn_free(x, c);
    server_free_detached(x);
}
