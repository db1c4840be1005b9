/* SPDX-License-Identifier: MIT */
/* Trace files: header, then chunks, in the layout docs/format.md gives. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "export/file.h"
#include "vbts/le.h"

Test(file, header_and_chunk_bytes)
{
    char path[] = "/tmp/vbts-test-file.XXXXXX";
    int tmp = mkstemp(path);
    cr_assert_geq(tmp, 0);
    close(tmp);
    struct vbts_file_header h;
    file_header(&h, 2, VBTS_FILE_F_KIND);
    int fd = file_create(path, &h);
    cr_assert_geq(fd, 0, "%s", error_last());
    struct vbts_record r[2] = { { 0x10, 0x20, 0x100 }, { 0x30, 0x40, 0x200 } };
    cr_assert_eq(file_write_chunk(fd, 1, 7, r, 2), 0);
    close(fd);
    uint8_t b[256];
    fd = open(path, O_RDONLY);
    ssize_t n = read(fd, b, sizeof(b));
    close(fd);
    unlink(path);
    cr_assert_eq(n, (ssize_t)(sizeof(h) + sizeof(struct vbts_chunk_header) + 48));
    cr_assert_eq(memcmp(b, VBTS_MAGIC, VBTS_MAGIC_LEN), 0);
    const uint8_t *c = b + sizeof(h);
    cr_assert_eq(vbts_le32(c), VBTS_CHUNK_MAGIC);
    const uint8_t *rec = c + sizeof(struct vbts_chunk_header);
    cr_assert_eq(vbts_le64(rec + 24), 0x30);
    cr_assert_eq(vbts_le64(rec + 24 + 16), 0x200);
}

Test(file, cannot_create)
{
    struct vbts_file_header h;
    file_header(&h, 1, 0);
    cr_assert_eq(file_create("/nonexistent/dir/t.vbts", &h), -1);
    cr_assert_str_eq(error_last(), "cannot create trace file /nonexistent/dir/t.vbts: No such file or directory");
}
