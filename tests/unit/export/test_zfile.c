/* SPDX-License-Identifier: MIT */
/* A compressed trace file: the header's frame at once, chunks in order from another thread. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "core/error.h"
#include "export/ring.h"
#include "export/zfile.h"

static struct vbts_file_header header(void)
{
    struct vbts_file_header h = { .version_major = VBTS_VERSION_MAJOR, .header_size = sizeof(h),
                                  .record_size = VBTS_RECORD_SIZE, .ncpus = 2 };
    memcpy(h.magic, VBTS_MAGIC, VBTS_MAGIC_LEN);
    return h;
}

Test(zfile, decompresses_to_the_plain_bytes)
{
    int fd = memfd_create("zfile", 0), dup_fd = dup(fd);
    struct vbts_file_header h = header();
    struct zfile *z = zfile_open(fd, "t.zst", &h);
    cr_assert_not_null(z, "%s", error_last());
    static struct vbts_record r[EXPORT_CHUNK_MAX];
    /* More chunks than the queue holds: the producer waits, nothing is lost. */
    size_t want = sizeof(h);
    for (int k = 0; k < 40; k++) {
        uint32_t n = k % 3 == 0 ? EXPORT_CHUNK_MAX : (uint32_t)k;
        for (uint32_t i = 0; i < n; i++)
            r[i] = (struct vbts_record){ 0x1000 + i, 0x2000 + (uint64_t)k, 0 };
        cr_assert_eq(zfile_put(z, k & 1, (uint64_t)k, r, n), 0);
        want += sizeof(struct vbts_chunk_header) + n * sizeof(r[0]);
    }
    cr_assert_null(zfile_error(z));
    cr_assert_eq(zfile_close(z), 0, "%s", error_last());
    off_t len = lseek(dup_fd, 0, SEEK_END);
    unsigned char *packed = malloc((size_t)len), *plain = malloc(want + 1);
    cr_assert_eq(pread(dup_fd, packed, (size_t)len, 0), len);
    cr_assert_lt((size_t)len, want / 20);
    size_t got = ZSTD_decompress(plain, want + 1, packed, (size_t)len);
    cr_assert(!ZSTD_isError(got), "%s", ZSTD_getErrorName(got));
    cr_assert_eq(got, want);
    cr_assert_arr_eq(plain, &h, sizeof(h));
    /* Chunk k: its header (cpu k&1, seq k), then its records, in put order. */
    const unsigned char *p = plain + sizeof(h);
    for (int k = 0; k < 40; k++) {
        struct vbts_chunk_header c;
        memcpy(&c, p, sizeof(c));
        cr_assert_eq(c.magic, VBTS_CHUNK_MAGIC);
        cr_assert_eq(c.cpu, k & 1);
        cr_assert_eq(c.seq, (uint64_t)k);
        p += sizeof(c) + c.count * sizeof(r[0]);
    }
    cr_assert_eq(p, plain + want);
    free(packed);
    free(plain);
    close(dup_fd);
}

Test(zfile, unwritable_file_said_at_open)
{
    int fd = open("/dev/full", O_WRONLY);
    cr_assert_geq(fd, 0);
    struct vbts_file_header h = header();
    cr_assert_null(zfile_open(fd, "full.zst", &h));
    cr_assert_str_eq(error_last(), "writing trace full.zst: No space left on device");
    cr_assert_eq(zfile_close(NULL), 0);
}

Test(zfile, write_error_after_open_is_kept)
{
    signal(SIGPIPE, SIG_IGN);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    struct vbts_file_header h = header();
    struct zfile *z = zfile_open(p[1], "gone.zst", &h);
    cr_assert_not_null(z, "%s", error_last());
    close(p[0]);                /* the reader goes: every later write fails */
    static struct vbts_record r[EXPORT_CHUNK_MAX];
    int failed_at = -1;
    for (int k = 0; k < 100 && failed_at < 0; k++) {
        r[0].from = (uint64_t)k;
        if (zfile_put(z, 0, (uint64_t)k * EXPORT_CHUNK_MAX, r, EXPORT_CHUNK_MAX) < 0)
            failed_at = k;
        else
            usleep(1000);
    }
    cr_assert_geq(failed_at, 1, "a put after the failure says so");
    cr_assert_str_eq(zfile_error(z), "writing trace gone.zst: Broken pipe");
    cr_assert_eq(zfile_close(z), -1);
    cr_assert_str_eq(error_last(), "writing trace gone.zst: Broken pipe");
}
