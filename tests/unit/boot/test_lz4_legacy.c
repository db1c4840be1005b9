/* SPDX-License-Identifier: MIT */
/* LZ4 legacy frames, as Debian's kernels compress their payload. */
#include <criterion/criterion.h>
#include <string.h>

#include "boot/lz4_legacy.h"
#include "vbts/le.h"

Test(lz4_legacy, frames)
{
    /* "abcabcabcabcXY": 3 literals, a 9-byte match at offset 3, 2 final literals. */
    static const uint8_t blk[] = { 0x35, 'a', 'b', 'c', 0x03, 0x00, 0x20, 'X', 'Y' };
    uint8_t in[4 + 4 + sizeof(blk) + 4], out[32];
    vbts_put32(in, LZ4_LEGACY_MAGIC);
    vbts_put32(in + 4, sizeof(blk));
    memcpy(in + 8, blk, sizeof(blk));
    vbts_put32(in + 8 + sizeof(blk), 14);     /* the size the kernel build appends */
    long n = lz4_legacy_decompress(in, sizeof(in), out, sizeof(out));
    cr_assert_eq(n, 14);
    cr_assert_eq(memcmp(out, "abcabcabcabcXY", 14), 0);
    cr_assert_eq(lz4_legacy_decompress(in, sizeof(in), out, 10), -1, "output bound");
    in[8 + 4] = 0x09;                    /* offset beyond what was written */
    cr_assert_eq(lz4_legacy_decompress(in, sizeof(in), out, sizeof(out)), -1);
    vbts_put32(in, 0x12345678);
    cr_assert_eq(lz4_legacy_decompress(in, sizeof(in), out, sizeof(out)), -1);
}
