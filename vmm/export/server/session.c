/* SPDX-License-Identifier: MIT */
/*
 * What a connection does.  A client that says nothing for
 * VBTS_PROTO_GRACE_MS gets the plain trace stream; one that starts with a
 * HELLO gets a control session: STATUS, CONFIG, SIZE, GET, CLEAR, DRAIN,
 * STREAM and NOTIFY (docs/protocol.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "export/server/conn.h"
#include "export/server/feed.h"
#include "export/server/session.h"

static size_t max_reply(struct server *x)
{
    return VBTS_PROTO_HDR_SIZE + VBTS_STATUS_REPLY_HEAD + (size_t)VBTS_STATUS_REPLY_CPU * x->ncpus +
           VBTS_PROTO_HDR_SIZE + 4 + VBTS_PROTO_MAX_TEXT;
}

static int check_cpu(struct server *x, uint16_t cpu, bool all_ok)
{
    if (cpu == VBTS_PROTO_ALL_CPUS && all_ok)
        return 0;
    return cpu < x->ncpus ? 0 : -1;
}

static void do_status(struct server *x, struct conn *c)
{
    size_t len = VBTS_STATUS_REPLY_HEAD + (size_t)VBTS_STATUS_REPLY_CPU * x->ncpus;
    uint8_t *p = conn_out_reserve(c, VBTS_PROTO_HDR_SIZE + len);
    vbts_msg_header(p, VBTS_MSG_STATUS | VBTS_MSG_REPLY, (uint32_t)len);
    p += VBTS_PROTO_HDR_SIZE;
    vbts_put32(p, VBTS_PROTO_OK);
    vbts_put32(p + 4, (uint32_t)x->ncpus);
    vbts_put32(p + 8, (uint32_t)x->overflow);
    vbts_put32(p + 12, atomic_load(&x->trace_flags));
    vbts_put32(p + 16, atomic_load(&x->ending) ? 1 : 0);
    vbts_put32(p + 20, (uint32_t)x->nconns);
    vbts_put64(p + 24, x->buffer_size);
    vbts_put64(p + 32, x->buffer_limit);
    p += VBTS_STATUS_REPLY_HEAD;
    for (int i = 0; i < x->ncpus; i++, p += VBTS_STATUS_REPLY_CPU) {
        struct ring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        vbts_put64(p, r->head - r->tail);
        vbts_put64(p + 8, r->cap);
        vbts_put64(p + 16, r->head);
        vbts_put64(p + 24, r->dropped);
        vbts_put64(p + 32, r->overwritten);
        vbts_put64(p + 40, r->cleared);
        vbts_put32(p + 48, r->full);
        vbts_put32(p + 52, r->finished);
        pthread_mutex_unlock(&r->lock);
    }
}

static void do_config(struct server *x, struct conn *c, const struct proto_req *q)
{
    if (q->mask & VBTS_CONFIG_BUFFER_SIZE) {
        uint64_t cap = q->value / VBTS_RECORD_SIZE;
        if (cap == 0 || q->value > x->buffer_limit / (uint64_t)x->ncpus) {
            char t[VBTS_PROTO_MAX_TEXT];
            snprintf(t, sizeof(t), "buffer size %llu: %s (one record, 24 bytes, to %llu bytes "
                     "per vCPU: the buffer limit)", (unsigned long long)q->value,
                     cap == 0 ? "too small" : "beyond the buffer limit",
                     (unsigned long long)(x->buffer_limit / (uint64_t)x->ncpus));
            conn_reply_error(c, q->type, VBTS_PROTO_E_LIMIT, t);
            return;
        }
        for (int i = 0; i < x->ncpus; i++) {
            struct ring *r = &x->rings[i];
            pthread_mutex_lock(&r->lock);
            int rc = ring_resize(r, cap);
            int e = errno;
            uint64_t held = r->head - r->hold;
            if (rc == 0)
                feed_recompute(x, i);
            pthread_mutex_unlock(&r->lock);
            if (rc < 0) {
                char t[VBTS_PROTO_MAX_TEXT];
                if (e == EBUSY) {
                    snprintf(t, sizeof(t), "vCPU %d's buffer holds %llu records, more than %llu; "
                             "DRAIN or CLEAR it first", i, (unsigned long long)held,
                             (unsigned long long)cap);
                    conn_reply_error(c, q->type, VBTS_PROTO_E_BUSY, t);
                } else {
                    conn_reply_error(c, q->type, VBTS_PROTO_E_NOMEM, NULL);
                }
                return;
            }
        }
        x->buffer_size = cap * VBTS_RECORD_SIZE;
    }
    if (q->mask & VBTS_CONFIG_OVERFLOW) {
        x->overflow = (int)q->overflow;
        for (int i = 0; i < x->ncpus; i++) {
            struct ring *r = &x->rings[i];
            pthread_mutex_lock(&r->lock);
            r->mode = x->overflow;
            feed_recompute(x, i);
            pthread_cond_broadcast(&r->space);
            pthread_mutex_unlock(&r->lock);
        }
    }
    if (q->mask & VBTS_CONFIG_FLAGS)
        atomic_store(&x->trace_flags, q->flags);
    uint8_t p[VBTS_CONFIG_REPLY_SIZE] = { 0 };
    vbts_put32(p + 4, atomic_load(&x->trace_flags));
    vbts_put32(p + 8, (uint32_t)x->overflow);
    vbts_put64(p + 16, x->buffer_size);
    conn_reply(c, VBTS_MSG_CONFIG, p, sizeof(p));
}

static void do_count(struct server *x, struct conn *c, const struct proto_req *q)
{
    uint64_t n = 0;
    for (int i = 0; i < x->ncpus; i++) {
        if (q->cpu != VBTS_PROTO_ALL_CPUS && q->cpu != i)
            continue;
        struct ring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        n += r->head - r->tail;
        if (q->type == VBTS_MSG_CLEAR) {
            r->cleared += r->head - r->tail;
            r->tail = r->head;
            feed_recompute(x, i);
        }
        pthread_mutex_unlock(&r->lock);
    }
    uint8_t p[VBTS_COUNT_REPLY_SIZE] = { 0 };
    vbts_put64(p + 4, n);
    conn_reply(c, q->type, p, sizeof(p));
}

static void do_get(struct server *x, struct conn *c, const struct proto_req *q)
{
    struct ring *r = &x->rings[q->cpu];
    uint8_t p[VBTS_GET_REPLY_SIZE] = { 0 };
    pthread_mutex_lock(&r->lock);
    uint64_t size = r->head - r->tail;
    bool ok = q->value < size;
    if (ok) {
        uint64_t seq = r->head - 1 - q->value;
        const struct vbts_record *rec = ring_at(r, seq);
        vbts_put16(p + 4, q->cpu);
        vbts_put64(p + 8, seq);
        vbts_put64(p + 16, rec->from);
        vbts_put64(p + 24, rec->to);
        vbts_put64(p + 32, rec->flags);
    }
    pthread_mutex_unlock(&r->lock);
    if (!ok) {
        char t[VBTS_PROTO_MAX_TEXT];
        snprintf(t, sizeof(t), "index %llu out of range: vCPU %u's buffer holds %llu records",
                 (unsigned long long)q->value, q->cpu, (unsigned long long)size);
        conn_reply_error(c, q->type, VBTS_PROTO_E_RANGE, t);
        return;
    }
    conn_reply(c, VBTS_MSG_GET, p, sizeof(p));
}

/* The first request: HELLO, or the connection ends. */
static void do_hello(struct server *x, struct conn *c, const struct proto_req *q)
{
    if (q->type != VBTS_MSG_HELLO) {
        conn_reply_error(c, q->type, VBTS_PROTO_E_HELLO, NULL);
        conn_close_after(c);
        return;
    }
    if (q->major != VBTS_PROTO_MAJOR) {
        char t[VBTS_PROTO_MAX_TEXT];
        snprintf(t, sizeof(t), "unsupported protocol version %u.%u (this monitor speaks %d.%d)",
                 q->major, q->minor, VBTS_PROTO_MAJOR, VBTS_PROTO_MINOR);
        conn_reply_error(c, q->type, VBTS_PROTO_E_VERSION, t);
        conn_close_after(c);
        return;
    }
    c->hello = true;
    c->zstd = q->options & VBTS_HELLO_ZSTD;
    uint8_t p[VBTS_HELLO_REPLY_SIZE] = { 0 };
    vbts_put16(p + 4, VBTS_PROTO_MAJOR);
    vbts_put16(p + 6, VBTS_PROTO_MINOR);
    vbts_put32(p + 8, (uint32_t)x->ncpus);
    vbts_put32(p + 12, x->file_flags);
    conn_reply(c, VBTS_MSG_HELLO, p, sizeof(p));
}

