/* SPDX-License-Identifier: MIT */
/*
 * A bzImage's payload, unpacked on the host with each format's own library
 * (zlib, libbz2, liblzma, liblzo2, liblz4, libzstd): every compression the
 * Linux boot protocol allows, and an uncompressed vmlinux.  boot/linux.c
 * uses it because the kernel's own decompressor is slow where CPL0 code is
 * emulated (about two minutes on kvm_pvm).
 *
 * The payload is the user's file: every length is checked, the output is
 * bounded by the caller, and bytes after the compressed stream (the build
 * appends the uncompressed size) are not read.
 */
#ifndef VBTS_BOOT_UNPACK_H
#define VBTS_BOOT_UNPACK_H

#include <stddef.h>
#include <stdint.h>

enum unpack_format {
    UNPACK_UNKNOWN,
    UNPACK_NONE,        /* an ELF: CONFIG_KERNEL_UNCOMPRESSED */
    UNPACK_GZIP,
    UNPACK_BZIP2,
    UNPACK_LZMA,        /* the "lzma alone" format of `lzma -9` */
    UNPACK_XZ,
    UNPACK_LZO,         /* an lzop file */
    UNPACK_LZ4,         /* LZ4 legacy frames (boot/lz4_legacy.h) */
    UNPACK_ZSTD,
};

/* The format by its first bytes, as the kernel's decompressor tells them. */
enum unpack_format unpack_detect(const uint8_t *in, size_t len);
/* "gzip", "xz", ...; "unknown" for UNPACK_UNKNOWN. */
const char *unpack_format_name(enum unpack_format f);
/*
 * Decompress the stream at `in` into `out`, at most out_cap bytes.  The
 * number of bytes written, or -1 if the input is not a whole well-formed
 * stream of format f, or does not fit.
 */
long unpack_payload(enum unpack_format f, const uint8_t *in, size_t in_len, uint8_t *out,
                    size_t out_cap);

#endif
