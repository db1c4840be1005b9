/* SPDX-License-Identifier: MIT */
/* One zstd frame per call, that zstd itself reads back; which names are compressed. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "export/zframe.h"

Test(zframe, frames_zstd_reads_back)
{
    enum { N = 96 * 1024 };
    struct zframe *z = zframe_new(N);
    cr_assert_not_null(z);
    unsigned char *in = malloc(N), *out = malloc(zframe_bound(N)), *back = malloc(N);
    for (size_t i = 0; i < N; i++)
        in[i] = (unsigned char)(i * 7 / 24);
    size_t all = 0;
    for (size_t n = 0; n <= N; n = n ? n * 4 : 1) {
        size_t got = zframe_pack(z, out, zframe_bound(n), in, n);
        cr_assert_gt(got, 0, "%zu bytes", n);
        cr_assert_eq(ZSTD_findFrameCompressedSize(out, got), got, "one whole frame");
        cr_assert_eq(ZSTD_getFrameContentSize(out, got), n, "its size in its header");
        cr_assert_eq(ZSTD_decompress(back, N, out, got), n);
        cr_assert_arr_eq(back, in, n);
        all += got;
    }
    cr_assert_lt(all, N / 4, "regular records pack small");
    cr_assert_eq(zframe_pack(z, out, 8, in, N), 0, "no room: 0, not a short frame");
    zframe_free(z);
    zframe_free(NULL);
    free(in);
    free(out);
    free(back);
}

Test(zframe, checksummed)
{
    struct zframe *z = zframe_new(64);
    unsigned char in[64] = { 1, 2, 3 }, out[256], back[64];
    size_t got = zframe_pack(z, out, sizeof(out), in, sizeof(in));
    out[got - 1] ^= 1;
    cr_assert(ZSTD_isError(ZSTD_decompress(back, sizeof(back), out, got)), "a flipped bit is caught");
    zframe_free(z);
}

Test(zframe, wanted_by_name)
{
    cr_assert(zframe_wanted("t.vbts.zst"));
    cr_assert(zframe_wanted("dir/x.zst"));
    cr_assert_not(zframe_wanted(".zst"), "a name that is only the suffix");
    cr_assert_not(zframe_wanted("t.vbts"));
    cr_assert_not(zframe_wanted("t.ZST"));
    cr_assert_not(zframe_wanted("t.zst.vbts"));
}
