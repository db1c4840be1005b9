/* SPDX-License-Identifier: MIT */
#include "boot/unpack.h"

#include <bzlib.h>
#include <limits.h>
#include <stdbool.h>
#include <lzma.h>
#include <lzo/lzo1x.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "boot/lz4_legacy.h"
#include "vbts/le.h"

/* A dictionary beyond this is refused: the kernel's own xz and lzma use 32 and 64 MiB. */
#define LZMA_MEMLIMIT   (256ull << 20)

static const uint8_t GZIP_MAGIC[] = { 0x1f, 0x8b };
static const uint8_t BZIP2_MAGIC[] = { 'B', 'Z', 'h' };
static const uint8_t LZMA_MAGIC[] = { 0x5d, 0x00, 0x00 };
static const uint8_t XZ_MAGIC[] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };
static const uint8_t LZOP_MAGIC[] = { 0x89, 'L', 'Z', 'O', 0x00, 0x0d, 0x0a, 0x1a, 0x0a };
static const uint8_t ZSTD_MAGIC[] = { 0x28, 0xb5, 0x2f, 0xfd };
static const uint8_t ELF_MAGIC[] = { 0x7f, 'E', 'L', 'F' };

static const struct {
    enum unpack_format f;
    const char *name;
    const uint8_t *magic;
    size_t len;
} FORMATS[] = {
    { UNPACK_GZIP, "gzip", GZIP_MAGIC, sizeof(GZIP_MAGIC) },
    { UNPACK_BZIP2, "bzip2", BZIP2_MAGIC, sizeof(BZIP2_MAGIC) },
    { UNPACK_LZMA, "lzma", LZMA_MAGIC, sizeof(LZMA_MAGIC) },
    { UNPACK_XZ, "xz", XZ_MAGIC, sizeof(XZ_MAGIC) },
    { UNPACK_LZO, "lzo", LZOP_MAGIC, sizeof(LZOP_MAGIC) },
    { UNPACK_ZSTD, "zstd", ZSTD_MAGIC, sizeof(ZSTD_MAGIC) },
    { UNPACK_NONE, "uncompressed", ELF_MAGIC, sizeof(ELF_MAGIC) },
};

enum unpack_format unpack_detect(const uint8_t *in, size_t len)
{
    if (len >= 4 && vbts_le32(in) == LZ4_LEGACY_MAGIC)
        return UNPACK_LZ4;
    for (size_t i = 0; i < sizeof(FORMATS) / sizeof(FORMATS[0]); i++)
        if (len >= FORMATS[i].len && !memcmp(in, FORMATS[i].magic, FORMATS[i].len))
            return FORMATS[i].f;
    return UNPACK_UNKNOWN;
}

const char *unpack_format_name(enum unpack_format f)
{
    if (f == UNPACK_LZ4)
        return "lz4";
    for (size_t i = 0; i < sizeof(FORMATS) / sizeof(FORMATS[0]); i++)
        if (FORMATS[i].f == f)
            return FORMATS[i].name;
    return "unknown";
}

/* zlib and libbz2 count in 32-bit units: feed them at most this much at a time. */
static unsigned piece(size_t left)
{
    return left < UINT_MAX ? (unsigned)left : UINT_MAX;
}

static long gunzip(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)      /* gzip framing only */
        return -1;
    size_t in_pos = 0, out_pos = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
        z.next_in = (Bytef *)in + in_pos;
        z.avail_in = piece(in_len - in_pos);
        z.next_out = out + out_pos;
        z.avail_out = piece(out_cap - out_pos);
        unsigned ai = z.avail_in, ao = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        in_pos += ai - z.avail_in;
        out_pos += ao - z.avail_out;
        if (rc == Z_OK && ai == z.avail_in && ao == z.avail_out)
            break;      /* no progress: the input ended, or the output is full */
    }
    inflateEnd(&z);
    return rc == Z_STREAM_END ? (long)out_pos : -1;
}

static long bunzip2(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap)
{
    bz_stream b;
    memset(&b, 0, sizeof(b));
    if (BZ2_bzDecompressInit(&b, 0, 0) != BZ_OK)
        return -1;
    size_t in_pos = 0, out_pos = 0;
    int rc = BZ_OK;
    while (rc == BZ_OK) {
        b.next_in = (char *)in + in_pos;
        b.avail_in = piece(in_len - in_pos);
        b.next_out = (char *)out + out_pos;
        b.avail_out = piece(out_cap - out_pos);
        unsigned ai = b.avail_in, ao = b.avail_out;
        rc = BZ2_bzDecompress(&b);
        in_pos += ai - b.avail_in;
        out_pos += ao - b.avail_out;
        if (rc == BZ_OK && ai == b.avail_in && ao == b.avail_out)
            break;
    }
    BZ2_bzDecompressEnd(&b);
    return rc == BZ_STREAM_END ? (long)out_pos : -1;
}

/* lzma (alone) and xz: liblzma stops at the end of the first stream. */
static long unxz(enum unpack_format f, const uint8_t *in, size_t in_len, uint8_t *out,
                 size_t out_cap)
{
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_ret rc = f == UNPACK_XZ ? lzma_stream_decoder(&s, LZMA_MEMLIMIT, 0)
                                 : lzma_alone_decoder(&s, LZMA_MEMLIMIT);
    if (rc != LZMA_OK)
        return -1;
    s.next_in = in;
    s.avail_in = in_len;
    s.next_out = out;
    s.avail_out = out_cap;
    do
        rc = lzma_code(&s, LZMA_FINISH);
    while (rc == LZMA_OK);
    long got = (long)(out_cap - s.avail_out);
    lzma_end(&s);
    return rc == LZMA_STREAM_END ? got : -1;
}

