/* SPDX-License-Identifier: MIT */
/* The server thread (poll(2), non-blocking sockets), the end of the run, and the API. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "export/server/conn.h"
#include "export/server/feed.h"
#include "export/server/listen.h"
#include "export/server/session.h"
#include "vbts/dest.h"

/* The signals a thread's own fault or forbidden system call raises. */
static const int own_faults[] = { SIGSYS, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static bool everything_delivered(struct server *x)
{
    for (int i = 0; i < x->ncpus; i++) {
        struct ring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        bool empty = r->tail == r->head && r->lost_pending == 0 && !r->stop_pending &&
                     (r->mode == VBTS_OVERFLOW_WRAP || r->hold == r->head);
        pthread_mutex_unlock(&r->lock);
        if (!empty)
            return false;
    }
    /* A watcher cannot hold the guest, nor the monitor's end: it gets what it can until then. */
    for (struct conn *c = x->conns; c; c = c->next)
        if (!c->watch && (c->out_off != c->out_len || c->data == D_DRAIN || c->st == C_STREAM))
            return false;
    return true;
}

static uint64_t count_undelivered(struct server *x)
{
    uint64_t n = 0;
    for (int i = 0; i < x->ncpus; i++) {
        struct ring *r = &x->rings[i];
        pthread_mutex_lock(&r->lock);
        n += r->head - (r->mode == VBTS_OVERFLOW_WRAP ? r->tail : r->hold) + r->lost_pending +
             (r->stop_pending ? 1 : 0);
        pthread_mutex_unlock(&r->lock);
    }
    return n;
}

static bool finished(struct server *x, double now)
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

/* The guest ended and every client has what it can get: close listeners, half-close clients. */
static void begin_ending(struct server *x, double deadline)
{
    x->undelivered = count_undelivered(x);
    x->finish_sig = atomic_load(&x->sig);
    listen_close_all(x);
    for (struct conn *c = x->conns; c; c = c->next) {
        if (c->st != C_CLOSING) {
            conn_flush(x, c);
            shutdown(c->fd, SHUT_WR);
            c->st = C_CLOSING;
            c->deadline = deadline;
        }
    }
}

/* The poll set: the wake-up eventfd, the listeners, the connections; and how long to wait. */
static size_t poll_set(struct server *x, struct pollfd *pf, double now, double *timeout)
{
    size_t k = 0;
    pf[k++] = (struct pollfd){ .fd = x->wake_fd, .events = POLLIN };
    for (int i = 0; i < x->nls; i++)
        pf[k++] = (struct pollfd){ .fd = x->ls[i].fd, .events = x->ls[i].fd >= 0 ? POLLIN : 0 };
    *timeout = 0.1;
    for (struct conn *c = x->conns; c; c = c->next) {
        short ev = POLLIN;
        bool keep = c->st == C_GRACE || c->st == C_CONTROL;
        if (keep && (c->close_after_flush || c->in_len == sizeof(c->in)))
            ev = 0;
        if (c->out_off != c->out_len)
            ev |= POLLOUT;
        pf[k++] = (struct pollfd){ .fd = c->fd, .events = ev };
        if ((c->st == C_GRACE || c->st == C_CLOSING) && c->deadline - now < *timeout)
            *timeout = c->deadline - now;
    }
    if (*timeout < 0)
        *timeout = 0;
    return k;
}

/* What poll said about the connections it saw (those accepted since are at the head). */
static void polled(struct server *x, const struct pollfd *pf, size_t base, size_t n, double now)
{
    struct conn *c = x->conns;
    size_t fresh = (size_t)x->nconns - n;
    for (size_t i = 0; i < fresh && c; i++)
        c = c->next;
    for (size_t i = 0; c && i < n; i++) {
        struct conn *next = c->next;
        short re = pf[base + i].revents;
        bool dead = (re & (POLLIN | POLLHUP | POLLERR)) && conn_readable(c) < 0;
        if (!dead && (re & POLLOUT) && conn_flush(x, c) < 0)
            dead = true;
        if (!dead && c->st == C_CLOSING && (c->peer_eof || now >= c->deadline))
            dead = true;
        if (dead)
            conn_free(x, c);
        c = next;
    }
}

/* Work for every connection: new data, requests, deadlines. */
static void pump_all(struct server *x, bool ending_phase, double now)
{
    for (struct conn *c = x->conns; c;) {
        struct conn *next = c->next;
        bool dead = (c->st == C_CONTROL || c->st == C_GRACE) && c->partial_since > 0 &&
                    now - c->partial_since > STALL_S;
        if (!dead && !ending_phase)
            session_pump(x, c, now);
        dead |= c->broken;
        if (!dead && conn_flush(x, c) < 0)
            dead = true;
        if (!dead && c->close_after_flush && c->out_off == c->out_len && c->st != C_CLOSING)
            conn_closing(c, now);
        if (!dead && c->peer_eof && c->st != C_CLOSING && c->out_off == c->out_len &&
            (c->st != C_CONTROL || (c->in_len == 0 || c->close_after_flush)) &&
            c->data != D_DRAIN)
            dead = true;
        if (dead)
            conn_free(x, c);
        c = next;
    }
}

static void *server_main(void *arg)
{
    struct server *x = arg;
    struct pollfd *pf = NULL;
    size_t npf = 0;
    bool ending_phase = false;
    double end_deadline = 0;

    while (!atomic_load(&x->quit)) {
        double now = clock_monotonic_s();
        if (!ending_phase && finished(x, now)) {
            ending_phase = true;
            end_deadline = now + CLOSE_WAIT_S;
            begin_ending(x, end_deadline);
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
        double timeout;
        size_t k = poll_set(x, pf, now, &timeout);
        int pr = poll(pf, k, (int)(timeout * 1000) + 1);
        if (pr < 0 && errno != EINTR)
            break;
        now = clock_monotonic_s();
        uint64_t v;
        if (pr > 0 && (pf[0].revents & POLLIN) && read(x->wake_fd, &v, sizeof(v)) < 0) {
            /* counter already read */
        }
        for (int i = 0; i < x->nls; i++)
            if (pr > 0 && (pf[1 + i].revents & POLLIN) && !ending_phase)
                listen_accept(x, &x->ls[i], now);
        size_t base = 1 + (size_t)x->nls;
        polled(x, pf, base, k - base, now);
        pump_all(x, ending_phase, now);
    }
    while (x->conns)
        conn_free(x, x->conns);
    listen_close_all(x);
    free(pf);
    pthread_mutex_lock(&x->done_lock);
    x->done = true;
    pthread_cond_broadcast(&x->done_cond);
    pthread_mutex_unlock(&x->done_lock);
    return NULL;
}

static struct server *alloc_server(int ncpus, uint64_t cap, int overflow)
{
    if (ncpus < 1 || ncpus > MAX_CPUS_) {
        error_fail("trace export: %d vCPUs is more than it supports", ncpus);
        return NULL;
    }
    struct server *x = calloc(1, sizeof(*x));
    if (!x) {
        error_fail("out of memory");
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
        error_fail("out of memory");
        return NULL;
    }
    for (int i = 0; i < ncpus; i++) {
        if (ring_init(&x->rings[i], cap, overflow) < 0) {
            error_fail("cannot allocate a %llu-byte trace buffer",
                      (unsigned long long)(cap * VBTS_RECORD_SIZE));
            for (int j = 0; j < i; j++)
                ring_destroy(&x->rings[j]);
            free(x->rings);
            free(x);
            return NULL;
        }
    }
    return x;
}

static void free_server(struct server *x)
{
    for (int i = 0; i < x->nls; i++) {
        free(x->ls[i].name);
        free(x->ls[i].unlink_path);
    }
    free(x->ls);
    for (int i = 0; i < x->ncpus; i++)
        ring_destroy(&x->rings[i]);
    free(x->rings);
    if (x->wake_fd >= 0)
        close(x->wake_fd);
    pthread_mutex_destroy(&x->done_lock);
    pthread_cond_destroy(&x->done_cond);
    free(x);
}

struct server *server_open(const struct server_config *cfg, int ncpus, uint32_t file_flags)
{
    uint64_t cap = cfg->buffer_size / VBTS_RECORD_SIZE;
    struct server *x = alloc_server(ncpus, cap, cfg->overflow);
    if (!x)
        return NULL;
    x->file_flags = file_flags;
    x->buffer_limit = cfg->buffer_limit;
    x->linger = cfg->linger;
    x->quiet = cfg->quiet;
    x->ls = calloc((size_t)cfg->ndests, sizeof(*x->ls));
    x->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!x->ls || x->wake_fd < 0) {
        error_fail_errno("trace export");
        free_server(x);
        return NULL;
    }
    for (int i = 0; i < cfg->ndests; i++) {
        const char *d = cfg->dests[i];
        int r = listen_open(&x->ls[i], d);
        if (r < 0) {
            listen_close_all(x);
            free_server(x);
            return NULL;
        }
        x->nls++;
    }
    /* Watchers neither consume nor hold records: with nobody else, block
     * and drop mode would only fill the buffer. */
    bool control = false;
    for (int i = 0; i < x->nls; i++)
        control |= x->ls[i].control;
    if (!control && x->overflow != VBTS_OVERFLOW_WRAP) {
        error_fail("--trace %s: its clients can only watch, so nothing would empty the buffer "
                   "in %s mode (use tcp:PORT,control, a unix: socket or --overflow wrap)",
                   cfg->dests[0], x->overflow == VBTS_OVERFLOW_BLOCK ? "block" : "drop");
        listen_close_all(x);
        free_server(x);
        return NULL;
    }
    if (!x->quiet)
        for (int i = 0; i < x->nls; i++)
            fprintf(stderr, "vbts: listening on %s%s\n", x->ls[i].name,
                    x->ls[i].control ? "" : " (clients watch only)");
    /* The server thread takes no signals: they go to the monitor's signal
     * thread.  Those its own faults raise stay open: blocked, the kernel
     * would kill the monitor without the sandbox's or the crash's line. */
    sigset_t all, old;
    sigfillset(&all);
    for (size_t i = 0; i < sizeof(own_faults) / sizeof(own_faults[0]); i++)
        sigdelset(&all, own_faults[i]);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&x->thread, NULL, server_main, x);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        error_fail("cannot start the trace server thread: %s", strerror(e));
        listen_close_all(x);
        free_server(x);
        return NULL;
    }
    x->thread_started = true;
    return x;
}

