/* SPDX-License-Identifier: MIT */
/* Trace files: header, then chunks, in the layout docs/format.md gives. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
    int fd = file_create(path, &h, true);
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
    cr_assert_eq(file_create("/nonexistent/dir/t.vbts", &h, false), -1);
    cr_assert_str_eq(error_last(), "cannot create trace file /nonexistent/dir/t.vbts: No such file or directory");
}

/* Private, never through a link, an existing file only when asked. */
Test(file, private_no_follow_no_clobber)
{
    char dir[] = "/tmp/vbts-test-dir.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64], link[64], msg[200];
    snprintf(path, sizeof(path), "%s/t.vbts", dir);
    snprintf(link, sizeof(link), "%s/l.vbts", dir);
    struct vbts_file_header h;
    file_header(&h, 1, 0);
    mode_t old = umask(0);
    int fd = file_create(path, &h, false);
    umask(old);
    cr_assert_geq(fd, 0, "%s", error_last());
    close(fd);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(file_create(path, &h, false), -1);
    snprintf(msg, sizeof(msg), "cannot create trace file %s: it exists (--force replaces it)", path);
    cr_assert_str_eq(error_last(), msg);
    chmod(path, 0644);
    fd = file_create(path, &h, true);
    cr_assert_geq(fd, 0, "%s", error_last());
    close(fd);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "a replaced file is made private");
    cr_assert_eq(symlink(path, link), 0);
    for (int force = 0; force < 2; force++) {
        cr_assert_eq(file_create(link, &h, force), -1);
        snprintf(msg, sizeof(msg), "cannot create trace file %s: it %s", link,
                 force ? "is a symbolic link" : "exists (--force replaces it)");
        cr_assert_str_eq(error_last(), msg);
    }
    unlink(link);
    unlink(path);
    rmdir(dir);
}

/* --force makes a new file: a hard link at the trace's name leaves the file it links to as it was. */
Test(file, replace_does_not_empty_a_hard_link)
{
    char dir[] = "/tmp/vbts-test-dir.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char victim[64], path[64];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(path, sizeof(path), "%s/t.vbts", dir);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("precious\n", f);
    fclose(f);
    chmod(victim, 0644);
    cr_assert_eq(link(victim, path), 0);
    struct vbts_file_header h;
    file_header(&h, 1, 0);
    int fd = file_create(path, &h, true);
    cr_assert_geq(fd, 0, "%s", error_last());
    close(fd);
    struct stat sv, st;
    cr_assert_eq(stat(victim, &sv), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(sv.st_size, 9, "the linked file was emptied");
    cr_assert_eq(sv.st_mode & 0777, 0644, "the linked file's mode changed");
    cr_assert_neq(sv.st_ino, st.st_ino);
    cr_assert_eq(sv.st_nlink, 1);
    cr_assert_eq(st.st_size, (off_t)sizeof(h));
    cr_assert_eq(st.st_mode & 0777, 0600);
    unlink(path);
    unlink(victim);
    rmdir(dir);
}
