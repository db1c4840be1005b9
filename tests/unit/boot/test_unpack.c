/* SPDX-License-Identifier: MIT */
/*
 * Kernel payloads in every format, made by each format's own library (the
 * lzop container by hand, as lzop writes it), then unpacked: the bytes
 * back, an exact buffer enough, one byte less refused, a cut-off or
 * corrupt stream refused, and the size the kernel build appends ignored.
 */
#include <bzlib.h>
#include <criterion/criterion.h>
#include <lz4.h>
#include <lzma.h>
#include <lzo/lzo1x.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "boot/lz4_legacy.h"
#include "boot/unpack.h"
#include "vbts/le.h"

#define N 100000

static uint8_t data[N], packed[2 * N], out[N + 16];

static void fill(void)
{
    uint32_t x = 1;
    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245 + 12345;
        data[i] = i % 64 < 48 ? (uint8_t)("vmlinux "[i % 8]) : (uint8_t)(x >> 24);
    }
}

/* The kernel build's tail: the uncompressed size, little-endian. */
static size_t append_size(size_t n)
{
    vbts_put32(packed + n, N);
    return n + 4;
}

static size_t pack_gzip(void)
{
    z_stream z = { 0 };
    cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = data;
    z.avail_in = N;
    z.next_out = packed;
    z.avail_out = sizeof(packed);
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    deflateEnd(&z);
    return n;                                  /* gzip's trailer holds the size */
}

static size_t pack_bzip2(void)
{
    unsigned n = sizeof(packed);
    cr_assert_eq(BZ2_bzBuffToBuffCompress((char *)packed, &n, (char *)data, N, 9, 0, 0), BZ_OK);
    return append_size(n);
}

static size_t pack_lzma(bool xz)
{
    size_t n = 0;
    if (xz) {
        cr_assert_eq(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, data, N, packed, &n,
                                             sizeof(packed)), LZMA_OK);
    } else {
        lzma_options_lzma o;
        lzma_lzma_preset(&o, 6);
        lzma_stream s = LZMA_STREAM_INIT;
        cr_assert_eq(lzma_alone_encoder(&s, &o), LZMA_OK);
        s.next_in = data;
        s.avail_in = N;
        s.next_out = packed;
        s.avail_out = sizeof(packed);
        cr_assert_eq(lzma_code(&s, LZMA_FINISH), LZMA_STREAM_END);
        n = s.total_out;
        lzma_end(&s);
    }
    return append_size(n);
}

static void put_be(uint8_t *p, uint32_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* lzop 1.04's layout: version 0x1040, LZO1X-1, adler32 of the data; blocks of 256 KiB
 * at most (here 40000 bytes, so that there are three; the second stored as is). */
static size_t pack_lzo(void)
{
    static const uint8_t magic[] = { 0x89, 'L', 'Z', 'O', 0x00, 0x0d, 0x0a, 0x1a, 0x0a };
    static uint8_t wrk[LZO1X_1_MEM_COMPRESS];
    cr_assert_eq(lzo_init(), LZO_E_OK);
    uint8_t *p = packed;
    memcpy(p, magic, sizeof(magic));
    p += sizeof(magic);
    uint8_t *h = p;
    put_be(p, 0x1040, 2);                      /* version */
    put_be(p + 2, 0x2080, 2);                  /* library version */
    put_be(p + 4, 0x0940, 2);                  /* version needed */
    p[6] = 1;                                  /* method: LZO1X-1 */
    p[7] = 5;                                  /* level */
    put_be(p + 8, 0x03000001, 4);              /* flags: adler32 of the data, OS unix */
    put_be(p + 12, 0, 4);                      /* mode */
    put_be(p + 16, 0, 4);                      /* mtime */
    put_be(p + 20, 0, 4);
    p[24] = 0;                                 /* no file name */
    p += 25;
    put_be(p, lzo_adler32(1, h, (lzo_uint)(p - h)), 4);
    p += 4;
    for (size_t off = 0; off < N; off += 40000) {
        size_t dlen = N - off < 40000 ? N - off : 40000;
        lzo_uint clen = 0;
        put_be(p, (uint32_t)dlen, 4);
        put_be(p + 8, lzo_adler32(1, data + off, (lzo_uint)dlen), 4);
        cr_assert_eq(lzo1x_1_compress(data + off, dlen, p + 12, &clen, wrk), LZO_E_OK);
        if (off == 40000) {                    /* stored: lzop does so when it does not shrink */
            memcpy(p + 12, data + off, dlen);
            clen = dlen;
        }
        put_be(p + 4, (uint32_t)clen, 4);
        p += 12 + clen;
    }
    put_be(p, 0, 4);                           /* the end */
    return append_size((size_t)(p + 4 - packed));
}

static size_t pack_lz4(void)
{
    vbts_put32(packed, LZ4_LEGACY_MAGIC);
    int c = LZ4_compress_default((const char *)data, (char *)packed + 8, N, 2 * N - 16);
    cr_assert_gt(c, 0);
    vbts_put32(packed + 4, (uint32_t)c);
    return append_size(8 + (size_t)c);
}

static size_t pack_zstd(void)
{
    /* With the checksum, as the zstd tool writes by default. */
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 19);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t n = ZSTD_compress2(c, packed, sizeof(packed), data, N);
    ZSTD_freeCCtx(c);
    cr_assert(!ZSTD_isError(n));
    return append_size(n);
}

