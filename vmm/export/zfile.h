/* SPDX-License-Identifier: MIT */
/*
 * A trace file written compressed (export/zframe.h), on a thread of its
 * own: the vCPU that seals a chunk only copies it into a queue, so that
 * compressing costs tracing nothing.  The queue is bounded; a vCPU waits
 * for room rather than lose a chunk.
 */
#ifndef VBTS_EXPORT_ZFILE_H
#define VBTS_EXPORT_ZFILE_H

#include <stdint.h>

#include "vbts/format.h"

struct zfile;

/* Take over fd (header not written yet): the header's frame is written
 * now.  NULL with the error set (fd closed). */
struct zfile *zfile_open(int fd, const char *path, const struct vbts_file_header *h);
/* Queue one chunk; -1 if the file could not be written (zfile_error says why). */
int zfile_put(struct zfile *z, int cpu, uint64_t seq, const struct vbts_record *r, uint32_t n);
/* Every queued chunk written, then the fd closed: 0, or -1 with the error set. */
int zfile_close(struct zfile *z);
/* The write error ("writing trace PATH: ..."), or NULL. */
const char *zfile_error(struct zfile *z);

#endif
