/* SPDX-License-Identifier: MIT */
/* Trace data from the vCPU rings into a connection's queue, and what the rings may let go. */
#include <string.h>

#include "export/server/conn.h"
#include "export/server/feed.h"

/*
 * With r->lock held: in block and drop mode, records every streaming client
 * has been sent leave the buffer; the buffer keeps what any client still
 * sends.  Wakes a producer waiting for room.  Watchers (tcp: without
 * ,control) count for neither: they cannot hold the guest, and records
 * that leave before they are sent become a LOST marker in their stream.
 */
void feed_recompute(struct server *x, int cpu)
{
    struct ring *r = &x->rings[cpu];
    uint64_t lo = ring_lo(r);
    if (r->mode != VBTS_OVERFLOW_WRAP) {
        uint64_t m = UINT64_MAX;
        for (struct conn *c = x->conns; c; c = c->next)
            if (c->data == D_STREAM && !c->watch && c->cur[cpu].active && c->cur[cpu].acked < m)
                m = c->cur[cpu].acked;
        if (m != UINT64_MAX && m > r->tail) {
            if (m > r->head)
                m = r->head;
            r->tail = m;
        }
    }
    uint64_t hold = r->tail;
    for (struct conn *c = x->conns; c; c = c->next)
        if (c->data != D_NONE && !c->watch && c->cur[cpu].active && c->cur[cpu].acked < hold)
            hold = c->cur[cpu].acked;
    if (hold < lo)
        hold = lo;
    if (hold != r->hold) {
        r->hold = hold;
        pthread_cond_broadcast(&r->space);
    }
    ring_update_full(r);
    if (r->finished && (r->lost_pending || r->stop_pending))
        ring_place_lost(r);
}

void feed_recompute_all(struct server *x)
{
    for (int i = 0; i < x->ncpus; i++) {
        pthread_mutex_lock(&x->rings[i].lock);
        feed_recompute(x, i);
        pthread_mutex_unlock(&x->rings[i].lock);
    }
}

/* Queue what fits of cpu's records for a stream or a drain; true if all sent. */
static bool fill_cpu(struct server *x, struct conn *c, int cpu)
{
    struct cursor *k = &c->cur[cpu];
    if (!k->active)
        return true;
    struct ring *r = &x->rings[cpu];
    bool all = false;
    pthread_mutex_lock(&r->lock);
    uint64_t limit = c->data == D_DRAIN ? k->end : r->head;
    if (limit > r->head)
        limit = r->head;
    /* Records the buffer no longer has for this client: a LOST marker. */
    uint64_t floor = c->data == D_STREAM ? r->tail : ring_lo(r);
    if (floor > limit)
        floor = limit;
    if (k->pos < floor && conn_chunk_fits(c, CHUNK_BYTES(1)) && c->nmarks < MAX_MARKS) {
        uint8_t *p = conn_chunk_begin(c, CHUNK_BYTES(1));
        struct vbts_chunk_header h = { .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu,
                                       .count = 1, .seq = k->next_seq };
        struct vbts_record m = vbts_marker(VBTS_MARK_LOST, floor - k->pos, 0);
        memcpy(p, &h, sizeof(h));
        memcpy(p + sizeof(h), &m, sizeof(m));
        conn_chunk_end(c, CHUNK_BYTES(1));
        k->next_seq++;
        k->pos = floor;
        if (c->data == D_STREAM)
            conn_push_mark(c, cpu, k->pos);
        else
            k->acked = k->pos;
    }
    while (k->pos >= floor && k->pos < limit && c->nmarks < MAX_MARKS) {
        uint64_t e = ring_chunk_end(r, k->pos, limit);
        if (e - k->pos > EXPORT_CHUNK_MAX)
            e = k->pos + EXPORT_CHUNK_MAX;
        uint64_t n = e - k->pos;
        if (!conn_chunk_fits(c, CHUNK_BYTES(n)))
            break;
        uint8_t *p = conn_chunk_begin(c, CHUNK_BYTES(n));
        struct vbts_chunk_header h = { .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu,
                                       .count = (uint32_t)n, .seq = k->next_seq };
        memcpy(p, &h, sizeof(h));
        ring_copy(r, k->pos, n, p + sizeof(h));
        conn_chunk_end(c, CHUNK_BYTES(n));
        k->next_seq += n;
        k->pos = e;
        if (c->data == D_STREAM) {
            conn_push_mark(c, cpu, k->pos);
        } else {
            k->acked = k->pos;
            c->drain_count += n;
        }
    }
    if (c->data == D_DRAIN) {
        all = k->pos >= limit;
        feed_recompute(x, cpu);
    } else {
        all = r->finished && !r->lost_pending && !r->stop_pending && k->pos == r->head;
    }
    pthread_mutex_unlock(&r->lock);
    return all;
}

/* True when every vCPU's records are queued (and, for a stream, the trace ended). */
bool feed_fill(struct server *x, struct conn *c)
{
    bool all = true;
    for (int i = 0; i < x->ncpus; i++) {
        int cpu = (c->rr + i) % x->ncpus;
        if (!fill_cpu(x, c, cpu))
            all = false;
    }
    c->rr = (c->rr + 1) % x->ncpus;
    return all;
}

void feed_start(struct server *x, struct conn *c, enum cdata d, int only)
{
    c->data = d;
    for (int i = 0; i < x->ncpus; i++) {
        struct cursor *k = &c->cur[i];
        memset(k, 0, sizeof(*k));
        if (only >= 0 && i != only)
            continue;
        struct ring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        k->active = true;
        k->pos = k->acked = k->next_seq = r->tail;
        k->end = r->head;
        if (d == D_DRAIN)
            r->tail = r->head;      /* the buffer is empty from now on */
        feed_recompute(x, i);
        pthread_mutex_unlock(&r->lock);
    }
}

void feed_start_stream(struct server *x, struct conn *c)
{
    c->st = C_STREAM;
    conn_file_header(x, c);
    feed_start(x, c, D_STREAM, -1);
}

