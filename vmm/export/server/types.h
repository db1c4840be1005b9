/* SPDX-License-Identifier: MIT */
/*
 * What the server's files share: the server, its listeners and its
 * connections.  Each client has a fixed-size output queue; trace data is
 * copied into it from the vCPU rings (export/ring.c) only when a whole
 * chunk fits, so memory does not grow with a slow client: in block mode
 * the slow client holds the ring (and so the vCPU) back, which is the
 * contract; in wrap and drop mode it falls behind and gets LOST markers.
 *
 *   listen.c   the sockets clients connect to
 *   conn.c     a connection: its output queue, input, replies, lifetime
 *   feed.c     trace data from the rings into a connection's queue
 *   session.c  what a connection does: the plain stream or requests
 *   server.c   the thread, the end of the run, the API
 */
#ifndef VBTS_EXPORT_SERVER_TYPES_H
#define VBTS_EXPORT_SERVER_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/proto.h"
#include "export/ring.h"
#include "export/server/server.h"

#define OUTQ_SIZE    (256 * 1024)
#define MAX_CLIENTS  64
#define MAX_MARKS    64
#define MAX_CPUS_    1024
#define CLOSE_WAIT_S 2.0        /* after the last byte: wait this long for the client's EOF */
#define STALL_S      30.0       /* a partial request older than this closes the connection */
#define CHUNK_BYTES(n) (sizeof(struct vbts_chunk_header) + (size_t)(n) * VBTS_RECORD_SIZE)
#define MAX_CHUNK_BYTES CHUNK_BYTES(EXPORT_CHUNK_MAX)

enum cstate { C_GRACE, C_CONTROL, C_STREAM, C_CLOSING };
enum cdata { D_NONE, D_STREAM, D_DRAIN };

struct cursor {
    bool active;
    uint64_t pos;       /* next seq to queue */
    uint64_t acked;     /* records below this have left the output queue */
    uint64_t end;       /* exclusive bound (DRAIN) */
    uint64_t next_seq;  /* the client's seq for the next record */
};

struct mark {
    uint64_t off_end;   /* output byte count at which... */
    uint64_t seq_end;   /* ...records of `cpu` below this are written */
    int cpu;
};

struct conn {
    struct conn *next;
    int fd;                     /* -1: detached (tests, fuzzing) */
    enum cstate st;
    enum cdata data;
    double deadline;            /* grace end, or close deadline */
    double partial_since;       /* a partial request is waiting since */
    bool hello, notify, peer_eof, close_after_flush;
    bool watch;                 /* a tcp: client without ,control: reads only */
    bool zstd;                  /* HELLO asked for compressed STREAM data */
    bool broken;                /* a chunk could not be queued: close, the stream cut short */
    struct zframe *z;           /* STREAM data compressed: one frame per chunk, */
    uint8_t *zin;               /* built here first (MAX_CHUNK_BYTES) */
    uint8_t in[VBTS_PROTO_HDR_SIZE + VBTS_PROTO_MAX_REQUEST];
    size_t in_len;
    uint8_t *out;
    size_t out_off, out_len;
    uint64_t q_total, w_total;  /* bytes queued, bytes written */
    struct mark marks[MAX_MARKS];
    int mark_head, nmarks;
    struct cursor *cur;         /* per vCPU */
    uint64_t *seen_full;        /* per vCPU: full_events already notified */
    uint64_t drain_count;
    int rr;
};

struct listener {
    int fd;
    char *name;                 /* unix:PATH or tcp:ADDR:PORT as bound */
    char *unlink_path;
    bool control;               /* its clients may change the state */
};

struct server {
    int ncpus;
    uint32_t file_flags;
    struct ring *rings;
    struct listener *ls;
    int nls;
    struct conn *conns;
    int nconns;
    int wake_fd;
    pthread_t thread;
    bool thread_started;
    atomic_int stop_wait;       /* producers: stop waiting for room */
    atomic_int sig;             /* signal that interrupted us, or 0 */
    atomic_int ending;          /* export_finish was called */
    atomic_int quit;
    pthread_mutex_t done_lock;
    pthread_cond_t done_cond;
    bool done;
    atomic_uint trace_flags;
    int overflow;
    uint64_t buffer_size, buffer_limit;
    double linger, linger_deadline;
    bool quiet;
    uint64_t undelivered;       /* when the server ended */
    int finish_sig;
    double sig_deadline;        /* after a signal: last chance for connected clients */
    /* detached mode (tests, fuzzing): where a connection's output goes */
    void (*detached_out)(void *ctx, const uint8_t *p, size_t n);
    void *detached_ctx;
};

#endif
