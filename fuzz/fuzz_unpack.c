/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: hostile kernel payloads into the unpacker the Linux
 * loader uses (vmm/boot/unpack.c), every format it knows by magic: gzip,
 * bzip2, lzma, xz, lzop, LZ4 legacy frames (the framing is ours,
 * vmm/boot/lz4_legacy.c), zstd, and an uncompressed ELF.  Input: u16
 * output capacity (little-endian), then the payload.  The output buffer is
 * exactly that big, so ASan sees a byte more; what fits in N bytes must
 * come out the same with exactly N.  One exception: liblz4 keeps its
 * end-of-block margins (the last match 12 bytes, literals 5 bytes from the
 * end of the buffer), so an LZ4 block that breaks them may be refused
 * with an exact buffer, never decoded differently.
 */
#include "fuzz.h"

#include "boot/unpack.h"
#include "vbts/le.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t cap = vbts_le16(data);
    const uint8_t *in = data + 2;
    size_t n = size - 2;
    /* The payload alone, exactly as big: the unpacker must not read past it. */
    uint8_t *copy = malloc(n ? n : 1), *out = malloc(cap ? cap : 1), *again = NULL;
    if (!copy || !out)
        abort();
    memcpy(copy, in, n);
    enum unpack_format f = unpack_detect(copy, n);
    fuzz_check(unpack_format_name(f) != NULL, "no name for format %d", (int)f);
    long got = unpack_payload(f, copy, n, out, cap);
    fuzz_check(got == -1 || (got >= 0 && (size_t)got <= cap), "%ld bytes into %zu", got, cap);
    fuzz_check(f != UNPACK_UNKNOWN || got == -1, "unknown format unpacked to %ld bytes", got);
    if (got > 0 && (size_t)got < cap) {
        again = malloc((size_t)got);
        if (!again)
            abort();
        long exact = unpack_payload(f, copy, n, again, (size_t)got);
        fuzz_check((exact == got && !memcmp(out, again, (size_t)got)) ||
                   (f == UNPACK_LZ4 && exact == -1), "%s: not the same with an exact buffer",
                   unpack_format_name(f));
    }
    free(again);
    free(out);
    free(copy);
    return 0;
}
