/* SPDX-License-Identifier: MIT */
/* LZ4 legacy frames, as Debian's kernels compress their payload: our framing, liblz4's blocks. */
#include <criterion/criterion.h>
#include <lz4.h>
#include <string.h>

#include "boot/lz4_legacy.h"
#include "vbts/le.h"

static uint8_t text[3000];

static void fill_text(void)
{
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = (uint8_t)("abcabcabcXY"[i % 11] + (i / 700));
}

/* A block of liblz4's compressor, after its 32-bit size; the bytes written. */
static size_t put_block(uint8_t *p, const uint8_t *data, size_t n)
{
    int c = LZ4_compress_default((const char *)data, (char *)p + 4, (int)n, LZ4_compressBound((int)n));
    cr_assert_gt(c, 0);
    vbts_put32(p, (uint32_t)c);
    return 4 + (size_t)c;
}

Test(lz4_legacy, frames_blocks_and_the_appended_size)
{
    fill_text();
    static uint8_t in[8192], out[4000];
    size_t k = 0;
    vbts_put32(in, LZ4_LEGACY_MAGIC);
    k = 4;
    k += put_block(in + k, text, 1000);
    k += put_block(in + k, text + 1000, 1000);
    vbts_put32(in + k, LZ4_LEGACY_MAGIC);      /* a second frame */
    k += 4;
    k += put_block(in + k, text + 2000, 1000);
    vbts_put32(in + k, sizeof(text));          /* the size the kernel build appends */
    k += 4;
    cr_assert_eq(lz4_legacy_decompress(in, k, out, sizeof(out)), 3000);
    cr_assert_eq(memcmp(out, text, 3000), 0);
    cr_assert_eq(lz4_legacy_decompress(in, k, out, 3000), 3000, "an exact buffer");
    cr_assert_eq(lz4_legacy_decompress(in, k, out, 2999), -1, "output bound");
    cr_assert_eq(lz4_legacy_decompress(in, k, out, 1500), -1, "output bound inside a block");
}

Test(lz4_legacy, refused)
{
    fill_text();
    static uint8_t in[4096], out[4000];
    vbts_put32(in, LZ4_LEGACY_MAGIC);
    size_t k = 4 + put_block(in + 4, text, 1000);
    cr_assert_eq(lz4_legacy_decompress(in, k, out, sizeof(out)), 1000);
    cr_assert_eq(lz4_legacy_decompress(in, 3, out, sizeof(out)), -1, "shorter than the magic");
    cr_assert_eq(lz4_legacy_decompress(in, 8, out, sizeof(out)), -1, "no whole block: nothing");
    /* A match 256 bytes back when 1 byte was written. */
    static const uint8_t far[] = { 0x14, 'a', 0x00, 0x01, 0x50, 'x', 'x', 'x', 'x', 'x' };
    vbts_put32(in + 4, sizeof(far));
    memcpy(in + 8, far, sizeof(far));
    cr_assert_eq(lz4_legacy_decompress(in, 8 + sizeof(far), out, sizeof(out)), -1, "match offset");
    in[10] = 1;                                /* offset 1: "a" then 8 more, then 5 literals */
    in[11] = 0;
    cr_assert_eq(lz4_legacy_decompress(in, 8 + sizeof(far), out, sizeof(out)), 14);
    cr_assert_eq(memcmp(out, "aaaaaaaaaxxxxx", 14), 0);
    vbts_put32(in, 0x12345678);
    cr_assert_eq(lz4_legacy_decompress(in, k, out, sizeof(out)), -1, "not the magic");
}
