/* SPDX-License-Identifier: MIT */
/*
 * Little-endian loads and stores: the one copy, for the monitor, the
 * decoder and the clients.  Trace files, protocol messages, page tables
 * and descriptor tables are little-endian whatever the host, so structs
 * are never copied to or from their bytes as is.
 */
#ifndef VBTS_LE_H
#define VBTS_LE_H

#include <stdint.h>

static inline uint16_t vbts_le16(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t vbts_le32(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint32_t)vbts_le16(b) | (uint32_t)vbts_le16(b + 2) << 16;
}

static inline uint64_t vbts_le64(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return (uint64_t)vbts_le32(b) | (uint64_t)vbts_le32(b + 4) << 32;
}

static inline void vbts_put16(void *p, uint16_t v)
{
    unsigned char *b = (unsigned char *)p;
    b[0] = (unsigned char)v;
    b[1] = (unsigned char)(v >> 8);
}

static inline void vbts_put32(void *p, uint32_t v)
{
    unsigned char *b = (unsigned char *)p;
    vbts_put16(b, (uint16_t)v);
    vbts_put16(b + 2, (uint16_t)(v >> 16));
}

static inline void vbts_put64(void *p, uint64_t v)
{
    unsigned char *b = (unsigned char *)p;
    vbts_put32(b, (uint32_t)v);
    vbts_put32(b + 4, (uint32_t)(v >> 32));
}

#endif