static void handle_request(struct server *x, struct conn *c, const struct proto_req *q)
{
    if (!c->hello) {
        do_hello(x, c, q);
        return;
    }
    bool all_ok = q->type == VBTS_MSG_CLEAR || q->type == VBTS_MSG_DRAIN;
    if (c->watch && (all_ok || q->type == VBTS_MSG_CONFIG)) {
        conn_reply_error(c, q->type, VBTS_PROTO_E_WATCH,
                         "this connection may only watch (the listener has no ',control')");
        return;
    }
    switch (q->type) {
    case VBTS_MSG_HELLO:
        conn_reply_error(c, q->type, VBTS_PROTO_E_HELLO, NULL);
        return;
    case VBTS_MSG_STATUS:
        do_status(x, c);
        return;
    case VBTS_MSG_CONFIG:
        do_config(x, c, q);
        return;
    default:
        break;
    }
    if ((q->type == VBTS_MSG_SIZE || q->type == VBTS_MSG_GET || all_ok) &&
        check_cpu(x, q->cpu, all_ok || q->type == VBTS_MSG_SIZE) < 0) {
        char t[VBTS_PROTO_MAX_TEXT];
        snprintf(t, sizeof(t), "no vCPU %u (the guest has %d)", q->cpu, x->ncpus);
        conn_reply_error(c, q->type, VBTS_PROTO_E_CPU, t);
        return;
    }
    switch (q->type) {
    case VBTS_MSG_SIZE:
    case VBTS_MSG_CLEAR:
        do_count(x, c, q);
        break;
    case VBTS_MSG_GET:
        do_get(x, c, q);
        break;
    case VBTS_MSG_DRAIN:
        c->drain_count = 0;
        feed_start(x, c, D_DRAIN, q->cpu == VBTS_PROTO_ALL_CPUS ? -1 : q->cpu);
        break;
    case VBTS_MSG_STREAM:
        if (c->zstd && conn_compress(c) < 0) {
            conn_reply_error(c, q->type, VBTS_PROTO_E_NOMEM, "out of memory for a compressor");
            break;
        }
        conn_reply(c, VBTS_MSG_STREAM, (const uint8_t[4]){ 0 }, 4);
        feed_start_stream(x, c);
        break;
    case VBTS_MSG_NOTIFY:
        c->notify = q->on;
        for (int i = 0; i < x->ncpus; i++) {
            struct ring *r = &x->rings[i];
            pthread_mutex_lock(&r->lock);
            /* A buffer that is full now is notified at once. */
            c->seen_full[i] = r->full_events - (r->full ? 1 : 0);
            pthread_mutex_unlock(&r->lock);
        }
        conn_reply(c, VBTS_MSG_NOTIFY, (const uint8_t[4]){ 0 }, 4);
        break;
    }
}

