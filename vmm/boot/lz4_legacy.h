/* SPDX-License-Identifier: MIT */
/*
 * LZ4 "legacy" frames (magic 0x184c2102, `lz4 -l`), the format Debian's
 * x86 kernels compress their payload with.  boot/linux.c unpacks the
 * payload on the host, because the kernel's own decompressor is slow where
 * CPL0 code is emulated (minutes on kvm_pvm).
 */
#ifndef VBTS_BOOT_LZ4_LEGACY_H
#define VBTS_BOOT_LZ4_LEGACY_H

#include <stddef.h>
#include <stdint.h>

#define LZ4_LEGACY_MAGIC 0x184c2102u

/*
 * Decompress `in` into `out` (at most out_cap bytes).  Returns the number of
 * bytes written, or -1 if the input is not well-formed or does not fit.
 */
long lz4_legacy_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap);

#endif
