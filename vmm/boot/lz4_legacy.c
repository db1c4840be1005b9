/* SPDX-License-Identifier: MIT */
/*
 * A legacy frame is the magic, then blocks, each a 32-bit little-endian
 * compressed size and an independent LZ4 block of at most 8 MiB output,
 * which liblz4 decodes.  Another magic may start a new frame; anything that
 * is not a plausible block ends the data (the kernel's build appends the
 * uncompressed size).  The framing is read here, bounds-checked: the image
 * comes from the user.
 */
#include "boot/lz4_legacy.h"

#include <lz4.h>

#include "vbts/le.h"

#define LEGACY_BLOCK_MAX (8u << 20)

long lz4_legacy_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap)
{
    if (in_len < 4 || vbts_le32(in) != LZ4_LEGACY_MAGIC)
        return -1;
    size_t pos = 4, done = 0;
    while (in_len - pos >= 4) {
        uint32_t n = vbts_le32(in + pos);
        if (n == LZ4_LEGACY_MAGIC) {
            pos += 4;
            continue;
        }
        if (n == 0 || n > in_len - pos - 4 || n > (uint32_t)LZ4_compressBound(LEGACY_BLOCK_MAX))
            break;
        pos += 4;
        size_t room = out_cap - done < LEGACY_BLOCK_MAX ? out_cap - done : LEGACY_BLOCK_MAX;
        int got = LZ4_decompress_safe((const char *)in + pos, (char *)out + done, (int)n, (int)room);
        if (got < 0)
            return -1;
        done += (size_t)got;
        pos += n;
    }
    return done == 0 ? -1 : (long)done;
}
