/* SPDX-License-Identifier: MIT */
/* The control protocol's parser and error replies. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "export/proto.h"

static size_t msg(uint8_t *b, uint16_t type, const void *p, uint32_t len)
{
    vbts_msg_header(b, type, len);
    if (len)
        memcpy(b + 12, p, len);
    return 12 + len;
}

static long parse(const uint8_t *b, size_t n, struct proto_req *q, int *st)
{
    uint16_t type;
    return proto_parse(b, n, q, st, &type);
}

Test(protocol, partial_and_garbage)
{
    uint8_t b[64];
    struct proto_req q;
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
    struct proto_req q;
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
    vbts_put32(c, VBTS_CONFIG_OVERFLOW);
    vbts_put32(c + 8, VBTS_OVERFLOW_DROP);
    n = msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_OK);
    cr_assert_eq(q.overflow, VBTS_OVERFLOW_DROP);
    vbts_put32(c + 8, 3);
    msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD, "overflow 3 does not exist");
    vbts_put32(c, 8);
    vbts_put32(c + 8, 0);
    msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD, "unknown mask bit");
    vbts_put32(c, 0);
    vbts_put64(c + 16, 240);
    msg(b, VBTS_MSG_CONFIG, c, 24);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FIELD, "a size without its mask bit");
    n = msg(b, VBTS_MSG_STATUS, NULL, 0);
    vbts_put16(b + 6, 1);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_E_FLAGS);
}

Test(protocol, hello_options)
{
    uint8_t b[64], h[8] = { 1, 0, 1, 0 };
    struct proto_req q;
    int st;
    size_t n = msg(b, VBTS_MSG_HELLO, h, 8);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_OK);
    cr_assert_eq(q.minor, 1);
    cr_assert_eq(q.options, 0);
    vbts_put32(h + 4, VBTS_HELLO_ZSTD);
    msg(b, VBTS_MSG_HELLO, h, 8);
    parse(b, n, &q, &st);
    cr_assert_eq(st, VBTS_PROTO_OK);
    cr_assert_eq(q.options, VBTS_HELLO_ZSTD);
    for (int bit = 1; bit < 32; bit++) {
        vbts_put32(h + 4, VBTS_HELLO_ZSTD | 1u << bit);
        msg(b, VBTS_MSG_HELLO, h, 8);
        parse(b, n, &q, &st);
        cr_assert_eq(st, VBTS_PROTO_E_FIELD, "unknown option bit %d", bit);
    }
}

Test(protocol, error_reply_bytes)
{
    uint8_t b[12 + 4 + VBTS_PROTO_MAX_TEXT];
    size_t n = proto_error(b, VBTS_MSG_GET, VBTS_PROTO_E_RANGE, "no");
    static const uint8_t want[] = { 'V', 'C', 'T', 'L', 0x05, 0x80, 0, 0, 6, 0, 0, 0,
                                    9, 0, 0, 0, 'n', 'o' };
    cr_assert_eq(n, sizeof(want));
    cr_assert_arr_eq(b, want, sizeof(want));
    n = proto_error(b, 0, VBTS_PROTO_E_MAGIC, NULL);
    cr_assert_eq(vbts_le16(b + 4), VBTS_MSG_ERROR);
    cr_assert_eq(n, 16 + strlen("bad message magic (not a vbts control client)"));
    char big[400];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    cr_assert_eq(proto_error(b, 1, 7, big), 16 + VBTS_PROTO_MAX_TEXT, "text is capped");
}
