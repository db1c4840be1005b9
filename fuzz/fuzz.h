/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target shares.  The targets are plain C that gcc builds
 * too: libFuzzer runs them under clang (`make fuzz`), fuzz/replay.c runs
 * their corpora with the ordinary compiler (`make test`, `make check`).
 */
#ifndef VBTS_FUZZ_H
#define VBTS_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* memfd_create; fuzz.h comes first in every target */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * A finding: a message for the reader of the crash log, then abort().  To
 * fd 2 itself: a target may point stdio's stderr elsewhere to silence the
 * code it fuzzes.
 */
#define fuzz_check(cond, ...)                                           \
    do {                                                                \
        if (!(cond)) {                                                  \
            dprintf(STDERR_FILENO, "fuzz: check failed: %s: ", #cond);  \
            dprintf(STDERR_FILENO, __VA_ARGS__);                        \
            dprintf(STDERR_FILENO, "\n");                               \
            abort();                                                    \
        }                                                               \
    } while (0)

/*
 * The bytes as a file for APIs that take a path: a memfd, named by
 * /proc/self/fd (nothing left on disk if the run dies).  The fd, to close,
 * or -1.
 */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