static long unzstd(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap)
{
    /* One frame: the build's appended size is not a frame. */
    size_t n = ZSTD_findFrameCompressedSize(in, in_len);
    if (ZSTD_isError(n))
        return -1;
    size_t got = ZSTD_decompress(out, out_cap, in, n);
    return ZSTD_isError(got) ? -1 : (long)got;
}

/* lzop's header flags (lzop's conf.h) that change what follows. */
#define LZOP_ADLER32_D      0x00000001u
#define LZOP_ADLER32_C      0x00000002u
#define LZOP_EXTRA_FIELD    0x00000040u
#define LZOP_CRC32_D        0x00000100u
#define LZOP_CRC32_C        0x00000200u
#define LZOP_FILTER         0x00000800u
#define LZOP_H_CRC32        0x00001000u
#define LZOP_BLOCK_MAX      (64u << 20)

struct cursor {
    const uint8_t *p;
    size_t left;
    bool ok;
};

static const uint8_t *take(struct cursor *c, size_t n)
{
    if (!c->ok || n > c->left) {
        c->ok = false;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += n;
    c->left -= n;
    return p;
}

static uint32_t be(struct cursor *c, size_t n)
{
    const uint8_t *p = take(c, n);
    uint32_t v = 0;
    for (size_t i = 0; p && i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static uint32_t lzop_sum(bool crc, const uint8_t *p, size_t n)
{
    return crc ? lzo_crc32(0, p, (lzo_uint)n) : lzo_adler32(1, p, (lzo_uint)n);
}

/* The header up to the first block; its flags, or ok = false. */
static uint32_t lzop_header(struct cursor *c)
{
    take(c, sizeof(LZOP_MAGIC));
    const uint8_t *start = c->p;
    unsigned version = be(c, 2);
    be(c, 2);                                   /* library version */
    if (version >= 0x0940)
        be(c, 2);                               /* version needed to extract */
    unsigned method = be(c, 1);
    if (version >= 0x0940)
        be(c, 1);                               /* level */
    uint32_t flags = be(c, 4);
    if (flags & LZOP_FILTER)
        c->ok = false;                          /* lzop's -F filters: not what the kernel makes */
    be(c, 4);                                   /* mode */
    be(c, 4);                                   /* mtime */
    if (version >= 0x0940)
        be(c, 4);
    take(c, be(c, 1));                          /* file name */
    size_t hlen = c->ok ? (size_t)(c->p - start) : 0;
    uint32_t sum = be(c, 4);
    if (c->ok && sum != lzop_sum(flags & LZOP_H_CRC32, start, hlen))
        c->ok = false;
    if (flags & LZOP_EXTRA_FIELD) {
        take(c, be(c, 4));
        be(c, 4);
    }
    if (method < 1 || method > 3)               /* LZO1X-1, -1(15), -999 */
        c->ok = false;
    return flags;
}

static long unlzo(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap)
{
    if (lzo_init() != LZO_E_OK)
        return -1;
    struct cursor c = { in, in_len, true };
    uint32_t flags = lzop_header(&c);
    size_t done = 0;
    while (c.ok) {
        uint32_t dlen = be(&c, 4);
        if (c.ok && dlen == 0)
            return (long)done;                  /* the end marker */
        uint32_t clen = be(&c, 4);
        bool has_d = flags & (LZOP_ADLER32_D | LZOP_CRC32_D);
        uint32_t dsum = has_d ? be(&c, 4) : 0;
        if ((flags & LZOP_ADLER32_D) && (flags & LZOP_CRC32_D))
            be(&c, 4);                          /* both: the crc32 is not checked */
        if (clen < dlen && flags & LZOP_ADLER32_C)
            be(&c, 4);
        if (clen < dlen && flags & LZOP_CRC32_C)
            be(&c, 4);
        const uint8_t *data = take(&c, clen);
        if (!data || dlen > LZOP_BLOCK_MAX || clen > dlen || dlen > out_cap - done)
            return -1;
        if (clen == dlen) {
            memcpy(out + done, data, dlen);
        } else {
            lzo_uint got = dlen;
            if (lzo1x_decompress_safe(data, clen, out + done, &got, NULL) != LZO_E_OK ||
                got != dlen)
                return -1;
        }
        if (has_d && dsum != lzop_sum(!(flags & LZOP_ADLER32_D), out + done, dlen))
            return -1;
        done += dlen;
    }
    return -1;
}

long unpack_payload(enum unpack_format f, const uint8_t *in, size_t in_len, uint8_t *out,
                    size_t out_cap)
{
    if (out_cap > LONG_MAX)
        out_cap = LONG_MAX;
    switch (f) {
    case UNPACK_NONE:
        if (in_len > out_cap)
            return -1;
        memcpy(out, in, in_len);
        return (long)in_len;
    case UNPACK_GZIP:
        return gunzip(in, in_len, out, out_cap);
    case UNPACK_BZIP2:
        return bunzip2(in, in_len, out, out_cap);
    case UNPACK_LZMA:
    case UNPACK_XZ:
        return unxz(f, in, in_len, out, out_cap);
    case UNPACK_LZO:
        return unlzo(in, in_len, out, out_cap);
    case UNPACK_LZ4:
        return lz4_legacy_decompress(in, in_len, out, out_cap);
    case UNPACK_ZSTD:
        return unzstd(in, in_len, out, out_cap);
    case UNPACK_UNKNOWN:
        break;
    }
    return -1;
}
