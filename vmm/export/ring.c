/* SPDX-License-Identifier: MIT */
/*
 * Per-vCPU trace buffers for socket clients, and the three overflow
 * behaviours: block (the producer waits for room), wrap (the oldest
 * records are overwritten), drop (the newest records are discarded and
 * counted; a LOST marker takes their place once there is room).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/ring.h"

uint32_t ring_chunk_max_for(uint64_t cap)
{
    return cap < EXPORT_CHUNK_MAX ? (uint32_t)cap : EXPORT_CHUNK_MAX;
}

int ring_init(struct ring *r, uint64_t cap, int mode)
{
    memset(r, 0, sizeof(*r));
    if (cap == 0 || cap > (SIZE_MAX / 2) / sizeof(struct vbts_record))
        return -1;
    r->rec = malloc(cap * sizeof(*r->rec));
    r->ends = calloc((cap + 63) / 64, sizeof(*r->ends));
    if (!r->rec || !r->ends) {
        free(r->rec);
        free(r->ends);
        return -1;
    }
    r->cap = cap;
    r->mode = mode;
    atomic_init(&r->chunk_max, ring_chunk_max_for(cap));
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->space, &ca);
    pthread_condattr_destroy(&ca);
    return 0;
}

void ring_destroy(struct ring *r)
{
    if (!r->rec)
        return;
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->space);
    free(r->rec);
    free(r->ends);
    r->rec = NULL;
    r->ends = NULL;
}

uint64_t ring_lo(const struct ring *r)
{
    uint64_t lo = r->head > r->cap ? r->head - r->cap : 0;
    return lo > r->origin ? lo : r->origin;
}

uint64_t ring_used(const struct ring *r)
{
    return r->head - (r->mode == VBTS_OVERFLOW_WRAP ? r->tail : r->hold);
}

uint64_t ring_free(const struct ring *r)
{
    uint64_t used = r->head - r->hold;
    return used >= r->cap ? 0 : r->cap - used;
}

static void set_end(struct ring *r, uint64_t seq, bool end)
{
    uint64_t slot = seq % r->cap;
    if (end)
        r->ends[slot / 64] |= 1ull << (slot % 64);
    else
        r->ends[slot / 64] &= ~(1ull << (slot % 64));
}

static bool is_end(const struct ring *r, uint64_t seq)
{
    uint64_t slot = seq % r->cap;
    return r->ends[slot / 64] >> (slot % 64) & 1;
}

uint64_t ring_chunk_end(const struct ring *r, uint64_t c, uint64_t limit)
{
    if (limit > r->head)
        limit = r->head;
    while (c < limit) {
        uint64_t slot = c % r->cap;
        uint64_t word = r->ends[slot / 64] >> (slot % 64);
        uint64_t span = 64 - slot % 64;
        if (span > r->cap - slot)
            span = r->cap - slot;
        if (span < 64)
            word &= (1ull << span) - 1;
        if (word) {
            uint64_t e = c + (uint64_t)__builtin_ctzll(word) + 1;
            return e < limit ? e : limit;
        }
        c += span;
    }
    return limit;
}

const struct vbts_record *ring_at(const struct ring *r, uint64_t seq)
{
    return &r->rec[seq % r->cap];
}

void ring_copy(const struct ring *r, uint64_t seq, uint64_t n, void *dst)
{
    uint64_t slot = seq % r->cap;
    uint64_t first = n < r->cap - slot ? n : r->cap - slot;
    memcpy(dst, &r->rec[slot], first * sizeof(*r->rec));
    if (n > first)
        memcpy((char *)dst + first * sizeof(*r->rec), r->rec, (n - first) * sizeof(*r->rec));
}

static void mark_full(struct ring *r)
{
    if (!r->full) {
        r->full = true;
        r->full_events++;
    }
}

static void note_full(struct ring *r)
{
    if (ring_used(r) >= r->cap)
        mark_full(r);
}

void ring_update_full(struct ring *r)
{
    if (!r->full)
        return;
    if (r->mode == VBTS_OVERFLOW_WRAP ? ring_used(r) < r->cap
                                      : ring_free(r) >= atomic_load(&r->chunk_max))
        r->full = false;
}

/* Append without ending the chunk. */
static void put(struct ring *r, const struct vbts_record *recs, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t slot = r->head % r->cap;
        r->rec[slot] = recs[i];
        set_end(r, r->head, false);
        r->head++;
    }
    uint64_t lo = ring_lo(r);
    if (r->tail < lo) {
        r->overwritten += lo - r->tail;
        r->tail = lo;
        mark_full(r);
    }
    if (r->hold < lo)
        r->hold = lo;
}

void ring_append(struct ring *r, const struct vbts_record *recs, uint64_t n)
{
    if (n == 0)
        return;
    put(r, recs, n);
    set_end(r, r->head - 1, true);
    note_full(r);
}

