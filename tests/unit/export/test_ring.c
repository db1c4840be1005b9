/* SPDX-License-Identifier: MIT */
/* A vCPU's socket buffer in each overflow mode. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "export/ring.h"

static struct vbts_record rec(uint64_t i)
{
    struct vbts_record r = { 0x1000 + i, 0x2000 + i, (uint64_t)VBTS_KIND_JMP << 8 };
    return r;
}

static void publish_n(struct ring *r, uint64_t from, uint64_t n)
{
    static const atomic_int no_stop;
    struct vbts_record b[64];
    for (uint64_t i = 0; i < n; i++)
        b[i] = rec(from + i);
    ring_publish(r, b, n, &no_stop);
}

Test(ring, wrap_keeps_newest_and_frames)
{
    struct ring r;
    cr_assert_eq(ring_init(&r, 10, VBTS_OVERFLOW_WRAP), 0);
    cr_assert_eq(atomic_load(&r.chunk_max), 10);
    for (uint64_t i = 0; i < 30; i += 3)
        publish_n(&r, i, 3);
    cr_assert_eq(r.head, 30);
    cr_assert_eq(r.tail, 20);
    cr_assert_eq(r.overwritten, 20);
    cr_assert(r.full);
    cr_assert_eq(r.full_events, 1);
    cr_assert_eq(ring_at(&r, 29)->from, 0x1000 + 29);
    cr_assert_eq(ring_at(&r, 20)->from, 0x1000 + 20);
    /* Chunks as sealed: ...,[18,21),[21,24),[24,27),[27,30). */
    cr_assert_eq(ring_chunk_end(&r, 20, 30), 21);
    cr_assert_eq(ring_chunk_end(&r, 21, 30), 24);
    cr_assert_eq(ring_chunk_end(&r, 27, 30), 30);
    cr_assert_eq(ring_chunk_end(&r, 24, 26), 26);
    ring_destroy(&r);
}

Test(ring, drop_counts_and_places_lost_at_the_gap)
{
    struct ring r;
    cr_assert_eq(ring_init(&r, 8, VBTS_OVERFLOW_DROP), 0);
    publish_n(&r, 0, 5);
    publish_n(&r, 5, 5);    /* 3 fit, 2 dropped */
    publish_n(&r, 10, 4);   /* all dropped: no room for the marker */
    cr_assert_eq(r.head, 8);
    cr_assert_eq(r.dropped, 6);
    cr_assert_eq(r.lost_pending, 6);
    cr_assert(r.full);
    /* A client took 4 records: the marker goes first, then what fits. */
    r.tail = r.hold = 4;
    publish_n(&r, 14, 5);
    cr_assert_eq(r.head, 12);
    const struct vbts_record *m = ring_at(&r, 8);
    cr_assert(vbts_record_is_marker(m));
    cr_assert_eq(vbts_marker_qual(m), VBTS_MARK_LOST);
    cr_assert_eq(m->to, 6);
    cr_assert_eq(ring_at(&r, 9)->from, 0x1000 + 14);
    cr_assert_eq(r.lost_pending, 2);
    cr_assert_eq(r.dropped, 8);
    /* The vCPU ended; room appears: the last marker is placed. */
    r.finished = true;
    r.tail = r.hold = 12;
    cr_assert(ring_place_lost(&r));
    cr_assert_eq(ring_at(&r, 12)->to, 2);
    cr_assert_eq(r.lost_pending, 0);
    ring_destroy(&r);
}

struct blocker {
    struct ring *r;
    atomic_int done;
};

static void *block_producer(void *arg)
{
    struct blocker *b = arg;
    publish_n(b->r, 4, 4);
    atomic_store(&b->done, 1);
    return NULL;
}

Test(ring, block_waits_for_room)
{
    struct ring r;
    cr_assert_eq(ring_init(&r, 6, VBTS_OVERFLOW_BLOCK), 0);
    publish_n(&r, 0, 4);
    struct blocker b = { &r, 0 };
    pthread_t t;
    pthread_create(&t, NULL, block_producer, &b);
    usleep(150 * 1000);
    cr_assert_eq(atomic_load(&b.done), 0, "4 records do not fit in 2 free slots");
    pthread_mutex_lock(&r.lock);
    cr_assert(r.full);
    r.tail = r.hold = 2;
    pthread_cond_broadcast(&r.space);
    pthread_mutex_unlock(&r.lock);
    pthread_join(t, NULL);
    cr_assert_eq(r.head, 8);
    cr_assert_eq(r.dropped, 0);
    ring_destroy(&r);
}

Test(ring, resize)
{
    struct ring r;
    cr_assert_eq(ring_init(&r, 8, VBTS_OVERFLOW_DROP), 0);
    publish_n(&r, 0, 6);
    errno = 0;
    cr_assert_eq(ring_resize(&r, 4), -1);
    cr_assert_eq(errno, EBUSY);
    cr_assert_eq(ring_resize(&r, 100), 0);
    cr_assert_eq(ring_at(&r, 5)->from, 0x1005);
    cr_assert_eq(ring_chunk_end(&r, 0, r.head), 6);
    r.mode = VBTS_OVERFLOW_WRAP;
    cr_assert_eq(ring_resize(&r, 4), 0);
    cr_assert_eq(r.tail, 2);
    cr_assert_eq(ring_at(&r, 2)->from, 0x1002);
    ring_destroy(&r);
}
