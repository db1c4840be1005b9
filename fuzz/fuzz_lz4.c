/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: hostile LZ4 legacy frames into the decompressor the
 * Linux loader unpacks kernels with (vmm/boot/lz4_legacy.c).  Input: u16
 * output capacity (little-endian), then the frame.  The output buffer is
 * exactly that big, so ASan sees a byte more; what fits in N bytes must
 * come out the same with exactly N.
 */
#include "fuzz.h"

#include "boot/lz4_legacy.h"
#include "vbts/le.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t cap = vbts_le16(data);
    const uint8_t *in = data + 2;
    size_t n = size - 2;
    uint8_t *out = malloc(cap ? cap : 1), *again = NULL;
    if (!out)
        abort();
    long got = lz4_legacy_decompress(in, n, out, cap);
    fuzz_check(got == -1 || (got > 0 && (size_t)got <= cap), "%ld bytes into %zu", got, cap);
    if (got > 0 && (size_t)got < cap) {
        again = malloc((size_t)got);
        if (!again)
            abort();
        fuzz_check(lz4_legacy_decompress(in, n, again, (size_t)got) == got &&
                   !memcmp(out, again, (size_t)got), "not the same with an exact buffer");
    }
    free(again);
    free(out);
    return 0;
}