static void wake(struct server *x)
{
    if (x->wake_fd >= 0) {
        uint64_t one = 1;
        if (write(x->wake_fd, &one, sizeof(one)) < 0) {
            /* the counter is saturated: the server is awake anyway */
        }
    }
}

uint64_t server_publish(struct server *x, int cpu, const struct vbts_record *r, uint64_t n)
{
    uint64_t k = ring_publish(&x->rings[cpu], r, n, &x->stop_wait);
    wake(x);
    return k;
}

uint32_t server_chunk_max(struct server *x, int cpu)
{
    return atomic_load_explicit(&x->rings[cpu].chunk_max, memory_order_relaxed);
}

unsigned server_trace_flags(struct server *x)
{
    return atomic_load_explicit(&x->trace_flags, memory_order_relaxed);
}

void server_vcpu_done(struct server *x, int cpu)
{
    struct ring *r = &x->rings[cpu];
    pthread_mutex_lock(&r->lock);
    r->finished = true;
    if (r->lost_pending || r->stop_pending)
        ring_place_lost(r);
    pthread_mutex_unlock(&r->lock);
    wake(x);
}

void server_interrupt(struct server *x, int sig)
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

int server_finish(struct server *x)
{
    for (int i = 0; i < x->ncpus; i++)
        server_vcpu_done(x, i);
    x->linger_deadline = clock_monotonic_s() + x->linger;
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

void server_close(struct server *x)
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
    free_server(x);
}

/* ------------------------------------------------------------------ */
/* detached: the same code without sockets, for tests and the fuzzer */

struct server *server_new_detached(int ncpus, uint64_t cap, int overflow)
{
    struct server *x = alloc_server(ncpus, cap, overflow);
    if (x)
        x->buffer_limit = cap * VBTS_RECORD_SIZE * 4 * (uint64_t)ncpus;
    return x;
}

void server_detached_feed(struct server *x, const uint8_t *in, size_t len,
                          void (*out)(void *ctx, const uint8_t *p, size_t n), void *ctx)
{
    x->detached_out = out;
    x->detached_ctx = ctx;
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
        session_pump(x, c, 1.0);
        conn_flush(x, c);
        if (len == 0 && c->q_total == before && c->in_len == in_before)
            break;
    }
    conn_flush(x, c);
    x->detached_out = NULL;
    x->detached_ctx = NULL;
}

void server_free_detached(struct server *x)
{
    if (!x)
        return;
    while (x->conns)
        conn_free(x, x->conns);
    free_server(x);
}
