/* SPDX-License-Identifier: MIT */
/*
 * The trace socket server: one thread, poll(2), non-blocking sockets.
 *
 * Each client has a fixed-size output queue.  Trace data is copied into it
 * from the vCPU buffers (export_ring.c) only when there is room for a whole
 * chunk, so memory does not grow with a slow client: in block mode the slow
 * client holds the buffer (and so the vCPU) back, which is the contract; in
 * wrap and drop mode it just falls behind and gets LOST markers.
 *
 * A client that says nothing for VBTS_PROTO_GRACE_MS gets the plain trace
 * stream; one that starts with a HELLO message gets a control session
 * (docs/protocol.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "vbts.h"

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
};

struct export {
    int ncpus;
    uint32_t file_flags;
    struct xring *rings;
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
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int export_dest_kind(const char *dest)
{
    if (!strncmp(dest, "unix:", 5))
        return 1;
    if (!strncmp(dest, "tcp:", 4))
        return 2;
    return 0;
}

/* ------------------------------------------------------------------ */
/* listeners */

static int listen_unix(struct listener *l, const char *dest)
{
    const char *path = dest + 5;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (!*path)
        return vbts_fail("--trace %s: empty socket path", dest);
    if (strlen(path) >= sizeof(sa.sun_path))
        return vbts_fail("--trace %s: socket path longer than %zu bytes", dest,
                         sizeof(sa.sun_path) - 1);
    strcpy(sa.sun_path, path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return vbts_fail("--trace %s: %s exists and is not a socket", dest, path);
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int r = probe >= 0 ? connect(probe, (struct sockaddr *)&sa, sizeof(sa)) : -1;
        int e = errno;
        if (probe >= 0)
            close(probe);
        if (r == 0)
            return vbts_fail("--trace %s: socket %s is in use by another process", dest, path);
        if (e != ECONNREFUSED)
            return vbts_fail("--trace %s: cannot reuse %s: %s", dest, path, strerror(e));
        unlink(path);           /* a stale socket from a run that died */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return vbts_fail_errno("--trace %s: socket", dest);
    mode_t old = umask(0177);   /* the socket file is created 0600 */
    int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0) {
        vbts_fail_errno("--trace %s: cannot bind", dest);
        close(fd);
        return -1;
    }
    if (chmod(path, 0600) < 0 || listen(fd, 16) < 0) {
        vbts_fail_errno("--trace %s: cannot listen", dest);
        close(fd);
        unlink(path);
        return -1;
    }
    l->fd = fd;
    l->name = strdup(dest);
    l->unlink_path = strdup(path);
    return 0;
}

static int listen_tcp(struct listener *l, const char *dest)
{
    const char *spec = dest + 4;
    const char *colon = strrchr(spec, ':');
    char host[256];
    const char *port;
    if (!colon) {
        strcpy(host, "127.0.0.1");     /* tcp:PORT: loopback */
        port = spec;
    } else {
        size_t hl = (size_t)(colon - spec);
        if (hl >= sizeof(host))
            return vbts_fail("--trace %s: host name too long", dest);
        memcpy(host, spec, hl);
        host[hl] = 0;
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
            memmove(host, host + 1, hl - 2);
            host[hl - 2] = 0;
        }
        if (!host[0])
            strcpy(host, "127.0.0.1");
        port = colon + 1;
    }
    char *end;
    errno = 0;
    unsigned long pn = strtoul(port, &end, 10);
    if (!*port || *end || errno || pn > 65535 || *port == '-' || *port == '+')
        return vbts_fail("--trace %s: bad port '%s' (use tcp:HOST:PORT, e.g. tcp:127.0.0.1:5000)",
                         dest, port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV };
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g != 0)
        return vbts_fail("--trace %s: cannot resolve '%s': %s", dest, host, gai_strerror(g));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return vbts_fail_errno("--trace %s: socket", dest);
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0) {
        vbts_fail_errno("--trace %s: cannot listen", dest);
        freeaddrinfo(ai);
        close(fd);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char name[320], addr[INET6_ADDRSTRLEN] = "?";
    unsigned bound = (unsigned)pn;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
            bound = ntohs(s4->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
            bound = ntohs(s6->sin6_port);
        }
    }
    snprintf(name, sizeof(name), ss.ss_family == AF_INET6 ? "tcp:[%s]:%u" : "tcp:%s:%u",
             addr, bound);
    l->fd = fd;
    l->name = strdup(name);
    l->unlink_path = NULL;
    return 0;
}

/* ------------------------------------------------------------------ */
/* connections: output */

static size_t out_room(struct conn *c)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    return OUTQ_SIZE - (c->out_len - c->out_off);
}

static uint8_t *out_reserve(struct conn *c, size_t n)
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

static void out_put(struct conn *c, const void *p, size_t n)
{
    memcpy(out_reserve(c, n), p, n);
}

static void push_mark(struct conn *c, int cpu, uint64_t seq_end)
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

static void recompute(struct export *x, int cpu);

