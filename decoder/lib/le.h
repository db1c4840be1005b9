/* SPDX-License-Identifier: MIT */
/*
 * Little-endian loads and stores.  The format is little-endian on every
 * host, so the structs of format.h are never copied to or from bytes as is.
 */
#ifndef VBTS_LE_H
#define VBTS_LE_H

#include <stdint.h>

static inline uint16_t vbts_le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t vbts_le32(const unsigned char *p)
{
    return (uint32_t)vbts_le16(p) | (uint32_t)vbts_le16(p + 2) << 16;
}

static inline uint64_t vbts_le64(const unsigned char *p)
{
    return (uint64_t)vbts_le32(p) | (uint64_t)vbts_le32(p + 4) << 32;
}

static inline void vbts_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void vbts_put32(unsigned char *p, uint32_t v)
{
    vbts_put16(p, (uint16_t)v);
    vbts_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void vbts_put64(unsigned char *p, uint64_t v)
{
    vbts_put32(p, (uint32_t)v);
    vbts_put32(p + 4, (uint32_t)(v >> 32));
}

#endif
