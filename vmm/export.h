/* SPDX-License-Identifier: MIT */
/*
 * Trace export to sockets (--trace unix:PATH, tcp:HOST:PORT): the per-vCPU
 * buffers (export_ring.c), the control protocol's messages
 * (export_proto.c) and the server thread (export_server.c).  trace_out.c
 * seals chunks and publishes them here; docs/protocol.md describes what
 * clients see.
 */
#ifndef VBTS_EXPORT_H
#define VBTS_EXPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vbts/format.h"
#include "vbts/protocol.h"

#define EXPORT_CHUNK_MAX 4096u      /* records per sealed chunk, at most */

/*
 * One vCPU's buffer: a ring of `cap` records numbered by a per-buffer
 * sequence (the `seq` of docs/format.md for what it holds).  Records
 * [tail, head) are "in the buffer" (SIZE, GET, DRAIN see them); clients
 * still sending older ones keep them alive down to `hold` in block and drop
 * mode.  A bit per slot marks the last record of each sealed chunk, so that
 * every reader frames records exactly as the producer sealed them.
 * Everything is under `lock`.
 */
struct xring {
    pthread_mutex_t lock;
    pthread_cond_t space;           /* block mode: the producer waits here */
    struct vbts_record *rec;
    uint64_t *ends;                 /* chunk-end bit per slot */
    uint64_t cap;                   /* records */
    uint64_t origin;                /* no record below this seq is in memory */
    uint64_t head;                  /* seq of the next record */
    uint64_t tail;                  /* oldest record in the buffer */
    uint64_t hold;                  /* oldest record still needed (block, drop) */
    uint64_t lost_pending;          /* dropped, LOST marker not placed yet */
    uint64_t dropped, overwritten, cleared;
    uint64_t full_events;           /* times the buffer became full */
    bool full;
    bool finished;                  /* the vCPU will publish nothing more */
    int mode;                       /* enum vbts_overflow */
    atomic_uint chunk_max;          /* producer seals chunks of at most this */
};

int xring_init(struct xring *r, uint64_t cap, int mode);
void xring_destroy(struct xring *r);
/*
 * Producer: append n records as one chunk, waiting in block mode until
 * they fit (unless *stop becomes nonzero: then as drop mode).  Returns the
 * records stored; the others were dropped and will be counted in a LOST
 * marker.  Signals `space` waiters nobody; the caller wakes the server.
 */
uint64_t xring_publish(struct xring *r, const struct vbts_record *recs, uint64_t n,
                       const atomic_int *stop);

/* The rest is called with r->lock held. */
uint64_t xring_lo(const struct xring *r);           /* oldest seq in memory */
uint64_t xring_free(const struct xring *r);         /* room before block/drop acts */
uint64_t xring_used(const struct xring *r);         /* counts toward `full` */
/* End (exclusive) of the sealed chunk holding seq c, at most limit. */
uint64_t xring_chunk_end(const struct xring *r, uint64_t c, uint64_t limit);
const struct vbts_record *xring_at(const struct xring *r, uint64_t seq);
void xring_copy(const struct xring *r, uint64_t seq, uint64_t n, void *dst);
/* Append as one chunk, overwriting the oldest records if needed. */
void xring_append(struct xring *r, const struct vbts_record *recs, uint64_t n);
/* Place a pending LOST marker if there is room (drop mode, after the vCPU ended). */
bool xring_place_lost(struct xring *r);
/* Re-evaluate `full` after records left the buffer; true if it changed. */
void xring_update_full(struct xring *r);
/* New capacity; -1 if records that must be kept do not fit (block, drop). */
int xring_resize(struct xring *r, uint64_t cap);
uint32_t xring_chunk_max_for(uint64_t cap);

/* ---- protocol messages (export_proto.c): pure functions, fuzzed ---- */

struct xreq {
    uint16_t type;
    uint16_t cpu;
    uint32_t mask, flags, overflow;
    uint64_t value;                 /* CONFIG buffer size, GET index */
    uint16_t major, minor;          /* HELLO */
    uint32_t on;                    /* NOTIFY */
};

/*
 * Parse one request from `len` bytes.  Returns the bytes it takes (header
 * and payload) with *status VBTS_PROTO_OK or the error to reply, 0 if more
 * bytes are needed, or -1 if the connection cannot continue (*status tells
 * why: bad magic, length beyond VBTS_PROTO_MAX_REQUEST).  *type is the
 * request's type whenever the header was read.
 */
long xproto_parse(const uint8_t *buf, size_t len, struct xreq *req, int *status, uint16_t *type);
const char *xproto_strerror(int status);
/* An error reply: header and payload into out (room >= 12 + 4 + MAX_TEXT). */
size_t xproto_error(uint8_t *out, uint16_t req_type, int status, const char *text);

/* ---- the server (export_server.c) ---- */

struct export_config {
    const char *const *dests;       /* "unix:PATH", "tcp:HOST:PORT" */
    int ndests;
    uint64_t buffer_size;           /* bytes per vCPU */
    uint64_t buffer_limit;          /* bytes, all vCPUs */
    int overflow;                   /* enum vbts_overflow */
    double linger;                  /* seconds */
    bool quiet;
};

struct export;

/* Listen on every destination and start the server; NULL with the error set. */
struct export *export_open(const struct export_config *c, int ncpus, uint32_t file_flags);
/* Producer side (vCPU threads). */
uint64_t export_publish(struct export *x, int cpu, const struct vbts_record *r, uint64_t n);
uint32_t export_chunk_max(struct export *x, int cpu);
unsigned export_trace_flags(struct export *x);      /* VBTS_CFG_* */
/* The vCPU stopped: its buffer receives nothing more. */
void export_vcpu_done(struct export *x, int cpu);
/* A signal: stop waiting for clients (producers and export_finish). */
void export_interrupt(struct export *x, int sig);
/*
 * The guest ended: serve clients until block mode has delivered every
 * record, or the linger time of wrap and drop mode is over.  Returns 0, or
 * the signal number if a signal cut short a block-mode drain that still
 * had records.
 */
int export_finish(struct export *x);
/* Stop the server, remove unix socket files, print the summary. */
void export_close(struct export *x);

/* Destination syntax: 1 unix, 2 tcp, 0 a file name. */
int export_dest_kind(const char *dest);

/* For the fuzzer and unit tests: a server without sockets or thread. */
struct export *export_new_detached(int ncpus, uint64_t cap, int overflow);
/* Feed bytes as from one client; replies and data are appended to out. */
void export_detached_feed(struct export *x, const uint8_t *in, size_t len,
                          void (*out)(void *ctx, const uint8_t *p, size_t n), void *ctx);
void export_free_detached(struct export *x);

#endif