/* Bytes left the queue: records up to the marks they pass are delivered. */
static void written(struct export *x, struct conn *c, size_t n)
{
    c->out_off += n;
    c->w_total += n;
    while (c->nmarks > 0 && c->marks[c->mark_head].off_end <= c->w_total) {
        struct mark *m = &c->marks[c->mark_head];
        if (c->cur[m->cpu].active && c->data == D_STREAM) {
            c->cur[m->cpu].acked = m->seq_end;
            struct xring *r = &x->rings[m->cpu];
            pthread_mutex_lock(&r->lock);
            recompute(x, m->cpu);
            pthread_mutex_unlock(&r->lock);
        }
        c->mark_head = (c->mark_head + 1) % MAX_MARKS;
        c->nmarks--;
    }
}

static void (*detached_out)(void *, const uint8_t *, size_t);
static void *detached_ctx;

/* -1: the connection is dead. */
static int flush_out(struct export *x, struct conn *c)
{
    while (c->out_off < c->out_len) {
        size_t n = c->out_len - c->out_off;
        if (c->fd < 0) {
            if (detached_out)
                detached_out(detached_ctx, c->out + c->out_off, n);
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

static void reply(struct conn *c, uint16_t type, const uint8_t *payload, uint32_t len)
{
    uint8_t *p = out_reserve(c, VBTS_PROTO_HDR_SIZE + len);
    vbts_msg_header(p, (uint16_t)(type | VBTS_MSG_REPLY), len);
    if (len)
        memcpy(p + VBTS_PROTO_HDR_SIZE, payload, len);
}

static void reply_error(struct conn *c, uint16_t type, int status, const char *text)
{
    uint8_t buf[VBTS_PROTO_HDR_SIZE + 4 + VBTS_PROTO_MAX_TEXT];
    out_put(c, buf, xproto_error(buf, type, status, text));
}

static void file_header(struct export *x, struct conn *c)
{
    struct vbts_file_header h = {
        .version_major = VBTS_VERSION_MAJOR, .version_minor = VBTS_VERSION_MINOR,
        .header_size = sizeof(h), .record_size = VBTS_RECORD_SIZE,
        .flags = x->file_flags, .ncpus = (uint32_t)x->ncpus,
    };
    memcpy(h.magic, VBTS_MAGIC, VBTS_MAGIC_LEN);
    out_put(c, &h, sizeof(h));
}

/* ------------------------------------------------------------------ */
/* buffer accounting */

/*
 * With r->lock held: in block and drop mode, records every streaming client
 * has been sent leave the buffer; the buffer keeps what any client still
 * sends.  Wakes a producer waiting for room.
 */
static void recompute(struct export *x, int cpu)
{
    struct xring *r = &x->rings[cpu];
    uint64_t lo = xring_lo(r);
    if (r->mode != VBTS_OVERFLOW_WRAP) {
        uint64_t m = UINT64_MAX;
        for (struct conn *c = x->conns; c; c = c->next)
            if (c->data == D_STREAM && c->cur[cpu].active && c->cur[cpu].acked < m)
                m = c->cur[cpu].acked;
        if (m != UINT64_MAX && m > r->tail) {
            if (m > r->head)
                m = r->head;
            r->tail = m;
        }
    }
    uint64_t hold = r->tail;
    for (struct conn *c = x->conns; c; c = c->next)
        if (c->data != D_NONE && c->cur[cpu].active && c->cur[cpu].acked < hold)
            hold = c->cur[cpu].acked;
    if (hold < lo)
        hold = lo;
    if (hold != r->hold) {
        r->hold = hold;
        pthread_cond_broadcast(&r->space);
    }
    xring_update_full(r);
    if (r->finished && r->lost_pending)
        xring_place_lost(r);
}

static void recompute_all(struct export *x)
{
    for (int i = 0; i < x->ncpus; i++) {
        pthread_mutex_lock(&x->rings[i].lock);
        recompute(x, i);
        pthread_mutex_unlock(&x->rings[i].lock);
    }
}

/* ------------------------------------------------------------------ */
/* trace data into a client's queue */

/* Queue what fits of cpu's records for a stream or a drain; true if all sent. */
static bool fill_cpu(struct export *x, struct conn *c, int cpu)
{
    struct cursor *k = &c->cur[cpu];
    if (!k->active)
        return true;
    struct xring *r = &x->rings[cpu];
    bool all = false;
    pthread_mutex_lock(&r->lock);
    uint64_t limit = c->data == D_DRAIN ? k->end : r->head;
    if (limit > r->head)
        limit = r->head;
    /* Records the buffer no longer has for this client: a LOST marker. */
    uint64_t floor = c->data == D_STREAM ? r->tail : xring_lo(r);
    if (floor > limit)
        floor = limit;
    if (k->pos < floor && out_room(c) >= CHUNK_BYTES(1) && c->nmarks < MAX_MARKS) {
        uint8_t *p = out_reserve(c, CHUNK_BYTES(1));
        struct vbts_chunk_header h = { .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu,
                                       .count = 1, .seq = k->next_seq };
        struct vbts_record m = vbts_marker(VBTS_MARK_LOST, floor - k->pos, 0);
        memcpy(p, &h, sizeof(h));
        memcpy(p + sizeof(h), &m, sizeof(m));
        k->next_seq++;
        k->pos = floor;
        if (c->data == D_STREAM)
            push_mark(c, cpu, k->pos);
        else
            k->acked = k->pos;
    }
    while (k->pos >= floor && k->pos < limit && c->nmarks < MAX_MARKS) {
        uint64_t e = xring_chunk_end(r, k->pos, limit);
        if (e - k->pos > EXPORT_CHUNK_MAX)
            e = k->pos + EXPORT_CHUNK_MAX;
        uint64_t n = e - k->pos;
        if (out_room(c) < CHUNK_BYTES(n))
            break;
        uint8_t *p = out_reserve(c, CHUNK_BYTES(n));
        struct vbts_chunk_header h = { .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu,
                                       .count = (uint32_t)n, .seq = k->next_seq };
        memcpy(p, &h, sizeof(h));
        xring_copy(r, k->pos, n, p + sizeof(h));
        k->next_seq += n;
        k->pos = e;
        if (c->data == D_STREAM) {
            push_mark(c, cpu, k->pos);
        } else {
            k->acked = k->pos;
            c->drain_count += n;
        }
    }
    if (c->data == D_DRAIN) {
        all = k->pos >= limit;
        recompute(x, cpu);
    } else {
        all = r->finished && !r->lost_pending && k->pos == r->head;
    }
    pthread_mutex_unlock(&r->lock);
    return all;
}

/* True when every vCPU's records are queued (and, for a stream, the trace ended). */
static bool fill(struct export *x, struct conn *c)
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

static void start_cursors(struct export *x, struct conn *c, enum cdata d, int only)
{
    c->data = d;
    for (int i = 0; i < x->ncpus; i++) {
        struct cursor *k = &c->cur[i];
        memset(k, 0, sizeof(*k));
        if (only >= 0 && i != only)
            continue;
        struct xring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        k->active = true;
        k->pos = k->acked = k->next_seq = r->tail;
        k->end = r->head;
        if (d == D_DRAIN)
            r->tail = r->head;      /* the buffer is empty from now on */
        recompute(x, i);
        pthread_mutex_unlock(&r->lock);
    }
}

static void start_stream(struct export *x, struct conn *c)
{
    c->st = C_STREAM;
    file_header(x, c);
    start_cursors(x, c, D_STREAM, -1);
}

/* ------------------------------------------------------------------ */
/* requests */

static size_t max_reply(struct export *x)
{
    return VBTS_PROTO_HDR_SIZE + VBTS_STATUS_REPLY_HEAD + (size_t)VBTS_STATUS_REPLY_CPU * x->ncpus +
           VBTS_PROTO_HDR_SIZE + 4 + VBTS_PROTO_MAX_TEXT;
}

static int check_cpu(struct export *x, uint16_t cpu, bool all_ok)
{
    if (cpu == VBTS_PROTO_ALL_CPUS && all_ok)
        return 0;
    return cpu < x->ncpus ? 0 : -1;
}

static void do_status(struct export *x, struct conn *c)
{
    size_t len = VBTS_STATUS_REPLY_HEAD + (size_t)VBTS_STATUS_REPLY_CPU * x->ncpus;
    uint8_t *p = out_reserve(c, VBTS_PROTO_HDR_SIZE + len);
    vbts_msg_header(p, VBTS_MSG_STATUS | VBTS_MSG_REPLY, (uint32_t)len);
    p += VBTS_PROTO_HDR_SIZE;
    vbts_set32(p, VBTS_PROTO_OK);
    vbts_set32(p + 4, (uint32_t)x->ncpus);
    vbts_set32(p + 8, (uint32_t)x->overflow);
    vbts_set32(p + 12, atomic_load(&x->trace_flags));
    vbts_set32(p + 16, atomic_load(&x->ending) ? 1 : 0);
    vbts_set32(p + 20, (uint32_t)x->nconns);
    vbts_set64(p + 24, x->buffer_size);
    vbts_set64(p + 32, x->buffer_limit);
    p += VBTS_STATUS_REPLY_HEAD;
    for (int i = 0; i < x->ncpus; i++, p += VBTS_STATUS_REPLY_CPU) {
        struct xring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        vbts_set64(p, r->head - r->tail);
        vbts_set64(p + 8, r->cap);
        vbts_set64(p + 16, r->head);
        vbts_set64(p + 24, r->dropped);
        vbts_set64(p + 32, r->overwritten);
        vbts_set64(p + 40, r->cleared);
        vbts_set32(p + 48, r->full);
        vbts_set32(p + 52, r->finished);
        pthread_mutex_unlock(&r->lock);
    }
}

static void do_config(struct export *x, struct conn *c, const struct xreq *q)
{
    if (q->mask & VBTS_CONFIG_BUFFER_SIZE) {
        uint64_t cap = q->value / VBTS_RECORD_SIZE;
        if (cap == 0 || q->value > x->buffer_limit / (uint64_t)x->ncpus) {
            char t[VBTS_PROTO_MAX_TEXT];
            snprintf(t, sizeof(t), "buffer size %llu: %s (one record, 24 bytes, to %llu bytes "
                     "per vCPU: the buffer limit)", (unsigned long long)q->value,
                     cap == 0 ? "too small" : "beyond the buffer limit",
                     (unsigned long long)(x->buffer_limit / (uint64_t)x->ncpus));
            reply_error(c, q->type, VBTS_PROTO_E_LIMIT, t);
            return;
        }
        for (int i = 0; i < x->ncpus; i++) {
            struct xring *r = &x->rings[i];
            pthread_mutex_lock(&r->lock);
            int rc = xring_resize(r, cap);
            int e = errno;
            uint64_t held = r->head - r->hold;
            if (rc == 0)
                recompute(x, i);
            pthread_mutex_unlock(&r->lock);
            if (rc < 0) {
                char t[VBTS_PROTO_MAX_TEXT];
                if (e == EBUSY) {
                    snprintf(t, sizeof(t), "vCPU %d's buffer holds %llu records, more than %llu; "
                             "DRAIN or CLEAR it first", i, (unsigned long long)held,
                             (unsigned long long)cap);
                    reply_error(c, q->type, VBTS_PROTO_E_BUSY, t);
                } else {
                    reply_error(c, q->type, VBTS_PROTO_E_NOMEM, NULL);
                }
                return;
            }
        }
        x->buffer_size = cap * VBTS_RECORD_SIZE;
    }
    if (q->mask & VBTS_CONFIG_OVERFLOW) {
        x->overflow = (int)q->overflow;
        for (int i = 0; i < x->ncpus; i++) {
            struct xring *r = &x->rings[i];
            pthread_mutex_lock(&r->lock);
            r->mode = x->overflow;
            recompute(x, i);
            pthread_cond_broadcast(&r->space);
            pthread_mutex_unlock(&r->lock);
        }
    }
    if (q->mask & VBTS_CONFIG_FLAGS)
        atomic_store(&x->trace_flags, q->flags);
    uint8_t p[VBTS_CONFIG_REPLY_SIZE] = { 0 };
    vbts_set32(p + 4, atomic_load(&x->trace_flags));
    vbts_set32(p + 8, (uint32_t)x->overflow);
    vbts_set64(p + 16, x->buffer_size);
    reply(c, VBTS_MSG_CONFIG, p, sizeof(p));
}

static void do_count(struct export *x, struct conn *c, const struct xreq *q)
{
    uint64_t n = 0;
    for (int i = 0; i < x->ncpus; i++) {
        if (q->cpu != VBTS_PROTO_ALL_CPUS && q->cpu != i)
            continue;
        struct xring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        n += r->head - r->tail;
        if (q->type == VBTS_MSG_CLEAR) {
            r->cleared += r->head - r->tail;
            r->tail = r->head;
            recompute(x, i);
        }
        pthread_mutex_unlock(&r->lock);
    }
    uint8_t p[VBTS_COUNT_REPLY_SIZE] = { 0 };
    vbts_set64(p + 4, n);
    reply(c, q->type, p, sizeof(p));
}

static void do_get(struct export *x, struct conn *c, const struct xreq *q)
{
    struct xring *r = &x->rings[q->cpu];
    uint8_t p[VBTS_GET_REPLY_SIZE] = { 0 };
    pthread_mutex_lock(&r->lock);
    uint64_t size = r->head - r->tail;
    bool ok = q->value < size;
    if (ok) {
        uint64_t seq = r->head - 1 - q->value;
        const struct vbts_record *rec = xring_at(r, seq);
        vbts_set16(p + 4, q->cpu);
        vbts_set64(p + 8, seq);
        vbts_set64(p + 16, rec->from);
        vbts_set64(p + 24, rec->to);
        vbts_set64(p + 32, rec->flags);
    }
    pthread_mutex_unlock(&r->lock);
    if (!ok) {
        char t[VBTS_PROTO_MAX_TEXT];
        snprintf(t, sizeof(t), "index %llu out of range: vCPU %u's buffer holds %llu records",
                 (unsigned long long)q->value, q->cpu, (unsigned long long)size);
        reply_error(c, q->type, VBTS_PROTO_E_RANGE, t);
        return;
    }
    reply(c, VBTS_MSG_GET, p, sizeof(p));
}

static void close_after(struct conn *c)
{
    c->close_after_flush = true;
    c->in_len = 0;
}

static void handle_request(struct export *x, struct conn *c, const struct xreq *q)
{
    if (!c->hello) {
        if (q->type != VBTS_MSG_HELLO) {
            reply_error(c, q->type, VBTS_PROTO_E_HELLO, NULL);
            close_after(c);
            return;
        }
        if (q->major != VBTS_PROTO_MAJOR) {
            char t[VBTS_PROTO_MAX_TEXT];
            snprintf(t, sizeof(t), "unsupported protocol version %u.%u (this monitor speaks %d.%d)",
                     q->major, q->minor, VBTS_PROTO_MAJOR, VBTS_PROTO_MINOR);
            reply_error(c, q->type, VBTS_PROTO_E_VERSION, t);
            close_after(c);
            return;
        }
        c->hello = true;
        uint8_t p[VBTS_HELLO_REPLY_SIZE] = { 0 };
        vbts_set16(p + 4, VBTS_PROTO_MAJOR);
        vbts_set16(p + 6, VBTS_PROTO_MINOR);
        vbts_set32(p + 8, (uint32_t)x->ncpus);
        vbts_set32(p + 12, x->file_flags);
        reply(c, VBTS_MSG_HELLO, p, sizeof(p));
        return;
    }
    bool all_ok = q->type == VBTS_MSG_CLEAR || q->type == VBTS_MSG_DRAIN;
    switch (q->type) {
    case VBTS_MSG_HELLO:
        reply_error(c, q->type, VBTS_PROTO_E_HELLO, NULL);
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
        reply_error(c, q->type, VBTS_PROTO_E_CPU, t);
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
        start_cursors(x, c, D_DRAIN, q->cpu == VBTS_PROTO_ALL_CPUS ? -1 : q->cpu);
        break;
    case VBTS_MSG_STREAM:
        reply(c, VBTS_MSG_STREAM, (const uint8_t[4]){ 0 }, 4);
        start_stream(x, c);
        break;
    case VBTS_MSG_NOTIFY:
        c->notify = q->on;
        for (int i = 0; i < x->ncpus; i++) {
            struct xring *r = &x->rings[i];
            pthread_mutex_lock(&r->lock);
            /* A buffer that is full now is notified at once. */
            c->seen_full[i] = r->full_events - (r->full ? 1 : 0);
            pthread_mutex_unlock(&r->lock);
        }
        reply(c, VBTS_MSG_NOTIFY, (const uint8_t[4]){ 0 }, 4);
        break;
    }
}

static void notify_full(struct export *x, struct conn *c)
{
    for (int i = 0; i < x->ncpus; i++) {
        if (out_room(c) < VBTS_PROTO_HDR_SIZE + VBTS_FULL_NOTE_SIZE)
            return;
        struct xring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        if (r->full_events != c->seen_full[i]) {
            c->seen_full[i] = r->full_events;
            uint8_t *p = out_reserve(c, VBTS_PROTO_HDR_SIZE + VBTS_FULL_NOTE_SIZE);
            vbts_msg_header(p, VBTS_MSG_FULL, VBTS_FULL_NOTE_SIZE);
            p += VBTS_PROTO_HDR_SIZE;
            memset(p, 0, VBTS_FULL_NOTE_SIZE);
            vbts_set16(p, (uint16_t)i);
            vbts_set32(p + 4, (uint32_t)r->mode);
            vbts_set64(p + 8, r->head - r->tail);
            vbts_set64(p + 16, r->cap);
        }
        pthread_mutex_unlock(&r->lock);
    }
}

/* Everything a connection can do now without waiting for the socket. */
static void pump(struct export *x, struct conn *c, double now)
{
    if (c->st == C_CLOSING)
        return;
    if (c->st == C_GRACE && c->in_len == 0 && now >= c->deadline) {
        start_stream(x, c);     /* a silent client: the plain stream */
    }
    if (c->st == C_GRACE && c->in_len > 0)
        c->st = C_CONTROL;
    if (c->st == C_CONTROL) {
        for (;;) {
            if (c->data == D_DRAIN) {
                if (!fill(x, c) || out_room(c) < VBTS_PROTO_HDR_SIZE + VBTS_COUNT_REPLY_SIZE)
                    break;
                /*
                 * Room the drain freed may take the LOST marker of a vCPU that
                 * has ended (drop mode): it belongs to this drain too.
                 */
                bool more = false;
                for (int i = 0; i < x->ncpus; i++) {
                    struct xring *r = &x->rings[i];
                    if (!c->cur[i].active)
                        continue;
                    pthread_mutex_lock(&r->lock);
                    recompute(x, i);
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
                recompute_all(x);
                uint8_t p[VBTS_COUNT_REPLY_SIZE] = { 0 };
                vbts_set64(p + 4, c->drain_count);
                reply(c, VBTS_MSG_DRAIN, p, sizeof(p));
            }
            if (c->close_after_flush || c->st != C_CONTROL || c->in_len == 0 ||
                out_room(c) < max_reply(x))
                break;
            struct xreq q;
            int status;
            uint16_t type;
            long n = xproto_parse(c->in, c->in_len, &q, &status, &type);
            if (n == 0) {
                if (c->partial_since == 0)
                    c->partial_since = now;
                break;
            }
            c->partial_since = 0;
            if (n < 0) {
                reply_error(c, type, status, NULL);
                close_after(c);
                break;
            }
            memmove(c->in, c->in + n, c->in_len - (size_t)n);
            c->in_len -= (size_t)n;
            if (status != VBTS_PROTO_OK) {
                reply_error(c, type, status, NULL);
                if (!c->hello)
                    close_after(c);
                continue;
            }
            handle_request(x, c, &q);
        }
        if (c->notify && c->st == C_CONTROL)
            notify_full(x, c);
    }
    if (c->st == C_STREAM && fill(x, c) && c->out_off == c->out_len && c->fd >= 0) {
        /* The whole trace went out: end the stream at a chunk boundary. */
        shutdown(c->fd, SHUT_WR);
        c->st = C_CLOSING;
        c->deadline = now + CLOSE_WAIT_S;
    }
}

/* ------------------------------------------------------------------ */
/* connection lifetime */

static struct conn *conn_new(struct export *x, int fd, double now)
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

static void conn_free(struct export *x, struct conn *c)
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
    free(c);
    if (had)
        recompute_all(x);
}

static void on_accept(struct export *x, struct listener *l, double now)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (x->nconns >= MAX_CLIENTS || !conn_new(x, fd, now)) {
            uint8_t buf[VBTS_PROTO_HDR_SIZE + 4 + VBTS_PROTO_MAX_TEXT];
            size_t n = xproto_error(buf, 0, VBTS_PROTO_E_CLIENTS, NULL);
            if (send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                /* nothing more to say */
            }
            close(fd);
        }
    }
}

/* -1: close the connection. */
static int on_readable(struct conn *c)
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

/* ------------------------------------------------------------------ */
/* the end of the run */

static bool everything_delivered(struct export *x)
{
    for (int i = 0; i < x->ncpus; i++) {
        struct xring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        bool empty = r->tail == r->head && r->lost_pending == 0 &&
                     (r->mode == VBTS_OVERFLOW_WRAP || r->hold == r->head);
        pthread_mutex_unlock(&r->lock);
        if (!empty)
            return false;
    }
    for (struct conn *c = x->conns; c; c = c->next)
        if (c->out_off != c->out_len || c->data == D_DRAIN || c->st == C_STREAM)
            return false;
    return true;
}

static uint64_t count_undelivered(struct export *x)
{
    uint64_t n = 0;
    for (int i = 0; i < x->ncpus; i++) {
        struct xring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        n += r->head - (r->mode == VBTS_OVERFLOW_WRAP ? r->tail : r->hold) + r->lost_pending;
        pthread_mutex_unlock(&r->lock);
    }
    return n;
}

static bool finished(struct export *x, double now)
{
    if (!atomic_load(&x->ending))
        return false;
    if (everything_delivered(x))
        return true;
    if (atomic_load(&x->sig)) {
        /* Interrupted: what connected clients can take in a second, no more. */
        if (x->sig_deadline == 0)
            x->sig_deadline = now + 1.0;
        return now >= x->sig_deadline;
    }
    return x->overflow != VBTS_OVERFLOW_BLOCK && now >= x->linger_deadline;
}

static void close_listeners(struct export *x)
{
    for (int i = 0; i < x->nls; i++) {
        if (x->ls[i].fd >= 0)
            close(x->ls[i].fd);
        x->ls[i].fd = -1;
        if (x->ls[i].unlink_path)
            unlink(x->ls[i].unlink_path);
    }
}

static void *server_main(void *arg)
{
    struct export *x = arg;
    struct pollfd *pf = NULL;
    size_t npf = 0;
    bool ending_phase = false;
    double end_deadline = 0;

    while (!atomic_load(&x->quit)) {
        double now = now_s();
        if (!ending_phase && finished(x, now)) {
            ending_phase = true;
            x->undelivered = count_undelivered(x);
            x->finish_sig = atomic_load(&x->sig);
            close_listeners(x);
            end_deadline = now + CLOSE_WAIT_S;
            for (struct conn *c = x->conns; c; c = c->next) {
                if (c->st != C_CLOSING) {
                    flush_out(x, c);
                    shutdown(c->fd, SHUT_WR);
                    c->st = C_CLOSING;
                    c->deadline = end_deadline;
                }
            }
        }
        if (ending_phase && (!x->conns || now >= end_deadline))
            break;

        size_t want = 1 + (size_t)x->nls + (size_t)x->nconns;
        if (want > npf) {
            struct pollfd *np = realloc(pf, want * sizeof(*pf));
            if (!np) {
                struct timespec ts = { 0, 10 * 1000000L };
                nanosleep(&ts, NULL);
                continue;
            }
            pf = np;
            npf = want;
        }
        size_t k = 0;
        pf[k++] = (struct pollfd){ .fd = x->wake_fd, .events = POLLIN };
        for (int i = 0; i < x->nls; i++)
            pf[k++] = (struct pollfd){ .fd = x->ls[i].fd, .events = x->ls[i].fd >= 0 ? POLLIN : 0 };
        double timeout = 0.1;
        for (struct conn *c = x->conns; c; c = c->next) {
            short ev = POLLIN;
            bool keep = c->st == C_GRACE || c->st == C_CONTROL;
            if (keep && (c->close_after_flush || c->in_len == sizeof(c->in)))
                ev = 0;
            if (c->out_off != c->out_len)
                ev |= POLLOUT;
            pf[k++] = (struct pollfd){ .fd = c->fd, .events = ev };
            if ((c->st == C_GRACE || c->st == C_CLOSING) && c->deadline - now < timeout)
                timeout = c->deadline - now;
        }
        if (timeout < 0)
            timeout = 0;
        int pr = poll(pf, k, (int)(timeout * 1000) + 1);
        if (pr < 0 && errno != EINTR)
            break;
        now = now_s();
        if (pr > 0 && (pf[0].revents & POLLIN)) {
            uint64_t v;
            if (read(x->wake_fd, &v, sizeof(v)) < 0) {
                /* counter already read */
            }
        }
        for (int i = 0; i < x->nls; i++)
            if (pr > 0 && (pf[1 + i].revents & POLLIN) && !ending_phase)
                on_accept(x, &x->ls[i], now);
        /* Conns accepted just now are at the head of the list, not in pf. */
        size_t base = 1 + (size_t)x->nls;
        size_t polled = k - base;
        struct conn *c = x->conns;
        size_t fresh = (size_t)x->nconns - polled;
        for (size_t i = 0; i < fresh && c; i++)
            c = c->next;
        for (size_t i = 0; c && i < polled; i++) {
            struct conn *next = c->next;
            short re = pf[base + i].revents;
            bool dead = false;
            if (re & (POLLIN | POLLHUP | POLLERR)) {
                if (on_readable(c) < 0)
                    dead = true;
            }
            if (!dead && (re & POLLOUT) && flush_out(x, c) < 0)
                dead = true;
            if (!dead && c->st == C_CLOSING && (c->peer_eof || now >= c->deadline))
                dead = true;
            if (dead)
                conn_free(x, c);
            c = next;
        }
        /* Work for every connection: new data, requests, deadlines. */
        for (c = x->conns; c;) {
            struct conn *next = c->next;
            bool dead = false;
            if (c->st == C_CONTROL || c->st == C_GRACE) {
                if (c->partial_since > 0 && now - c->partial_since > STALL_S)
                    dead = true;
            }
            if (!dead && !ending_phase)
                pump(x, c, now);
            if (!dead && flush_out(x, c) < 0)
                dead = true;
            if (!dead && c->close_after_flush && c->out_off == c->out_len && c->st != C_CLOSING) {
                shutdown(c->fd, SHUT_WR);
                c->st = C_CLOSING;
                c->deadline = now + CLOSE_WAIT_S;
            }
            if (!dead && c->peer_eof && c->st != C_CLOSING && c->out_off == c->out_len &&
                (c->st != C_CONTROL || (c->in_len == 0 || c->close_after_flush)) &&
                c->data != D_DRAIN)
                dead = true;
            if (dead)
                conn_free(x, c);
            c = next;
        }
    }
    while (x->conns)
        conn_free(x, x->conns);
    close_listeners(x);
    free(pf);
    pthread_mutex_lock(&x->done_lock);
    x->done = true;
    pthread_cond_broadcast(&x->done_cond);
    pthread_mutex_unlock(&x->done_lock);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* the API for trace_out.c */

static struct export *alloc_export(int ncpus, uint64_t cap, int overflow)
{
    if (ncpus < 1 || ncpus > MAX_CPUS_) {
        vbts_fail("trace export: %d vCPUs is more than it supports", ncpus);
        return NULL;
    }
    struct export *x = calloc(1, sizeof(*x));
    if (!x) {
        vbts_fail("out of memory");
        return NULL;
    }
    x->ncpus = ncpus;
    x->wake_fd = -1;
    x->overflow = overflow;
    x->buffer_size = cap * VBTS_RECORD_SIZE;
    x->buffer_limit = UINT64_MAX;
    atomic_init(&x->trace_flags, VBTS_CFG_TRACE_ON | VBTS_CFG_CTX_MARKERS);
    pthread_mutex_init(&x->done_lock, NULL);
    pthread_cond_init(&x->done_cond, NULL);
    x->rings = calloc((size_t)ncpus, sizeof(*x->rings));
    if (!x->rings) {
        free(x);
        vbts_fail("out of memory");
        return NULL;
    }
    for (int i = 0; i < ncpus; i++) {
        if (xring_init(&x->rings[i], cap, overflow) < 0) {
            vbts_fail("cannot allocate a %llu-byte trace buffer",
                      (unsigned long long)(cap * VBTS_RECORD_SIZE));
            for (int j = 0; j < i; j++)
                xring_destroy(&x->rings[j]);
            free(x->rings);
            free(x);
            return NULL;
        }
    }
    return x;
}

static void free_export(struct export *x)
{
    for (int i = 0; i < x->nls; i++) {
        free(x->ls[i].name);
        free(x->ls[i].unlink_path);
    }
    free(x->ls);
    for (int i = 0; i < x->ncpus; i++)
        xring_destroy(&x->rings[i]);
    free(x->rings);
    if (x->wake_fd >= 0)
        close(x->wake_fd);
    pthread_mutex_destroy(&x->done_lock);
    pthread_cond_destroy(&x->done_cond);
    free(x);
}

struct export *export_open(const struct export_config *cfg, int ncpus, uint32_t file_flags)
{
    uint64_t cap = cfg->buffer_size / VBTS_RECORD_SIZE;
    struct export *x = alloc_export(ncpus, cap, cfg->overflow);
    if (!x)
        return NULL;
    x->file_flags = file_flags;
    x->buffer_limit = cfg->buffer_limit;
    x->linger = cfg->linger;
    x->quiet = cfg->quiet;
    x->ls = calloc((size_t)cfg->ndests, sizeof(*x->ls));
    x->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!x->ls || x->wake_fd < 0) {
        vbts_fail_errno("trace export");
        free_export(x);
        return NULL;
    }
    for (int i = 0; i < cfg->ndests; i++) {
        const char *d = cfg->dests[i];
        int r = export_dest_kind(d) == 1 ? listen_unix(&x->ls[i], d) : listen_tcp(&x->ls[i], d);
        if (r < 0) {
            close_listeners(x);
            free_export(x);
            return NULL;
        }
        x->nls++;
    }
    if (!x->quiet)
        for (int i = 0; i < x->nls; i++)
            fprintf(stderr, "vbts: listening on %s\n", x->ls[i].name);
    /* The server thread takes no signals: they go to the monitor's signal thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&x->thread, NULL, server_main, x);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        vbts_fail("cannot start the trace server thread: %s", strerror(e));
        close_listeners(x);
        free_export(x);
        return NULL;
    }
    x->thread_started = true;
    return x;
}

static void wake(struct export *x)
{
    if (x->wake_fd >= 0) {
        uint64_t one = 1;
        if (write(x->wake_fd, &one, sizeof(one)) < 0) {
            /* the counter is saturated: the server is awake anyway */
        }
    }
}

