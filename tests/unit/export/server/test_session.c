/* SPDX-License-Identifier: MIT */
/* The server's sessions without sockets (server_new_detached): replies, drains, hostile bytes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "export/ring.h"
#include "export/server/server.h"
#include "vbts/protocol.h"

static size_t msg(uint8_t *b, uint16_t type, const void *p, uint32_t len)
{
    vbts_msg_header(b, type, len);
    if (len)
        memcpy(b + 12, p, len);
    return 12 + len;
}

static struct vbts_record rec(uint64_t i)
{
    struct vbts_record r = { 0x1000 + i, 0x2000 + i, (uint64_t)VBTS_KIND_JMP << 8 };
    return r;
}


struct outbuf {
    uint8_t b[1 << 16];
    size_t n;
};

static void collect(void *ctx, const uint8_t *p, size_t n)
{
    struct outbuf *o = ctx;
    cr_assert_leq(o->n + n, sizeof(o->b));
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

Test(server, hello_size_get_drain)
{
    struct server *x = server_new_detached(1, 10, VBTS_OVERFLOW_WRAP);
    cr_assert_not_null(x);
    struct vbts_record b[25];
    for (int i = 0; i < 25; i++)
        b[i] = rec((uint64_t)i);
    server_publish(x, 0, b, 10);
    server_publish(x, 0, b + 10, 10);
    server_publish(x, 0, b + 20, 5);
    uint8_t in[256];
    size_t n = 0;
    uint8_t hello[8] = { 1, 0, 0, 0 };
    n += msg(in + n, VBTS_MSG_HELLO, hello, 8);
    n += msg(in + n, VBTS_MSG_SIZE, "\0\0\0\0\0\0\0\0", 8);
    uint8_t g[16] = { 0 };
    vbts_put64(g + 8, 9);
    n += msg(in + n, VBTS_MSG_GET, g, 16);
    n += msg(in + n, VBTS_MSG_DRAIN, "\xff\xff\0\0\0\0\0\0", 8);
    n += msg(in + n, VBTS_MSG_SIZE, "\0\0\0\0\0\0\0\0", 8);
    static struct outbuf o;
    o.n = 0;
    server_detached_feed(x, in, n, collect, &o);
    const uint8_t *p = o.b;
    /* HELLO: 1.0, 1 vCPU */
    cr_assert_eq(vbts_le16(p + 4), VBTS_MSG_HELLO | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_le32(p + 8), 16);
    cr_assert_eq(vbts_le32(p + 12), 0);
    cr_assert_eq(vbts_le32(p + 20), 1);
    p += 28;
    cr_assert_eq(vbts_le16(p + 4), VBTS_MSG_SIZE | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_le64(p + 16), 10);
    p += 24;
    cr_assert_eq(vbts_le16(p + 4), VBTS_MSG_GET | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_le64(p + 20), 15, "index 9 of the newest 10 is seq 15");
    cr_assert_eq(vbts_le64(p + 28), 0x1000 + 15);
    p += 52;
    /* DRAIN: chunks as sealed, [15,20) and [20,25), then the reply. */
    cr_assert_eq(vbts_le32(p), VBTS_CHUNK_MAGIC);
    cr_assert_eq(vbts_le32(p + 8), 5);
    cr_assert_eq(vbts_le64(p + 16), 15);
    cr_assert_eq(vbts_le64(p + 24), 0x1000 + 15);
    p += 24 + 5 * 24;
    cr_assert_eq(vbts_le32(p + 8), 5);
    cr_assert_eq(vbts_le64(p + 16), 20);
    p += 24 + 5 * 24;
    cr_assert_eq(vbts_le16(p + 4), VBTS_MSG_DRAIN | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_le64(p + 16), 10);
    p += 24;
    cr_assert_eq(vbts_le64(p + 16), 0, "the drain emptied the buffer");
    p += 24;
    cr_assert_eq((size_t)(p - o.b), o.n);
    server_free_detached(x);
}

Test(server, garbage_closes_after_one_error)
{
    struct server *x = server_new_detached(1, 10, VBTS_OVERFLOW_BLOCK);
    static struct outbuf o;
    o.n = 0;
    server_detached_feed(x, (const uint8_t *)"hello there", 11, collect, &o);
    cr_assert_eq(o.n, 12 + 4 + strlen("bad message magic (not a vbts control client)"));
    cr_assert_eq(vbts_le16(o.b + 4), VBTS_MSG_ERROR);
    cr_assert_eq(vbts_le32(o.b + 12), VBTS_PROTO_E_MAGIC);
    /* Nothing more is read from this client. */
    server_detached_feed(x, (const uint8_t *)"VCTL", 4, collect, &o);
    cr_assert_eq(o.n, 12 + 4 + strlen("bad message magic (not a vbts control client)"));
    server_free_detached(x);
}

/* HELLO then STREAM, the HELLO's options given: what the client gets after the STREAM reply. */
static size_t stream_after(uint32_t options, struct outbuf *o, int *hello_status)
{
    struct server *x = server_new_detached(1, 10, VBTS_OVERFLOW_WRAP);
    struct vbts_record b[5];
    for (int i = 0; i < 5; i++)
        b[i] = rec((uint64_t)i);
    server_publish(x, 0, b, 5);
    uint8_t in[64], hello[8] = { 1, 0, 1, 0 };
    vbts_put32(hello + 4, options);
    size_t n = msg(in, VBTS_MSG_HELLO, hello, 8);
    n += msg(in + n, VBTS_MSG_STREAM, "\0\0\0\0\0\0\0\0", 8);
    o->n = 0;
    server_detached_feed(x, in, n, collect, o);
    server_free_detached(x);
    *hello_status = (int)vbts_le32(o->b + 12);
    if (*hello_status)
        return 0;
    cr_assert_eq(vbts_le16(o->b + 28 + 4), VBTS_MSG_STREAM | VBTS_MSG_REPLY);
    return 28 + 16;
}

Test(server, hello_zstd_compresses_the_stream)
{
    static struct outbuf plain, packed;
    static uint8_t back[1 << 16];
    int st;
    size_t p0 = stream_after(0, &plain, &st);
    cr_assert_eq(st, 0);
    cr_assert_eq(vbts_le16(plain.b + 16), VBTS_PROTO_MINOR, "the reply says 1.1");
    cr_assert_arr_eq(plain.b + p0, VBTS_MAGIC, 4, "uncompressed: the file header");
    size_t z0 = stream_after(VBTS_HELLO_ZSTD, &packed, &st);
    cr_assert_eq(st, 0);
    cr_assert_eq(vbts_le32(packed.b + z0), 0xfd2fb528u, "compressed: zstd frames");
    size_t got = ZSTD_decompress(back, sizeof(back), packed.b + z0, packed.n - z0);
    cr_assert(!ZSTD_isError(got), "%s", ZSTD_getErrorName(got));
    cr_assert_eq(got, plain.n - p0);
    cr_assert_arr_eq(back, plain.b + p0, got);
}

Test(server, hello_unknown_option_refused_and_closed)
{
    static struct outbuf o;
    int st;
    stream_after(2, &o, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD);
    cr_assert_eq(o.n, 12 + 4 + strlen("invalid field value"), "nothing after the error: closed");
}
