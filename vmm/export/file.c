/* SPDX-License-Identifier: MIT */
#include "export/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/error.h"

static int write_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        ssize_t w = writev(fd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (cnt > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

void file_header(struct vbts_file_header *h, uint32_t ncpus, uint32_t flags)
{
    *h = (struct vbts_file_header){
        .version_major = VBTS_VERSION_MAJOR, .version_minor = VBTS_VERSION_MINOR,
        .header_size = sizeof(*h), .record_size = VBTS_RECORD_SIZE,
        .flags = flags, .ncpus = ncpus,
    };
    memcpy(h->magic, VBTS_MAGIC, VBTS_MAGIC_LEN);
}

int file_create(const char *path, const struct vbts_file_header *h, bool replace)
{
    /* A trace shows what the guest and its users ran: private by default.
     * O_NOFOLLOW: a link planted where the trace goes must not redirect a
     * monitor that often runs as root. */
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    struct stat st;
    if (replace && lstat(path, &st) == 0) {
        if (S_ISREG(st.st_mode)) {
            /* A new file, not the old one emptied: the name may be a hard
             * link to a file that is not the user's to empty.  If another
             * appears meanwhile, O_EXCL refuses it. */
            if (unlink(path) < 0 && errno != ENOENT)
                return error_fail_errno("cannot replace trace file %s", path);
        } else if (S_ISLNK(st.st_mode)) {
            return error_fail("cannot create trace file %s: it is a symbolic link", path);
        } else {
            flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC;  /* a device or FIFO, written as it is */
        }
    }
    int fd = open(path, flags, 0600);
    if (fd < 0 && errno == EEXIST)
        return error_fail("cannot create trace file %s: it exists (--force replaces it)", path);
    if (fd < 0 && errno == ELOOP)
        return error_fail("cannot create trace file %s: it is a symbolic link", path);
    if (fd < 0)
        return error_fail_errno("cannot create trace file %s", path);
    if (h && file_write(fd, h, sizeof(*h)) < 0) {
        error_fail_errno("writing trace %s", path);
        close(fd);
        return -1;
    }
    return fd;
}

int file_write(int fd, const void *p, size_t n)
{
    struct iovec iov = { (void *)p, n };
    return write_all(fd, &iov, 1);
}

int file_write_chunk(int fd, int cpu, uint64_t seq, const struct vbts_record *r, uint32_t n)
{
    struct vbts_chunk_header h = {
        .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu, .count = n, .seq = seq,
    };
    struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)r, (size_t)n * sizeof(*r) } };
    return write_all(fd, iov, 2);
}