static size_t pack(enum unpack_format f)
{
    switch (f) {
    case UNPACK_GZIP: return pack_gzip();
    case UNPACK_BZIP2: return pack_bzip2();
    case UNPACK_LZMA: return pack_lzma(false);
    case UNPACK_XZ: return pack_lzma(true);
    case UNPACK_LZO: return pack_lzo();
    case UNPACK_LZ4: return pack_lz4();
    case UNPACK_ZSTD: return pack_zstd();
    default: cr_assert_fail("no packer");
    }
    return 0;
}

static const enum unpack_format ALL[] = {
    UNPACK_GZIP, UNPACK_BZIP2, UNPACK_LZMA, UNPACK_XZ, UNPACK_LZO, UNPACK_LZ4, UNPACK_ZSTD,
};

Test(unpack, every_format_round_trip)
{
    fill();
    for (size_t i = 0; i < sizeof(ALL) / sizeof(ALL[0]); i++) {
        enum unpack_format f = ALL[i];
        const char *name = unpack_format_name(f);
        size_t n = pack(f);
        cr_assert_eq(unpack_detect(packed, n), f, "%s detected", name);
        memset(out, 0, sizeof(out));
        cr_assert_eq(unpack_payload(f, packed, n, out, sizeof(out)), N, "%s", name);
        cr_assert_eq(memcmp(out, data, N), 0, "%s: the bytes back", name);
        cr_assert_eq(unpack_payload(f, packed, n, out, N), N, "%s: an exact buffer", name);
        cr_assert_eq(unpack_payload(f, packed, n, out, N - 1), -1, "%s: one byte less", name);
        cr_assert_eq(unpack_payload(f, packed, n / 2, out, sizeof(out)), -1, "%s: cut off", name);
        size_t stream = f == UNPACK_GZIP ? n : n - 4;
        cr_assert_eq(unpack_payload(f, packed, stream, out, sizeof(out)), N,
                     "%s: without the appended size", name);
        cr_assert_eq(unpack_payload(f, packed, stream - 1, out, sizeof(out)), -1,
                     "%s: its last byte missing", name);
    }
}

Test(unpack, corrupt_streams_refused)
{
    fill();
    for (size_t i = 0; i < sizeof(ALL) / sizeof(ALL[0]); i++) {
        enum unpack_format f = ALL[i];
        size_t n = pack(f);
        /* A byte in the middle: checksums (gzip, bzip2, xz, lzop, zstd) or structure. */
        packed[n / 2] ^= 0x5a;
        packed[n / 2 + 1] ^= 0xa5;
        long got = unpack_payload(f, packed, n, out, sizeof(out));
        cr_assert(got == -1 || (f == UNPACK_LZMA || f == UNPACK_LZ4),
                  "%s: corrupt stream gave %ld", unpack_format_name(f), got);
        if (got >= 0)
            cr_assert(got != N || memcmp(out, data, N), "%s: corrupt yet the same",
                      unpack_format_name(f));
    }
}

Test(unpack, detect_and_names)
{
    static const uint8_t elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };
    cr_assert_eq(unpack_detect(elf, sizeof(elf)), UNPACK_NONE);
    cr_assert_str_eq(unpack_format_name(UNPACK_NONE), "uncompressed");
    cr_assert_eq(unpack_payload(UNPACK_NONE, elf, sizeof(elf), out, sizeof(elf)), (long)sizeof(elf));
    cr_assert_eq(unpack_payload(UNPACK_NONE, elf, sizeof(elf), out, sizeof(elf) - 1), -1);
    cr_assert_eq(unpack_detect((const uint8_t *)"\x1f", 1), UNPACK_UNKNOWN, "too short");
    cr_assert_eq(unpack_detect((const uint8_t *)"BZh9", 4), UNPACK_BZIP2);
    cr_assert_eq(unpack_detect((const uint8_t *)"PK\3\4", 4), UNPACK_UNKNOWN);
    cr_assert_str_eq(unpack_format_name(UNPACK_UNKNOWN), "unknown");
    cr_assert_str_eq(unpack_format_name(UNPACK_XZ), "xz");
    cr_assert_eq(unpack_payload(UNPACK_UNKNOWN, elf, sizeof(elf), out, sizeof(out)), -1);
}

Test(unpack, lzop_header_checked)
{
    fill();
    size_t n = pack_lzo();
    packed[9 + 7] ^= 1;                        /* the level: the header's adler32 no longer holds */
    cr_assert_eq(unpack_payload(UNPACK_LZO, packed, n, out, sizeof(out)), -1);
    packed[9 + 7] ^= 1;
    packed[9 + 6] = 9;                         /* method 9: not LZO1X */
    cr_assert_eq(unpack_payload(UNPACK_LZO, packed, n, out, sizeof(out)), -1);
    packed[9 + 6] = 1;
    cr_assert_eq(unpack_payload(UNPACK_LZO, packed, n, out, sizeof(out)), N);
    /* A block's data checksum. */
    size_t first = 9 + 25 + 4;
    packed[first + 8] ^= 1;
    cr_assert_eq(unpack_payload(UNPACK_LZO, packed, n, out, sizeof(out)), -1);
}
