/* SPDX-License-Identifier: MIT */
/*
 * Encoders for writers (the monitor, tests, other tools): they emit the
 * little-endian bytes whatever the host, and fill reserved fields with 0
 * so that a writer cannot produce what the reader rejects.
 */
#include <string.h>
#include <vbts/decode.h>
#include "vbts/le.h"

size_t vbts_encode_file_header(void *buf, uint32_t flags, uint32_t ncpus)
{
    unsigned char *p = buf;

    memcpy(p, VBTS_MAGIC, VBTS_MAGIC_LEN);
    vbts_put16(p + 8, VBTS_VERSION_MAJOR);
    vbts_put16(p + 10, VBTS_VERSION_MINOR);
    vbts_put32(p + 12, sizeof(struct vbts_file_header));
    vbts_put32(p + 16, VBTS_RECORD_SIZE);
    vbts_put32(p + 20, flags);
    vbts_put32(p + 24, ncpus);
    vbts_put32(p + 28, 0);
    return sizeof(struct vbts_file_header);
}

size_t vbts_encode_chunk_header(void *buf, uint16_t cpu, uint32_t count, uint64_t seq)
{
    unsigned char *p = buf;

    vbts_put32(p, VBTS_CHUNK_MAGIC);
    vbts_put16(p + 4, cpu);
    vbts_put16(p + 6, 0);
    vbts_put32(p + 8, count);
    vbts_put32(p + 12, 0);
    vbts_put64(p + 16, seq);
    return sizeof(struct vbts_chunk_header);
}

size_t vbts_encode_record(void *buf, const struct vbts_record *rec)
{
    unsigned char *p = buf;

    vbts_put64(p, rec->from);
    vbts_put64(p + 8, rec->to);
    vbts_put64(p + 16, rec->flags);
    return VBTS_RECORD_SIZE;
}
