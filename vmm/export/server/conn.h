/* SPDX-License-Identifier: MIT */
/* A connection: its output queue and marks, input, replies, lifetime. */
#ifndef VBTS_EXPORT_SERVER_CONN_H
#define VBTS_EXPORT_SERVER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/server/types.h"

struct conn *conn_new(struct server *x, int fd, double now);
void conn_free(struct server *x, struct conn *c);
size_t conn_out_room(struct conn *c);
uint8_t *conn_out_reserve(struct conn *c, size_t n);
void conn_out_put(struct conn *c, const void *p, size_t n);
/*
 * Trace bytes (the file header, a chunk) go through these, so that a
 * connection that asked for compression gets them as one zstd frame:
 * whether n bytes fit in the queue, where to build them, and then queued.
 */
bool conn_chunk_fits(struct conn *c, size_t n);
uint8_t *conn_chunk_begin(struct conn *c, size_t n);
void conn_chunk_end(struct conn *c, size_t n);
/* Compress this connection's stream from now on: -1 if out of memory. */
int conn_compress(struct conn *c);
void conn_push_mark(struct conn *c, int cpu, uint64_t seq_end);
int conn_flush(struct server *x, struct conn *c);
void conn_reply(struct conn *c, uint16_t type, const uint8_t *payload, uint32_t len);
void conn_reply_error(struct conn *c, uint16_t type, int status, const char *text);
void conn_file_header(struct server *x, struct conn *c);
void conn_close_after(struct conn *c);
void conn_closing(struct conn *c, double now);
int conn_readable(struct conn *c);

#endif
