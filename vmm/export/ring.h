/* SPDX-License-Identifier: MIT */
/*
 * One vCPU's socket buffer: a ring of records with chunk boundaries, the
 * three overflow modes (block: the producer waits; wrap: the oldest go;
 * drop: the newest go, counted for a LOST marker).  The server thread
 * (export/server/) reads it; the vCPU thread publishes into it.
 */
#ifndef VBTS_EXPORT_RING_H
#define VBTS_EXPORT_RING_H

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
struct ring {
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
    bool stop_pending;              /* the vCPU's STOP, to follow that marker */
    struct vbts_record stop_rec;
    uint64_t dropped, overwritten, cleared;
    uint64_t full_events;           /* times the buffer became full */
    bool full;
    bool finished;                  /* the vCPU will publish nothing more */
    int mode;                       /* enum vbts_overflow */
    atomic_uint chunk_max;          /* producer seals chunks of at most this */
};

int ring_init(struct ring *r, uint64_t cap, int mode);
void ring_destroy(struct ring *r);
/*
 * Producer: append n records as one chunk, waiting in block mode until
 * they fit (unless *stop becomes nonzero: then as drop mode).  Returns the
 * records stored; the others were dropped and will be counted in a LOST
 * marker.  Signals `space` waiters nobody; the caller wakes the server.
 */
uint64_t ring_publish(struct ring *r, const struct vbts_record *recs, uint64_t n,
                       const atomic_int *stop);

/* The rest is called with r->lock held. */
uint64_t ring_lo(const struct ring *r);           /* oldest seq in memory */
uint64_t ring_free(const struct ring *r);         /* room before block/drop acts */
uint64_t ring_used(const struct ring *r);         /* counts toward `full` */
/* End (exclusive) of the sealed chunk holding seq c, at most limit. */
uint64_t ring_chunk_end(const struct ring *r, uint64_t c, uint64_t limit);
const struct vbts_record *ring_at(const struct ring *r, uint64_t seq);
void ring_copy(const struct ring *r, uint64_t seq, uint64_t n, void *dst);
/* Append as one chunk, overwriting the oldest records if needed. */
void ring_append(struct ring *r, const struct vbts_record *recs, uint64_t n);
/* Place a pending LOST marker, then a pending STOP, as room allows (drop mode,
 * after the vCPU ended). */
bool ring_place_lost(struct ring *r);
/* Re-evaluate `full` after records left the buffer; true if it changed. */
void ring_update_full(struct ring *r);
/* New capacity; -1 if records that must be kept do not fit (block, drop). */
int ring_resize(struct ring *r, uint64_t cap);
uint32_t ring_chunk_max_for(uint64_t cap);

#endif
