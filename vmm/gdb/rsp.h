/* SPDX-License-Identifier: MIT */
/*
 * The framing of GDB's remote serial protocol: packets `$data#cs` with a
 * two-digit checksum, `+`/`-` acknowledgements (until QStartNoAckMode), and
 * the interrupt byte 0x03.  Bytes come from the client and are hostile: a
 * packet longer than RSP_MAX_PACKET is cut and flagged, never overrun.
 */
#ifndef VBTS_GDB_RSP_H
#define VBTS_GDB_RSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The payload size announced to gdb (PacketSize): it sends nothing longer. */
#define RSP_MAX_PACKET 16384

enum rsp_event {
    RSP_NONE,           /* byte taken, nothing complete */
    RSP_PACKET,         /* a packet with a good checksum: r->buf, r->len */
    RSP_BAD,            /* a packet with a bad checksum: gdb resends it after `-` */
    RSP_INTERRUPT,      /* 0x03 outside a packet: stop the target */
};

struct rsp {
    int state;
    uint8_t sum, cs;
    bool too_long;      /* the packet was longer than the buffer: cut */
    size_t len;
    char buf[RSP_MAX_PACKET + 1];   /* the packet's data, NUL-terminated */
};

void rsp_init(struct rsp *r);
/* One byte from the client. */
enum rsp_event rsp_feed(struct rsp *r, uint8_t c);

/*
 * `$data#cs` into out, escaping `#`, `$`, `}` and `*` as the protocol's
 * binary data needs; the length, or 0 if it does not fit in cap.
 */
size_t rsp_frame(const void *data, size_t len, char *out, size_t cap);

/*
 * Undo the escapes of binary data (X packets), in place; the new length.
 * A `}` as the last byte is dropped.
 */
size_t rsp_unescape(char *data, size_t len);

/* A hex digit's value, -1 if c is none. */
int rsp_hexdigit(uint8_t c);
/* Hex digit pairs to bytes: how many were decoded (stops at the first non-pair). */
size_t rsp_unhex(const char *hex, size_t nhex, uint8_t *out, size_t cap);
/* Bytes to lowercase hex with a NUL; returns the number of characters. */
size_t rsp_hex(const void *data, size_t len, char *out);

#endif
