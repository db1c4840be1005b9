/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: hostile bytes from one client into the real server
 * code (export/server/ without sockets), with buffers that hold records in
 * each overflow mode.  Every byte the server sends back must be a
 * well-formed message or chunk; anything else, or a sanitizer report, is a
 * crash.  A stream the client asked to compress (HELLO option ZSTD) must
 * be whole zstd frames that decompress to the same.
 */
#include "fuzz.h"

#include "export/ring.h"
#include "export/server/server.h"
#include "vbts/protocol.h"

#include <zstd.h>

struct check {
    uint8_t pend[VBTS_PROTO_HDR_SIZE + 64];     /* a partial item header */
    size_t npend;
    uint64_t skip;                              /* payload bytes left */
    int after_stream;                           /* expect the 32-byte file header */
    int started;                                /* something was received */
    ZSTD_DStream *zd;                           /* the stream came compressed */
    size_t zleft;                               /* 0: it ended at a frame's end */
};

static void check_plain(struct check *c, const uint8_t *p, size_t n);

/* Compressed stream bytes: decompressed, then checked as the plain ones. */
static void check_zstd(struct check *c, const uint8_t *p, size_t n)
{
    ZSTD_inBuffer in = { p, n, 0 };
    while (in.pos < in.size) {
        uint8_t out[8192];
        ZSTD_outBuffer o = { out, sizeof(out), 0 };
        c->zleft = ZSTD_decompressStream(c->zd, &o, &in);
        if (ZSTD_isError(c->zleft))
            abort();
        check_plain(c, out, o.pos);
    }
}

static void check_out(void *ctx, const uint8_t *p, size_t n)
{
    struct check *c = ctx;
    if (c->zd)
        check_zstd(c, p, n);
    else
        check_plain(c, p, n);
}

static void check_plain(struct check *c, const uint8_t *p, size_t n)
{
    while (n > 0) {
        if (c->skip) {
            size_t k = n < c->skip ? n : (size_t)c->skip;
            c->skip -= k;
            p += k;
            n -= k;
            continue;
        }
        c->pend[c->npend++] = *p++;
        n--;
        /* A client silent at first gets the plain stream: a file header. */
        if (!c->started && c->npend == 4) {
            c->started = 1;
            if (!memcmp(c->pend, VBTS_MAGIC, 4))
                c->after_stream = 1;
        }
        if (c->after_stream == 1 && c->npend == 4 && !c->zd &&
            vbts_le32(c->pend) == ZSTD_MAGICNUMBER) {
            if (!(c->zd = ZSTD_createDStream()))
                abort();
            c->npend = 0;
            check_zstd(c, (const uint8_t *)"\x28\xb5\x2f\xfd", 4);
            check_zstd(c, p, n);
            return;
        }
        if (c->after_stream == 1) {
            if (c->npend == 32) {
                if (memcmp(c->pend, VBTS_MAGIC, VBTS_MAGIC_LEN))
                    abort();
                c->after_stream = 2;
                c->npend = 0;
            }
            continue;
        }
        if (c->npend < 12)
            continue;
        uint32_t magic = vbts_le32(c->pend);
        if (magic == VBTS_PROTO_MAGIC) {
            uint16_t type = vbts_le16(c->pend + 4);
            uint32_t len = vbts_le32(c->pend + 8);
            if (vbts_le16(c->pend + 6) != 0 || len > (1u << 20))
                abort();
            if ((type & VBTS_MSG_REPLY) && len < 4)
                abort();
            if (type == (VBTS_MSG_STREAM | VBTS_MSG_REPLY) && len == 4)
                c->after_stream = 1;
            c->skip = len;
            c->npend = 0;
        } else if (magic == VBTS_CHUNK_MAGIC) {
            if (c->npend < 24)
                continue;
            uint32_t count = vbts_le32(c->pend + 8);
            if (count == 0 || count > EXPORT_CHUNK_MAX || vbts_le16(c->pend + 4) >= 2 ||
                vbts_le16(c->pend + 6) || vbts_le32(c->pend + 12))
                abort();
            c->skip = (uint64_t)count * VBTS_RECORD_SIZE;
            c->npend = 0;
        } else {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* First byte: overflow mode and buffer size; the rest: the client. */
    int mode = data[0] % 3;
    uint64_t cap = 1 + (data[0] >> 2);
    struct server *x = server_new_detached(2, cap, mode);
    if (!x)
        return 0;
    struct vbts_record r[48];
    for (int i = 0; i < 48; i++) {
        r[i].from = 0x1000 + (uint64_t)i;
        r[i].to = 0x2000;
        r[i].flags = (uint64_t)VBTS_KIND_JMP << VBTS_KIND_SHIFT;
    }
    if (mode != VBTS_OVERFLOW_BLOCK) {      /* block would wait for a reader */
        server_publish(x, 0, r, cap < 48 ? cap : 48);
        server_publish(x, 0, r, 7 < cap ? 7 : cap);
        server_publish(x, 1, r, 3 < cap ? 3 : cap);
    }
    struct check c = { 0 };
    /* Feed in two pieces so that requests are split across reads. */
    size_t half = (size - 1) / 2;
    server_detached_feed(x, data + 1, half, check_out, &c);
    server_detached_feed(x, data + 1 + half, size - 1 - half, check_out, &c);
    server_free_detached(x);
    /* Whole frames only: what was sent ends at a frame's end. */
    if (c.zd && c.zleft)
        abort();
    ZSTD_freeDStream(c.zd);
    return 0;
}