static void notify_full(struct server *x, struct conn *c)
{
    for (int i = 0; i < x->ncpus; i++) {
        if (conn_out_room(c) < VBTS_PROTO_HDR_SIZE + VBTS_FULL_NOTE_SIZE)
            return;
        struct ring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        if (r->full_events != c->seen_full[i]) {
            c->seen_full[i] = r->full_events;
            uint8_t *p = conn_out_reserve(c, VBTS_PROTO_HDR_SIZE + VBTS_FULL_NOTE_SIZE);
            vbts_msg_header(p, VBTS_MSG_FULL, VBTS_FULL_NOTE_SIZE);
            p += VBTS_PROTO_HDR_SIZE;
            memset(p, 0, VBTS_FULL_NOTE_SIZE);
            vbts_put16(p, (uint16_t)i);
            vbts_put32(p + 4, (uint32_t)r->mode);
            vbts_put64(p + 8, r->head - r->tail);
            vbts_put64(p + 16, r->cap);
        }
        pthread_mutex_unlock(&r->lock);
    }
}

/* Everything a connection can do now without waiting for the socket. */
void session_pump(struct server *x, struct conn *c, double now)
{
    if (c->st == C_CLOSING)
        return;
    if (c->st == C_GRACE && c->in_len == 0 && now >= c->deadline) {
        feed_start_stream(x, c);     /* a silent client: the plain stream */
    }
    if (c->st == C_GRACE && c->in_len > 0)
        c->st = C_CONTROL;
    if (c->st == C_CONTROL) {
        for (;;) {
            if (c->data == D_DRAIN) {
                if (!feed_fill(x, c) || conn_out_room(c) < VBTS_PROTO_HDR_SIZE + VBTS_COUNT_REPLY_SIZE)
                    break;
                /*
                 * Room the drain freed may take the LOST marker of a vCPU that
                 * has ended (drop mode): it belongs to this drain too.
                 */
                bool more = false;
                for (int i = 0; i < x->ncpus; i++) {
                    struct ring *r = &x->rings[i];
                    if (!c->cur[i].active)
                        continue;
                    pthread_mutex_lock(&r->lock);
                    feed_recompute(x, i);
                    if (r->finished && r->head > c->cur[i].end && r->tail == c->cur[i].end) {
                        c->cur[i].end = r->head;
                        r->tail = r->head;
                        more = true;
                    }
                    pthread_mutex_unlock(&r->lock);
                }
                if (more)
                    continue;
                for (int i = 0; i < x->ncpus; i++)
                    c->cur[i].active = false;
                c->data = D_NONE;
                feed_recompute_all(x);
                uint8_t p[VBTS_COUNT_REPLY_SIZE] = { 0 };
                vbts_put64(p + 4, c->drain_count);
                conn_reply(c, VBTS_MSG_DRAIN, p, sizeof(p));
            }
            if (c->close_after_flush || c->st != C_CONTROL || c->in_len == 0 ||
                conn_out_room(c) < max_reply(x))
                break;
            struct proto_req q;
            int status;
            uint16_t type;
            long n = proto_parse(c->in, c->in_len, &q, &status, &type);
            if (n == 0) {
                if (c->partial_since == 0)
                    c->partial_since = now;
                break;
            }
            c->partial_since = 0;
            if (n < 0) {
                conn_reply_error(c, type, status, NULL);
                conn_close_after(c);
                break;
            }
            memmove(c->in, c->in + n, c->in_len - (size_t)n);
            c->in_len -= (size_t)n;
            if (status != VBTS_PROTO_OK) {
                conn_reply_error(c, type, status, NULL);
                if (!c->hello)
                    conn_close_after(c);
                continue;
            }
            handle_request(x, c, &q);
        }
        if (c->notify && c->st == C_CONTROL)
            notify_full(x, c);
    }
    if (c->st == C_STREAM && feed_fill(x, c) && c->out_off == c->out_len && c->fd >= 0) {
        /* The whole trace went out: end the stream at a chunk boundary. */
        shutdown(c->fd, SHUT_WR);
        c->st = C_CLOSING;
        c->deadline = now + CLOSE_WAIT_S;
    }
}

