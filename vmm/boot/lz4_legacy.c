/* SPDX-License-Identifier: MIT */
/*
 * A legacy frame is the magic, then blocks, each a 32-bit little-endian
 * compressed size and an LZ4 block of at most 8 MiB output.  Another magic
 * may start a new frame; anything that is not a plausible block ends the
 * data (the kernel's build appends the uncompressed size).  Every read and
 * write is bounds-checked: the image comes from the user.
 */
#include "boot/lz4_legacy.h"

#include "vbts/le.h"

#include <stdbool.h>
#include <string.h>

#define LEGACY_BLOCK_MAX (8u << 20)


/* A length nibble of 15 goes on in bytes, each added, until one is not 255. */
static bool more_length(const uint8_t **ip, const uint8_t *iend, size_t *n)
{
    unsigned b;
    do {
        if (*ip >= iend)
            return false;
        b = *(*ip)++;
        *n += b;
    } while (b == 255);
    return true;
}

/* One LZ4 block; returns bytes written at out, or -1. */
static long block(const uint8_t *ip, const uint8_t *iend, uint8_t *out, uint8_t *op, uint8_t *oend)
{
    uint8_t *start = op;
    while (ip < iend) {
        unsigned token = *ip++;
        size_t lit = token >> 4;
        if (lit == 15 && !more_length(&ip, iend, &lit))
            return -1;
        if (lit > (size_t)(iend - ip) || lit > (size_t)(oend - op))
            return -1;
        memcpy(op, ip, lit);
        ip += lit;
        op += lit;
        if (ip == iend)
            break;                          /* the last sequence is literals only */
        if (iend - ip < 2)
            return -1;
        size_t off = ip[0] | ip[1] << 8;
        ip += 2;
        size_t len = token & 15;
        if (len == 15 && !more_length(&ip, iend, &len))
            return -1;
        len += 4;
        if (off == 0 || off > (size_t)(op - out) || len > (size_t)(oend - op))
            return -1;
        const uint8_t *m = op - off;
        for (size_t i = 0; i < len; i++)    /* overlapping copies repeat a pattern */
            op[i] = m[i];
        op += len;
    }
    return op - start;
}

long lz4_legacy_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap)
{
    if (in_len < 4 || vbts_le32(in) != LZ4_LEGACY_MAGIC)
        return -1;
    size_t pos = 4;
    uint8_t *op = out, *oend = out + out_cap;
    while (in_len - pos >= 4) {
        uint32_t n = vbts_le32(in + pos);
        if (n == LZ4_LEGACY_MAGIC) {
            pos += 4;
            continue;
        }
        if (n == 0 || n > in_len - pos - 4 || n > LEGACY_BLOCK_MAX + LEGACY_BLOCK_MAX / 255 + 16)
            break;
        pos += 4;
        long got = block(in + pos, in + pos + n, out, op, oend);
        if (got < 0)
            return -1;
        op += got;
        pos += n;
    }
    return op == out ? -1 : (long)(op - out);
}
