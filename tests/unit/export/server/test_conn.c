/* SPDX-License-Identifier: MIT */
/* A connection's output queue: room, reservation, and marks that say which records left. */
#include <criterion/criterion.h>
#include <string.h>

#include "export/server/conn.h"
#include "export/server/feed.h"
#include "export/server/listen.h"

struct sink_buf {
    size_t n;
};

static void count(void *ctx, const uint8_t *p, size_t n)
{
    (void)p;
    ((struct sink_buf *)ctx)->n += n;
}

Test(conn, queue_room_and_flush)
{
    struct server *x = server_new_detached(1, 100, VBTS_OVERFLOW_WRAP);
    cr_assert_not_null(x);
    struct conn *c = conn_new(x, -1, 0);
    cr_assert_not_null(c);
    cr_assert_eq(conn_out_room(c), OUTQ_SIZE);
    uint8_t b[100];
    memset(b, 1, sizeof(b));
    conn_out_put(c, b, sizeof(b));
    cr_assert_eq(conn_out_room(c), OUTQ_SIZE - 100);
    conn_reply_error(c, VBTS_MSG_GET, VBTS_PROTO_E_RANGE, "index 5 out of range");
    struct sink_buf out = { 0 };
    x->detached_out = count;
    x->detached_ctx = &out;
    cr_assert_eq(conn_flush(x, c), 0);
    cr_assert_gt(out.n, 100 + VBTS_PROTO_HDR_SIZE);
    cr_assert_eq(conn_out_room(c), OUTQ_SIZE, "everything went out: the queue is empty again");
    conn_free(x, c);
    server_free_detached(x);
}

Test(conn, marks_coalesce_per_cpu)
{
    struct server *x = server_new_detached(2, 100, VBTS_OVERFLOW_WRAP);
    struct conn *c = conn_new(x, -1, 0);
    conn_out_put(c, "abcd", 4);
    conn_push_mark(c, 0, 10);
    conn_out_put(c, "ef", 2);
    conn_push_mark(c, 0, 12);
    cr_assert_eq(c->nmarks, 1, "consecutive chunks of one vCPU are one mark");
    conn_push_mark(c, 1, 3);
    cr_assert_eq(c->nmarks, 2);
    cr_assert_eq(c->marks[c->mark_head].seq_end, 12);
    conn_free(x, c);
    server_free_detached(x);
}
