/* SPDX-License-Identifier: MIT */
#include "boot/image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot/linux.h"
#include "boot/multiboot.h"
#include "core/error.h"

int image_read_file(const char *path, uint8_t **data, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return error_fail_errno("cannot open %s", path);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        if (e == 0 || S_ISDIR(st.st_mode))
            return error_fail("%s: not a regular file", path);
        errno = e;
        return error_fail_errno("cannot stat %s", path);
    }
    uint8_t *buf = malloc(st.st_size ? st.st_size : 1);
    if (!buf) {
        close(fd);
        return error_fail("%s: cannot allocate %lld bytes", path, (long long)st.st_size);
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            free(buf);
            close(fd);
            errno = e;
            return error_fail_errno("cannot read %s", path);
        }
        got += r;
    }
    close(fd);
    *data = buf;
    *size = got;
    return 0;
}

enum image_kind image_detect(const uint8_t *image, size_t size)
{
    /* Multiboot first: a bzImage may carry a multiboot header too. */
    if (multiboot_detect(image, size))
        return IMAGE_MULTIBOOT;
    if (linux_detect(image, size))
        return IMAGE_LINUX;
    return IMAGE_UNKNOWN;
}

int image_elf_class(const uint8_t *image, size_t size)
{
    if (size < 5 || memcmp(image, "\177ELF", 4))
        return 0;
    return image[4] == 1 ? 32 : image[4] == 2 ? 64 : 0;
}