uint64_t export_publish(struct export *x, int cpu, const struct vbts_record *r, uint64_t n)
{
    uint64_t k = xring_publish(&x->rings[cpu], r, n, &x->stop_wait);
    wake(x);
    return k;
}

uint32_t export_chunk_max(struct export *x, int cpu)
{
    return atomic_load_explicit(&x->rings[cpu].chunk_max, memory_order_relaxed);
}

unsigned export_trace_flags(struct export *x)
{
    return atomic_load_explicit(&x->trace_flags, memory_order_relaxed);
}

void export_vcpu_done(struct export *x, int cpu)
{
    struct xring *r = &x->rings[cpu];
    pthread_mutex_lock(&r->lock);
    r->finished = true;
    if (r->lost_pending)
        xring_place_lost(r);
    pthread_mutex_unlock(&r->lock);
    wake(x);
}

void export_interrupt(struct export *x, int sig)
{
    if (!x)
        return;
    int zero = 0;
    atomic_compare_exchange_strong(&x->sig, &zero, sig);
    atomic_store(&x->stop_wait, 1);
    for (int i = 0; i < x->ncpus; i++) {
        pthread_mutex_lock(&x->rings[i].lock);
        pthread_cond_broadcast(&x->rings[i].space);
        pthread_mutex_unlock(&x->rings[i].lock);
    }
    wake(x);
}

