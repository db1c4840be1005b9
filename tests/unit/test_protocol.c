/* SPDX-License-Identifier: MIT */
/* Control protocol parser, socket buffers (overflow modes) and the server's
 * replies, without sockets (export_new_detached). */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "export.h"

static size_t msg(uint8_t *b, uint16_t type, const void *p, uint32_t len)
{
    vbts_msg_header(b, type, len);
    if (len)
        memcpy(b + 12, p, len);
    return 12 + len;
}

static long parse(const uint8_t *b, size_t n, struct xreq *q, int *st)
{
    uint16_t type;
    return xproto_parse(b, n, q, st, &type);
}

Test(protocol, partial_and_garbage)
{
    uint8_t b[64];
    struct xreq q;
    int st = -1;
    size_t n = msg(b, VBTS_MSG_SIZE, "\0\0\0\0\0\0\0\0", 8);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(parse(b, i, &q, &st), 0, "%zu bytes are not a request yet", i);
    cr_assert_eq(parse(b, n, &q, &st), 20);
    cr_assert_eq(st, VBTS_PROTO_OK);
    cr_assert_eq(q.type, VBTS_MSG_SIZE);
    /* Garbage is rejected at its first differing byte. */
    cr_assert_eq(parse((const uint8_t *)"G", 1, &q, &st), -1);
    cr_assert_eq(st, VBTS_PROTO_E_MAGIC);
    cr_assert_eq(parse((const uint8_t *)"VCX", 3, &q, &st), -1);
    /* A huge length is refused from the header alone. */
    vbts_msg_header(b, VBTS_MSG_STATUS, 0xffffffffu);
    cr_assert_eq(parse(b, 12, &q, &st), -1);
    cr_assert_eq(st, VBTS_PROTO_E_TOO_LONG);
    vbts_msg_header(b, VBTS_MSG_STATUS, VBTS_PROTO_MAX_REQUEST + 1);
    cr_assert_eq(parse(b, 12, &q, &st), -1);
}

Test(protocol, every_request_checked)
{
    uint8_t b[64], p[32] = { 0 };
    struct xreq q;
    int st;
    /* Exact lengths: one byte more or less is E_LENGTH, and consumed. */
    static const struct { uint16_t t; uint32_t len; } lens[] = {
        { VBTS_MSG_HELLO, 8 }, { VBTS_MSG_STATUS, 0 }, { VBTS_MSG_CONFIG, 24 },
        { VBTS_MSG_SIZE, 8 }, { VBTS_MSG_GET, 16 }, { VBTS_MSG_CLEAR, 8 },
        { VBTS_MSG_DRAIN, 8 }, { VBTS_MSG_STREAM, 8 }, { VBTS_MSG_NOTIFY, 8 },
    };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t n = msg(b, lens[i].t, p, lens[i].len);
        cr_assert_eq(parse(b, n, &q, &st), (long)n);
        cr_assert_eq(st, VBTS_PROTO_OK, "type %u", lens[i].t);
        n = msg(b, lens[i].t, p, lens[i].len + 1);
        cr_assert_eq(parse(b, n, &q, &st), (long)n);
        cr_assert_eq(st, VBTS_PROTO_E_LENGTH, "type %u", lens[i].t);
    }
    size_t n = msg(b, 99, p, 3);
    cr_assert_eq(parse(b, n, &q, &st), 15);
    cr_assert_eq(st, VBTS_PROTO_E_TYPE);
    n = msg(b, VBTS_MSG_GET | VBTS_MSG_REPLY, p, 16);
    cr_assert_eq(parse(b, n, &q, &st), 28);
    cr_assert_eq(st, VBTS_PROTO_E_TYPE, "a reply is not a request");

    /* Reserved fields and values. */
    uint8_t g[16] = { 3, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0 };
    n = msg(b, VBTS_MSG_GET, g, 16);
    cr_assert_eq(parse(b, n, &q, &st), 28);
    cr_assert_eq(st, VBTS_PROTO_OK);
    cr_assert_eq(q.cpu, 3);
    cr_assert_eq(q.value, 7);
    g[2] = 1;
    msg(b, VBTS_MSG_GET, g, 16);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD);
    uint8_t nt[8] = { 2 };
    n = msg(b, VBTS_MSG_NOTIFY, nt, 8);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD);
    uint8_t c[24] = { 0 };
    vbts_set32(c, VBTS_CONFIG_OVERFLOW);
    vbts_set32(c + 8, VBTS_OVERFLOW_DROP);
    n = msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_OK);
    cr_assert_eq(q.overflow, VBTS_OVERFLOW_DROP);
    vbts_set32(c + 8, 3);
    msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD, "overflow 3 does not exist");
    vbts_set32(c, 8);
    vbts_set32(c + 8, 0);
    msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD, "unknown mask bit");
    vbts_set32(c, 0);
    vbts_set64(c + 16, 240);
    msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD, "a size without its mask bit");
    n = msg(b, VBTS_MSG_STATUS, NULL, 0);
    vbts_set16(b + 6, 1);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FLAGS);
}

