/* SPDX-License-Identifier: MIT */
/*
 * libvbtsdecode: read a vbts trace stream (docs/format.md) incrementally,
 * from a file, a pipe, a socket or memory, and encode its headers.
 *
 * Every call that can fail returns a negative enum vbts_error; the reader
 * keeps the byte offset at which the offending item starts
 * (vbts_reader_offset) so that tools can point at it.
 *
 * A compressed trace (zstd frames, as vbts writes a FILE.zst or a
 * compressed socket stream) is told by its magic and read the same way;
 * offsets then count the stream's decompressed bytes.  Only whole frames
 * count: a stream cut off inside a frame ends where that frame began.
 */
#ifndef VBTS_DECODE_H
#define VBTS_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <vbts/format.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VBTS_DECODE_VERSION "0.1.0"

enum vbts_error {
    VBTS_ERR_IO = -1,            /* read(2) failed; errno tells why */
    VBTS_ERR_NOMEM = -2,         /* out of memory */
    VBTS_ERR_INVAL = -3,         /* invalid argument */
    VBTS_ERR_AGAIN = -4,         /* non-blocking fd has no data yet; retry */
    VBTS_ERR_BAD_MAGIC = -5,     /* not a vbts stream */
    VBTS_ERR_VERSION = -6,       /* version_major is not 1 */
    VBTS_ERR_HEADER_SIZE = -7,   /* header_size < 32 */
    VBTS_ERR_RECORD_SIZE = -8,   /* record_size != 24 */
    VBTS_ERR_TRUNC_HEADER = -9,  /* stream ends inside the file header */
    VBTS_ERR_CHUNK_MAGIC = -10,  /* chunk header does not start with "VCHK" */
    VBTS_ERR_CPU = -11,          /* chunk cpu >= ncpus */
    VBTS_ERR_RESERVED = -12,     /* a reserved (must be zero) field is not 0 */
    VBTS_ERR_TRUNC_CHUNK = -13,  /* stream ends inside a chunk header */
    VBTS_ERR_TRUNC_RECORD = -14, /* stream ends before count records */
    VBTS_ERR_SEQ_GAP = -15,      /* chunk seq > previous seq + count */
    VBTS_ERR_SEQ_BACK = -16,     /* chunk seq < previous seq + count */
    VBTS_ERR_ZSTD = -17,         /* a compressed stream's frame is corrupt */
};

/* One record of the stream, with what its position and bits mean. */
struct vbts_event {
    struct vbts_record rec; /* raw record, in host byte order */
    uint64_t offset;        /* byte offset of the record in the stream */
    uint64_t seq;           /* per-vCPU sequence number of this record */
    uint16_t cpu;           /* vCPU index */
    uint8_t is_marker;      /* 1: rec is a marker (from == 0, flags bit 63) */
    uint8_t qualifier;      /* marker: enum vbts_mark_qual; branch: 0 */
    uint8_t kind;           /* branch with VBTS_FILE_F_KIND: enum vbts_kind; else 0 */
    uint64_t aux;           /* marker: 48-bit aux; branch: 0 */
};

/*
 * A branch record as vbts_reader_branches() stores it, for arrays: a fixed
 * 40-byte layout (python/vbts mirrors it as a NumPy dtype).
 */
struct vbts_branch {
    uint64_t from;
    uint64_t to;
    uint64_t flags;         /* the record's third qword as written */
    uint64_t seq;           /* per-vCPU sequence number */
    uint16_t cpu;           /* vCPU index */
    uint8_t kind;           /* as in struct vbts_event */
    uint8_t reserved[5];    /* 0 */
};

struct vbts_reader;

/* Read from fd (not closed by vbts_reader_free).  NULL with errno on failure. */
struct vbts_reader *vbts_reader_new(int fd);
/* Read from size bytes at buf, which must outlive the reader. */
struct vbts_reader *vbts_reader_new_mem(const void *buf, size_t size);
void vbts_reader_free(struct vbts_reader *r);

/* Read and check the file header if not done yet; 0 or a vbts_error. */
int vbts_reader_header(struct vbts_reader *r, struct vbts_file_header *hdr);
/* 1: *ev is the next record; 0: clean end of stream; < 0: vbts_error. */
int vbts_reader_next(struct vbts_reader *r, struct vbts_event *ev);
/*
 * Branch records in bulk: up to max of those vbts_reader_next() would
 * return next, into out.  Stops before a marker, at the end of the stream
 * or at an error, and reads the fd only while it has stored nothing, so a
 * live stream gives what has come; vbts_reader_next() then returns what
 * stopped it (the marker, 0, or the error).  Returns how many it stored.
 */
size_t vbts_reader_branches(struct vbts_reader *r, struct vbts_branch *out, size_t max);
/* After an error: where the offending item starts; else bytes consumed. */
uint64_t vbts_reader_offset(const struct vbts_reader *r);
/* Bytes next() can use without read(2): below 48, next() may block. */
size_t vbts_reader_buffered(const struct vbts_reader *r);

/* Static English message for a vbts_error (or "success" for 0). */
const char *vbts_strerror(int err);
/* Names as used by vbts-decode; NULL for values the format does not define. */
const char *vbts_kind_name(unsigned kind);
const char *vbts_marker_name(unsigned qualifier);
const char *vbts_stop_reason_name(unsigned reason);

/* Little-endian encoders for writers; each returns the bytes written. */
size_t vbts_encode_file_header(void *buf, uint32_t flags, uint32_t ncpus);
size_t vbts_encode_chunk_header(void *buf, uint16_t cpu, uint32_t count, uint64_t seq);
size_t vbts_encode_record(void *buf, const struct vbts_record *rec);

#ifdef __cplusplus
}
#endif

#endif
