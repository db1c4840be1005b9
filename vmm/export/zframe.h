/* SPDX-License-Identifier: MIT */
/*
 * Compressed traces (docs/format.md): the usual bytes as zstd frames, the
 * file header in one, then one per chunk, so that a file cut off anywhere
 * loses at most its last chunk and `zstd -d` gives the plain file back.
 * Trace files ending in .zst (export/zfile.c) and socket streams a client
 * asked to compress (export/server/) are written this way.
 */
#ifndef VBTS_EXPORT_ZFRAME_H
#define VBTS_EXPORT_ZFRAME_H

#include <stdbool.h>
#include <stddef.h>

struct zframe;

/* A compressor, its memory taken now for inputs up to max_in bytes; NULL: out of memory. */
struct zframe *zframe_new(size_t max_in);
void zframe_free(struct zframe *z);
/* Room one frame of n bytes may need. */
size_t zframe_bound(size_t n);
/* n bytes at src as one frame at dst (cap bytes): its size, or 0 if it failed. */
size_t zframe_pack(struct zframe *z, void *dst, size_t cap, const void *src, size_t n);
/* True for a path whose trace is written compressed: its name ends in ".zst". */
bool zframe_wanted(const char *path);

#endif
