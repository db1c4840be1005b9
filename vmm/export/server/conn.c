/* SPDX-License-Identifier: MIT */
/* A connection: its output queue and the marks that tell which records left it, input, replies. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "export/server/conn.h"
#include "export/server/feed.h"
#include "export/zframe.h"

size_t conn_out_room(struct conn *c)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    return OUTQ_SIZE - (c->out_len - c->out_off);
}

uint8_t *conn_out_reserve(struct conn *c, size_t n)
{
    if (OUTQ_SIZE - c->out_len < n) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    uint8_t *p = c->out + c->out_len;
    c->out_len += n;
    c->q_total += n;
    return p;
}

void conn_out_put(struct conn *c, const void *p, size_t n)
{
    memcpy(conn_out_reserve(c, n), p, n);
}

bool conn_chunk_fits(struct conn *c, size_t n)
{
    return conn_out_room(c) >= (c->z ? zframe_bound(n) : n);
}

uint8_t *conn_chunk_begin(struct conn *c, size_t n)
{
    return c->z ? c->zin : conn_out_reserve(c, n);
}

void conn_chunk_end(struct conn *c, size_t n)
{
    if (!c->z)
        return;
    size_t cap = zframe_bound(n);
    uint8_t *p = conn_out_reserve(c, cap);
    size_t got = zframe_pack(c->z, p, cap, c->zin, n);
    /* A frame that could not be made would leave a gap in the records:
     * the stream ends here instead, and the client sees it cut short. */
    if (!got)
        c->broken = true;
    c->out_len -= cap - got;
    c->q_total -= cap - got;
}

int conn_compress(struct conn *c)
{
    if (!c->z) {
        c->z = zframe_new(MAX_CHUNK_BYTES);
        c->zin = malloc(MAX_CHUNK_BYTES);
        if (!c->z || !c->zin) {
            zframe_free(c->z);
            free(c->zin);
            c->z = NULL;
            c->zin = NULL;
            return -1;
        }
    }
    return 0;
}

void conn_push_mark(struct conn *c, int cpu, uint64_t seq_end)
{
    if (c->nmarks > 0) {
        struct mark *last = &c->marks[(c->mark_head + c->nmarks - 1) % MAX_MARKS];
        if (last->cpu == cpu) {
            last->off_end = c->q_total;
            last->seq_end = seq_end;
            return;
        }
    }
    struct mark *m = &c->marks[(c->mark_head + c->nmarks) % MAX_MARKS];
    m->off_end = c->q_total;
    m->seq_end = seq_end;
    m->cpu = cpu;
    c->nmarks++;
}

/* Bytes left the queue: records up to the marks they pass are delivered. */
static void written(struct server *x, struct conn *c, size_t n)
{
    c->out_off += n;
    c->w_total += n;
    while (c->nmarks > 0 && c->marks[c->mark_head].off_end <= c->w_total) {
        struct mark *m = &c->marks[c->mark_head];
        if (c->cur[m->cpu].active && c->data == D_STREAM) {
            c->cur[m->cpu].acked = m->seq_end;
            struct ring *r = &x->rings[m->cpu];
            pthread_mutex_lock(&r->lock);
            feed_recompute(x, m->cpu);
            pthread_mutex_unlock(&r->lock);
        }
        c->mark_head = (c->mark_head + 1) % MAX_MARKS;
        c->nmarks--;
    }
}

/* -1: the connection is dead. */
int conn_flush(struct server *x, struct conn *c)
{
    while (c->out_off < c->out_len) {
        size_t n = c->out_len - c->out_off;
        if (c->fd < 0) {
            if (x->detached_out)
                x->detached_out(x->detached_ctx, c->out + c->out_off, n);
            written(x, c, n);
            continue;
        }
        ssize_t w = send(c->fd, c->out + c->out_off, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            written(x, c, (size_t)w);
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            return -1;
        }
    }
    return 0;
}

void conn_reply(struct conn *c, uint16_t type, const uint8_t *payload, uint32_t len)
{
    uint8_t *p = conn_out_reserve(c, VBTS_PROTO_HDR_SIZE + len);
    vbts_msg_header(p, (uint16_t)(type | VBTS_MSG_REPLY), len);
    if (len)
        memcpy(p + VBTS_PROTO_HDR_SIZE, payload, len);
}

void conn_reply_error(struct conn *c, uint16_t type, int status, const char *text)
{
    uint8_t buf[VBTS_PROTO_HDR_SIZE + 4 + VBTS_PROTO_MAX_TEXT];
    conn_out_put(c, buf, proto_error(buf, type, status, text));
}

void conn_file_header(struct server *x, struct conn *c)
{
    struct vbts_file_header h = {
        .version_major = VBTS_VERSION_MAJOR, .version_minor = VBTS_VERSION_MINOR,
        .header_size = sizeof(h), .record_size = VBTS_RECORD_SIZE,
        .flags = x->file_flags, .ncpus = (uint32_t)x->ncpus,
    };
    memcpy(h.magic, VBTS_MAGIC, VBTS_MAGIC_LEN);
    memcpy(conn_chunk_begin(c, sizeof(h)), &h, sizeof(h));
    conn_chunk_end(c, sizeof(h));
}

void conn_close_after(struct conn *c)
{
    c->close_after_flush = true;
    c->in_len = 0;
}

struct conn *conn_new(struct server *x, int fd, double now)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->out = malloc(OUTQ_SIZE);
    c->cur = calloc((size_t)x->ncpus, sizeof(*c->cur));
    c->seen_full = calloc((size_t)x->ncpus, sizeof(*c->seen_full));
    if (!c->out || !c->cur || !c->seen_full) {
        free(c->out);
        free(c->cur);
        free(c->seen_full);
        free(c);
        return NULL;
    }
    c->fd = fd;
    c->st = C_GRACE;
    c->deadline = now + VBTS_PROTO_GRACE_MS / 1000.0;
    c->next = x->conns;
    x->conns = c;
    x->nconns++;
    return c;
}

void conn_free(struct server *x, struct conn *c)
{
    for (struct conn **pp = &x->conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    x->nconns--;
    if (c->fd >= 0)
        close(c->fd);
    bool had = c->data != D_NONE;
    free(c->out);
    free(c->cur);
    free(c->seen_full);
    zframe_free(c->z);
    free(c->zin);
    free(c);
    if (had)
        feed_recompute_all(x);
}

/* -1: close the connection. */
int conn_readable(struct conn *c)
{
    for (;;) {
        uint8_t scratch[4096];
        bool keep = c->st == C_GRACE || c->st == C_CONTROL;
        if (keep && (c->close_after_flush || c->in_len == sizeof(c->in)))
            return 0;
        uint8_t *dst = keep ? c->in + c->in_len : scratch;
        size_t room = keep ? sizeof(c->in) - c->in_len : sizeof(scratch);
        ssize_t n = recv(c->fd, dst, room, MSG_DONTWAIT);
        if (n > 0) {
            if (keep)
                c->in_len += (size_t)n;
            continue;
        }
        if (n == 0) {
            c->peer_eof = true;
            /* A control client may half-close after its requests. */
            return c->st == C_CONTROL || c->st == C_GRACE ? 0 : -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
}


/* Everything queued went out: half-close and wait a moment for the client's EOF. */
void conn_closing(struct conn *c, double now)
{
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_WR);
    c->st = C_CLOSING;
    c->deadline = now + CLOSE_WAIT_S;
}
