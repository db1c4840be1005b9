/* SPDX-License-Identifier: MIT */
/* Trace files (docs/format.md): the header once, then sealed chunks as they come. */
#ifndef VBTS_EXPORT_FILE_H
#define VBTS_EXPORT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vbts/format.h"

/* The file header of a trace with ncpus vCPUs. */
void file_header(struct vbts_file_header *h, uint32_t ncpus, uint32_t flags);
/* Create `path` (0600; an existing file only if `replace`, never through a
 * symbolic link) and write the header h (none if NULL): the fd, or -1 with
 * the error set. */
int file_create(const char *path, const struct vbts_file_header *h, bool replace);
/* n bytes, whole (short writes and EINTR retried).  -1 with errno set. */
int file_write(int fd, const void *p, size_t n);
/* One chunk: header and records.  -1 with errno set. */
int file_write_chunk(int fd, int cpu, uint64_t seq, const struct vbts_record *r, uint32_t n);

#endif
