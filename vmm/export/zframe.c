/* SPDX-License-Identifier: MIT */
#include "export/zframe.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* zstd's default level: on trace records it runs at hundreds of MB/s, far
 * above what a vCPU records, and packs a Linux window about 150 to 1. */
#define ZFRAME_LEVEL 3

struct zframe {
    ZSTD_CCtx *cctx;
};

struct zframe *zframe_new(size_t max_in)
{
    struct zframe *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    z->cctx = ZSTD_createCCtx();
    if (!z->cctx ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, ZFRAME_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1))) {
        zframe_free(z);
        return NULL;
    }
    /* One frame of the largest input now: zstd sizes its workspace on
     * first use, and later frames (in a sandbox) then allocate nothing. */
    size_t cap = zframe_bound(max_in);
    void *in = calloc(1, max_in ? max_in : 1), *out = malloc(cap);
    size_t n = in && out ? zframe_pack(z, out, cap, in, max_in) : 0;
    free(in);
    free(out);
    if (!n) {
        zframe_free(z);
        return NULL;
    }
    return z;
}

void zframe_free(struct zframe *z)
{
    if (!z)
        return;
    ZSTD_freeCCtx(z->cctx);
    free(z);
}

size_t zframe_bound(size_t n)
{
    return ZSTD_compressBound(n);
}

size_t zframe_pack(struct zframe *z, void *dst, size_t cap, const void *src, size_t n)
{
    size_t got = ZSTD_compress2(z->cctx, dst, cap, src, n);
    return ZSTD_isError(got) ? 0 : got;
}

bool zframe_wanted(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && !strcmp(path + n - 4, ".zst");
}