int export_finish(struct export *x)
{
    for (int i = 0; i < x->ncpus; i++)
        export_vcpu_done(x, i);
    x->linger_deadline = now_s() + x->linger;
    atomic_store(&x->ending, 1);
    wake(x);
    pthread_mutex_lock(&x->done_lock);
    while (!x->done)
        pthread_cond_wait(&x->done_cond, &x->done_lock);
    pthread_mutex_unlock(&x->done_lock);
    if (x->finish_sig && x->overflow == VBTS_OVERFLOW_BLOCK && x->undelivered)
        return x->finish_sig;
    return 0;
}

void export_close(struct export *x)
{
    if (!x)
        return;
    if (x->thread_started) {
        atomic_store(&x->quit, 1);
        wake(x);
        pthread_join(x->thread, NULL);
    }
    uint64_t dropped = 0, overwritten = 0;
    for (int i = 0; i < x->ncpus; i++) {
        dropped += x->rings[i].dropped;
        overwritten += x->rings[i].overwritten;
    }
    if (x->nls > 0 && !x->quiet) {
        const char *name = x->ls[0].name;
        if (dropped)
            fprintf(stderr, "vbts: %s: %llu records dropped (%s)\n", name,
                    (unsigned long long)dropped,
                    x->overflow == VBTS_OVERFLOW_DROP ? "--overflow drop"
                                                      : "the buffer was full when a signal came");
        if (overwritten)
            fprintf(stderr, "vbts: %s: %llu records overwritten (--overflow wrap)\n", name,
                    (unsigned long long)overwritten);
    }
    if (x->nls > 0 && x->undelivered)
        fprintf(stderr, "vbts: %s: %llu records were never read by a client%s\n", x->ls[0].name,
                (unsigned long long)x->undelivered,
                x->finish_sig ? " (interrupted)" : " (--linger expired)");
    free_export(x);
}

