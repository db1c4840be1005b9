/* SPDX-License-Identifier: MIT */
/*
 * libvbtsdecode client side of the control protocol (docs/protocol.md):
 * connect to a monitor's trace socket, say HELLO, send requests and read
 * replies, notifications and chunks.  Reads are exact (no read-ahead), so
 * after STREAM the socket can be handed to vbts_reader_new().
 */
#ifndef VBTS_CLIENT_H
#define VBTS_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <vbts/format.h>
#include <vbts/protocol.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VBTS_CLIENT_MAX_MSG   (1u << 20)   /* longest server message accepted */
#define VBTS_CLIENT_MAX_CHUNK (1u << 20)   /* most records in one chunk accepted */

/* 1 for "unix:PATH" and "tcp:HOST:PORT" (or tcp:PORT), 0 for anything else. */
int vbts_is_socket_addr(const char *addr);
/* A connected socket, or -1 with a message in err. */
int vbts_socket_connect(const char *addr, char *err, size_t errlen);

struct vbts_client;

/* Connect and say HELLO; NULL with a message in err. */
struct vbts_client *vbts_client_open(const char *addr, char *err, size_t errlen);
/*
 * The same with HELLO options (VBTS_HELLO_ZSTD: STREAM data comes as zstd
 * frames, which vbts_reader_new() reads as it reads a .zst file).  A
 * monitor that does not know an option refuses the connection.
 */
struct vbts_client *vbts_client_open_opts(const char *addr, uint32_t options, char *err,
                                          size_t errlen);
void vbts_client_close(struct vbts_client *c);
int vbts_client_fd(const struct vbts_client *c);
uint32_t vbts_client_ncpus(const struct vbts_client *c);
uint32_t vbts_client_file_flags(const struct vbts_client *c);

enum vbts_item_kind { VBTS_ITEM_MSG = 1, VBTS_ITEM_CHUNK = 2 };

/* One thing the server sent; payload/records stay valid until the next read. */
struct vbts_item {
    int kind;
    uint16_t type;                  /* message type */
    uint32_t length;                /* payload bytes */
    const uint8_t *payload;
    uint32_t status;                /* replies: first payload field */
    const char *text;               /* error replies: NUL-terminated message */
    struct vbts_chunk_header chunk; /* chunks: header (host order) */
    const uint8_t *records;         /* chunks: count * 24 bytes, little-endian */
};

int vbts_client_send(struct vbts_client *c, uint16_t type, const void *payload, uint32_t len);
/* 1: *it holds the next item; 0: the server closed; -1: error in err. */
int vbts_client_read(struct vbts_client *c, struct vbts_item *it, char *err, size_t errlen);
/*
 * Send a request and read up to its reply: 0 and *it is the reply (status
 * OK), or -1 with the server's error text or an I/O error in err.  Chunks
 * and notifications before the reply go to on_item if it is not NULL.
 */
int vbts_client_call(struct vbts_client *c, uint16_t type, const void *payload, uint32_t len,
                     struct vbts_item *it, char *err, size_t errlen,
                     int (*on_item)(void *ctx, const struct vbts_item *it), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