Test(protocol, error_reply_bytes)
{
    uint8_t b[12 + 4 + VBTS_PROTO_MAX_TEXT];
    size_t n = xproto_error(b, VBTS_MSG_GET, VBTS_PROTO_E_RANGE, "no");
    static const uint8_t want[] = { 'V', 'C', 'T', 'L', 0x05, 0x80, 0, 0, 6, 0, 0, 0,
                                    9, 0, 0, 0, 'n', 'o' };
    cr_assert_eq(n, sizeof(want));
    cr_assert_arr_eq(b, want, sizeof(want));
    n = xproto_error(b, 0, VBTS_PROTO_E_MAGIC, NULL);
    cr_assert_eq(vbts_get16(b + 4), VBTS_MSG_ERROR);
    cr_assert_eq(n, 16 + strlen("bad message magic (not a vbts control client)"));
    char big[400];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    cr_assert_eq(xproto_error(b, 1, 7, big), 16 + VBTS_PROTO_MAX_TEXT, "text is capped");
}

static struct vbts_record rec(uint64_t i)
{
    struct vbts_record r = { 0x1000 + i, 0x2000 + i, (uint64_t)VBTS_KIND_JMP << 8 };
    return r;
}

static void publish_n(struct xring *r, uint64_t from, uint64_t n)
{
    static const atomic_int no_stop;
    struct vbts_record b[64];
    for (uint64_t i = 0; i < n; i++)
        b[i] = rec(from + i);
    xring_publish(r, b, n, &no_stop);
}

Test(ring, wrap_keeps_newest_and_frames)
{
    struct xring r;
    cr_assert_eq(xring_init(&r, 10, VBTS_OVERFLOW_WRAP), 0);
    cr_assert_eq(atomic_load(&r.chunk_max), 10);
    for (uint64_t i = 0; i < 30; i += 3)
        publish_n(&r, i, 3);
    cr_assert_eq(r.head, 30);
    cr_assert_eq(r.tail, 20);
    cr_assert_eq(r.overwritten, 20);
    cr_assert(r.full);
    cr_assert_eq(r.full_events, 1);
    cr_assert_eq(xring_at(&r, 29)->from, 0x1000 + 29);
    cr_assert_eq(xring_at(&r, 20)->from, 0x1000 + 20);
    /* Chunks as sealed: ...,[18,21),[21,24),[24,27),[27,30). */
    cr_assert_eq(xring_chunk_end(&r, 20, 30), 21);
    cr_assert_eq(xring_chunk_end(&r, 21, 30), 24);
    cr_assert_eq(xring_chunk_end(&r, 27, 30), 30);
    cr_assert_eq(xring_chunk_end(&r, 24, 26), 26);
    xring_destroy(&r);
}

Test(ring, drop_counts_and_places_lost_at_the_gap)
{
    struct xring r;
    cr_assert_eq(xring_init(&r, 8, VBTS_OVERFLOW_DROP), 0);
    publish_n(&r, 0, 5);
    publish_n(&r, 5, 5);    /* 3 fit, 2 dropped */
    publish_n(&r, 10, 4);   /* all dropped: no room for the marker */
    cr_assert_eq(r.head, 8);
    cr_assert_eq(r.dropped, 6);
    cr_assert_eq(r.lost_pending, 6);
    cr_assert(r.full);
    /* A client took 4 records: the marker goes first, then what fits. */
    r.tail = r.hold = 4;
    publish_n(&r, 14, 5);
    cr_assert_eq(r.head, 12);
    const struct vbts_record *m = xring_at(&r, 8);
    cr_assert(vbts_record_is_marker(m));
    cr_assert_eq(vbts_marker_qual(m), VBTS_MARK_LOST);
    cr_assert_eq(m->to, 6);
    cr_assert_eq(xring_at(&r, 9)->from, 0x1000 + 14);
    cr_assert_eq(r.lost_pending, 2);
    cr_assert_eq(r.dropped, 8);
    /* The vCPU ended; room appears: the last marker is placed. */
    r.finished = true;
    r.tail = r.hold = 12;
    cr_assert(xring_place_lost(&r));
    cr_assert_eq(xring_at(&r, 12)->to, 2);
    cr_assert_eq(r.lost_pending, 0);
    xring_destroy(&r);
}

struct blocker {
    struct xring *r;
    atomic_int done;
};

static void *block_producer(void *arg)
{
    struct blocker *b = arg;
    publish_n(b->r, 4, 4);
    atomic_store(&b->done, 1);
    return NULL;
}

Test(ring, block_waits_for_room)
{
    struct xring r;
    cr_assert_eq(xring_init(&r, 6, VBTS_OVERFLOW_BLOCK), 0);
    publish_n(&r, 0, 4);
    struct blocker b = { &r, 0 };
    pthread_t t;
    pthread_create(&t, NULL, block_producer, &b);
    usleep(150 * 1000);
    cr_assert_eq(atomic_load(&b.done), 0, "4 records do not fit in 2 free slots");
    pthread_mutex_lock(&r.lock);
    cr_assert(r.full);
    r.tail = r.hold = 2;
    pthread_cond_broadcast(&r.space);
    pthread_mutex_unlock(&r.lock);
    pthread_join(t, NULL);
    cr_assert_eq(r.head, 8);
    cr_assert_eq(r.dropped, 0);
    xring_destroy(&r);
}