/* ------------------------------------------------------------------ */
/* detached: the same code without sockets, for tests and the fuzzer */

struct export *export_new_detached(int ncpus, uint64_t cap, int overflow)
{
    struct export *x = alloc_export(ncpus, cap, overflow);
    if (x)
        x->buffer_limit = cap * VBTS_RECORD_SIZE * 4 * (uint64_t)ncpus;
    return x;
}

void export_detached_feed(struct export *x, const uint8_t *in, size_t len,
                          void (*out)(void *ctx, const uint8_t *p, size_t n), void *ctx)
{
    detached_out = out;
    detached_ctx = ctx;
    struct conn *c = x->conns;
    if (!c) {
        c = conn_new(x, -1, 0);
        if (!c)
            return;
    }
    for (int rounds = 0; rounds < 100000; rounds++) {
        if (c->close_after_flush || c->st == C_CLOSING)
            break;
        size_t take = sizeof(c->in) - c->in_len;
        if (take > len)
            take = len;
        if (c->st == C_STREAM) {
            take = len;     /* a streaming client's bytes are read and ignored */
        } else {
            memcpy(c->in + c->in_len, in, take);
            c->in_len += take;
        }
        in += take;
        len -= take;
        uint64_t before = c->q_total;
        size_t in_before = c->in_len;
        pump(x, c, 1.0);
        flush_out(x, c);
        if (len == 0 && c->q_total == before && c->in_len == in_before)
            break;
    }
    flush_out(x, c);
    detached_out = NULL;
    detached_ctx = NULL;
}

void export_free_detached(struct export *x)
{
    if (!x)
        return;
    while (x->conns)
        conn_free(x, x->conns);
    free_export(x);
}