static void put_lost(struct ring *r)
{
    struct vbts_record m = vbts_marker(VBTS_MARK_LOST, r->lost_pending, 0);
    put(r, &m, 1);
    r->lost_pending = 0;
}

bool ring_place_lost(struct ring *r)
{
    bool placed = false;
    if (r->lost_pending && (r->mode == VBTS_OVERFLOW_WRAP || ring_free(r) > 0)) {
        put_lost(r);
        placed = true;
    }
    if (!r->lost_pending && r->stop_pending &&
        (r->mode == VBTS_OVERFLOW_WRAP || ring_free(r) > 0)) {
        put(r, &r->stop_rec, 1);
        r->stop_pending = false;
        placed = true;
    }
    if (placed) {
        set_end(r, r->head - 1, true);
        note_full(r);
    }
    return placed;
}

static void wait_space(struct ring *r)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 100 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->space, &r->lock, &ts);
}

uint64_t ring_publish(struct ring *r, const struct vbts_record *recs, uint64_t n,
                       const atomic_int *stop)
{
    uint64_t stored = 0;
    pthread_mutex_lock(&r->lock);
    while (n > 0) {
        uint64_t lp = r->lost_pending ? 1 : 0;
        if (r->mode == VBTS_OVERFLOW_WRAP) {
            if (lp)
                put_lost(r);
            uint64_t k = n;
            if (k > r->cap) {       /* only the newest can survive anyway */
                r->overwritten += k - r->cap;
                recs += k - r->cap;
                k = r->cap;
            }
            put(r, recs, k);
            set_end(r, r->head - 1, true);
            stored += k;
            n = 0;
            break;
        }
        uint64_t need = n + lp < r->cap ? n + lp : r->cap;
        if (r->mode == VBTS_OVERFLOW_BLOCK && !atomic_load(stop) && ring_free(r) < need) {
            mark_full(r);
            wait_space(r);
            continue;           /* the mode may have changed meanwhile */
        }
        /* Room enough, or drop mode, or block mode told to stop waiting. */
        bool blocking = r->mode == VBTS_OVERFLOW_BLOCK && !atomic_load(stop);
        uint64_t space = ring_free(r);
        bool placed = false;
        if (lp && space > 0) {
            put_lost(r);
            space--;
            lp = 0;
            placed = true;
        }
        uint64_t k = lp ? 0 : (n < space ? n : space);
        if (k)
            put(r, recs, k);
        if (k || placed)
            set_end(r, r->head - 1, true);
        stored += k;
        recs += k;
        n -= k;
        if (n > 0 && !blocking) {
            /* A STOP that does not fit waits for room after the LOST
             * marker: without it no reader would know the stream ended. */
            const struct vbts_record *last = &recs[n - 1];
            if (vbts_record_is_marker(last) && vbts_marker_qual(last) == VBTS_MARK_STOP) {
                r->stop_rec = *last;
                r->stop_pending = true;
                n--;
            }
            r->lost_pending += n;
            r->dropped += n;
            mark_full(r);
            break;
        }
    }
    note_full(r);
    pthread_mutex_unlock(&r->lock);
    return stored;
}

int ring_resize(struct ring *r, uint64_t cap)
{
    if (cap == r->cap)
        return 0;
    uint64_t keep_from = r->mode == VBTS_OVERFLOW_WRAP ? r->tail : r->hold;
    if (r->head - keep_from > cap) {
        if (r->mode != VBTS_OVERFLOW_WRAP) {
            errno = EBUSY;
            return -1;
        }
        keep_from = r->head - cap;
    }
    if (cap > (SIZE_MAX / 2) / sizeof(struct vbts_record)) {
        errno = ENOMEM;
        return -1;
    }
    struct vbts_record *rec = malloc(cap * sizeof(*rec));
    uint64_t *ends = calloc((cap + 63) / 64, sizeof(*ends));
    if (!rec || !ends) {
        free(rec);
        free(ends);
        errno = ENOMEM;
        return -1;
    }
    for (uint64_t s = keep_from; s < r->head; s++) {
        uint64_t slot = s % cap;
        rec[slot] = *ring_at(r, s);
        if (is_end(r, s))
            ends[slot / 64] |= 1ull << (slot % 64);
    }
    free(r->rec);
    free(r->ends);
    r->rec = rec;
    r->ends = ends;
    r->cap = cap;
    r->origin = keep_from;
    if (r->tail < keep_from) {
        r->overwritten += keep_from - r->tail;
        r->tail = keep_from;
    }
    if (r->hold < keep_from)
        r->hold = keep_from;
    atomic_store(&r->chunk_max, ring_chunk_max_for(cap));
    r->full = false;
    note_full(r);
    pthread_cond_broadcast(&r->space);
    return 0;
}