Test(ring, resize)
{
    struct xring r;
    cr_assert_eq(xring_init(&r, 8, VBTS_OVERFLOW_DROP), 0);
    publish_n(&r, 0, 6);
    errno = 0;
    cr_assert_eq(xring_resize(&r, 4), -1);
    cr_assert_eq(errno, EBUSY);
    cr_assert_eq(xring_resize(&r, 100), 0);
    cr_assert_eq(xring_at(&r, 5)->from, 0x1005);
    cr_assert_eq(xring_chunk_end(&r, 0, r.head), 6);
    r.mode = VBTS_OVERFLOW_WRAP;
    cr_assert_eq(xring_resize(&r, 4), 0);
    cr_assert_eq(r.tail, 2);
    cr_assert_eq(xring_at(&r, 2)->from, 0x1002);
    xring_destroy(&r);
}

/* The server's replies through the detached connection. */
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
    struct export *x = export_new_detached(1, 10, VBTS_OVERFLOW_WRAP);
    cr_assert_not_null(x);
    struct vbts_record b[25];
    for (int i = 0; i < 25; i++)
        b[i] = rec((uint64_t)i);
    export_publish(x, 0, b, 10);
    export_publish(x, 0, b + 10, 10);
    export_publish(x, 0, b + 20, 5);
    uint8_t in[256];
    size_t n = 0;
    uint8_t hello[8] = { 1, 0, 0, 0 };
    n += msg(in + n, VBTS_MSG_HELLO, hello, 8);
    n += msg(in + n, VBTS_MSG_SIZE, "\0\0\0\0\0\0\0\0", 8);
    uint8_t g[16] = { 0 };
    vbts_set64(g + 8, 9);
    n += msg(in + n, VBTS_MSG_GET, g, 16);
    n += msg(in + n, VBTS_MSG_DRAIN, "\xff\xff\0\0\0\0\0\0", 8);
    n += msg(in + n, VBTS_MSG_SIZE, "\0\0\0\0\0\0\0\0", 8);
    static struct outbuf o;
    o.n = 0;
    export_detached_feed(x, in, n, collect, &o);
    const uint8_t *p = o.b;
    /* HELLO: 1.0, 1 vCPU */
    cr_assert_eq(vbts_get16(p + 4), VBTS_MSG_HELLO | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_get32(p + 8), 16);
    cr_assert_eq(vbts_get32(p + 12), 0);
    cr_assert_eq(vbts_get32(p + 20), 1);
    p += 28;
    cr_assert_eq(vbts_get16(p + 4), VBTS_MSG_SIZE | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_get64(p + 16), 10);
    p += 24;
    cr_assert_eq(vbts_get16(p + 4), VBTS_MSG_GET | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_get64(p + 20), 15, "index 9 of the newest 10 is seq 15");
    cr_assert_eq(vbts_get64(p + 28), 0x1000 + 15);
    p += 52;
    /* DRAIN: chunks as sealed, [15,20) and [20,25), then the reply. */
    cr_assert_eq(vbts_get32(p), VBTS_CHUNK_MAGIC);
    cr_assert_eq(vbts_get32(p + 8), 5);
    cr_assert_eq(vbts_get64(p + 16), 15);
    cr_assert_eq(vbts_get64(p + 24), 0x1000 + 15);
    p += 24 + 5 * 24;
    cr_assert_eq(vbts_get32(p + 8), 5);
    cr_assert_eq(vbts_get64(p + 16), 20);
    p += 24 + 5 * 24;
    cr_assert_eq(vbts_get16(p + 4), VBTS_MSG_DRAIN | VBTS_MSG_REPLY);
    cr_assert_eq(vbts_get64(p + 16), 10);
    p += 24;
    cr_assert_eq(vbts_get64(p + 16), 0, "the drain emptied the buffer");
    p += 24;
    cr_assert_eq((size_t)(p - o.b), o.n);
    export_free_detached(x);
}

Test(server, garbage_closes_after_one_error)
{
    struct export *x = export_new_detached(1, 10, VBTS_OVERFLOW_BLOCK);
    static struct outbuf o;
    o.n = 0;
    export_detached_feed(x, (const uint8_t *)"hello there", 11, collect, &o);
    cr_assert_eq(o.n, 12 + 4 + strlen("bad message magic (not a vbts control client)"));
    cr_assert_eq(vbts_get16(o.b + 4), VBTS_MSG_ERROR);
    cr_assert_eq(vbts_get32(o.b + 12), VBTS_PROTO_E_MAGIC);
    /* Nothing more is read from this client. */
    export_detached_feed(x, (const uint8_t *)"VCTL", 4, collect, &o);
    cr_assert_eq(o.n, 12 + 4 + strlen("bad message magic (not a vbts control client)"));
    export_free_detached(x);
}
