/* SPDX-License-Identifier: MIT */
#include "export/sink.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "export/file.h"
#include "export/ring.h"
#include "export/zfile.h"
#include "export/zframe.h"
#include "export/server/server.h"
#include "vbts/dest.h"
#include "vbts/protocol.h"

struct out_file {
    int fd;                     /* a plain file, or -1 */
    struct zfile *z;            /* a compressed one (a name ending in .zst) */
    const char *path;
};

/* One vCPU's staging buffer: the chunk being filled. */
struct stage {
    struct vbts_record *buf;
    uint32_t n;
    uint64_t seq;               /* sequence number of buf[0] */
    uint64_t branches;          /* branch records, markers excluded */
    uint64_t suppressed;        /* branches not recorded while CONFIG turned tracing off */
    bool stopped;
};

struct sink {
    int ncpus;
    struct out_file *files;
    int nfiles;
    pthread_mutex_t lock;       /* file writes from several vCPUs */
    bool failed;
    char err[VBTS_MAX_MSG];
    void (*on_fail)(void *ctx, const char *msg);
    void *fail_ctx;
    uint32_t chunk_max;         /* without sockets */
    struct server *srv;         /* NULL without socket destinations */
    struct stage *stage;        /* per vCPU */
};

static uint64_t default_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || psize <= 0)
        return 1ull << 30;
    return (uint64_t)pages * (uint64_t)psize / 4;
}

static void free_sink(struct sink *s)
{
    for (int i = 0; i < s->nfiles; i++) {
        if (s->files[i].fd >= 0)
            close(s->files[i].fd);
        zfile_close(s->files[i].z);
    }
    for (int i = 0; s->stage && i < s->ncpus; i++)
        free(s->stage[i].buf);
    free(s->stage);
    free(s->files);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int check_sizes(const struct sink_config *c, uint64_t limit, int ncpus)
{
    if (c->buffer_size < VBTS_RECORD_SIZE)
        return error_fail("--buffer-size: %llu bytes is less than one record (24 bytes)",
                          (unsigned long long)c->buffer_size);
    if (c->buffer_size > limit / (uint64_t)ncpus)
        return error_fail("--buffer-size: %d vCPU buffer%s of %llu bytes exceed%s the buffer "
                          "limit of %llu bytes (%s)", ncpus, ncpus > 1 ? "s" : "",
                          (unsigned long long)c->buffer_size, ncpus > 1 ? "" : "s",
                          (unsigned long long)limit,
                          c->buffer_limit ? "--buffer-limit"
                                          : "a quarter of RAM; raise it with --buffer-limit");
    return 0;
}

static struct sink *alloc_sink(const struct sink_config *c, int ncpus)
{
    struct sink *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->ncpus = ncpus;
    s->files = calloc((size_t)c->ndests, sizeof(*s->files));
    s->stage = calloc((size_t)ncpus, sizeof(*s->stage));
    if (!s->files || !s->stage) {
        free_sink(s);
        return NULL;
    }
    for (int i = 0; i < ncpus; i++) {
        s->stage[i].buf = calloc(EXPORT_CHUNK_MAX, sizeof(struct vbts_record));
        if (!s->stage[i].buf) {
            free_sink(s);
            return NULL;
        }
    }
    return s;
}

static int open_files(struct sink *s, const struct sink_config *c, const char **socks, int *nsocks)
{
    struct vbts_file_header h;
    file_header(&h, (uint32_t)s->ncpus, VBTS_FILE_F_KIND);
    for (int i = 0; i < c->ndests; i++) {
        const char *d = c->dests[i];
        if (vbts_dest_kind(d) != VBTS_DEST_FILE) {
            if (*nsocks < 16)
                socks[(*nsocks)++] = d;
            continue;
        }
        struct out_file *f = &s->files[s->nfiles];
        bool z = zframe_wanted(d);
        f->path = d;
        f->fd = file_create(d, z ? NULL : &h, c->force);
        if (f->fd < 0)
            return -1;
        if (z && !(f->z = zfile_open(f->fd, d, &h))) {
            f->fd = -1;
            return -1;
        }
        if (z)
            f->fd = -1;
        s->nfiles++;
    }
    return 0;
}

struct sink *sink_open(const struct sink_config *c, int ncpus)
{
    uint64_t limit = c->buffer_limit ? c->buffer_limit : default_limit();
    if (check_sizes(c, limit, ncpus) < 0)
        return NULL;
    struct sink *s = alloc_sink(c, ncpus);
    if (!s) {
        error_fail("out of memory");
        return NULL;
    }
    s->chunk_max = ring_chunk_max_for(c->buffer_size / VBTS_RECORD_SIZE);
    s->on_fail = c->on_fail;
    s->fail_ctx = c->fail_ctx;
    const char *socks[16];
    int nsocks = 0;
    if (open_files(s, c, socks, &nsocks) < 0) {
        free_sink(s);
        return NULL;
    }
    if (nsocks) {
        struct server_config sc = {
            .dests = socks, .ndests = nsocks, .buffer_size = c->buffer_size,
            .buffer_limit = limit, .overflow = c->overflow, .linger = c->linger,
            .quiet = c->quiet,
        };
        s->srv = server_open(&sc, ncpus, VBTS_FILE_F_KIND);
        if (!s->srv) {
            free_sink(s);
            return NULL;
        }
    }
    return s;
}

bool sink_failed(const struct sink *s)
{
    return s->failed;
}

int sink_finish(struct sink *s)
{
    return s && s->srv ? server_finish(s->srv) : 0;
}

void sink_interrupt(struct sink *s, int sig)
{
    if (s && s->srv)
        server_interrupt(s->srv, sig);
}

int sink_close(struct sink *s)
{
    int ret = 0;
    if (!s)
        return 0;
    server_close(s->srv);
    if (s->failed)
        ret = error_fail("%s", s->err);
    for (int i = 0; i < s->nfiles; i++) {
        struct out_file *f = &s->files[i];
        /* A compressed file's queue is written out first. */
        if (f->z && zfile_close(f->z) < 0 && ret == 0)
            ret = -1;
        f->z = NULL;
        if (f->fd >= 0 && close(f->fd) < 0 && ret == 0)
            ret = error_fail_errno("closing trace %s", f->path);
        f->fd = -1;
    }
    free_sink(s);
    return ret;
}

static void write_files(struct sink *s, int cpu, uint64_t seq, const struct vbts_record *r,
                        uint32_t n)
{
    if (!s->nfiles)
        return;
    bool failed_now = false;
    char msg[VBTS_MAX_MSG];
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nfiles && !s->failed; i++) {
        struct out_file *f = &s->files[i];
        if (f->z ? zfile_put(f->z, cpu, seq, r, n) < 0 : file_write_chunk(f->fd, cpu, seq, r, n) < 0) {
            if (f->z)
                snprintf(s->err, sizeof(s->err), "%s", zfile_error(f->z));
            else
                snprintf(s->err, sizeof(s->err), "writing trace %s: %s", f->path, strerror(errno));
            s->failed = failed_now = true;
            memcpy(msg, s->err, sizeof(msg));
        }
    }
    pthread_mutex_unlock(&s->lock);
    /* Outside the lock: the callback ends the run, which kicks other vCPUs
     * that may be waiting for this lock. */
    if (failed_now && s->on_fail)
        s->on_fail(s->fail_ctx, msg);
}

/* Seal the staged records as one chunk: to the files, then to the sockets. */
static void seal(struct sink *s, int cpu)
{
    struct stage *st = &s->stage[cpu];
    if (st->n == 0)
        return;
    write_files(s, cpu, st->seq, st->buf, st->n);
    if (s->srv)
        server_publish(s->srv, cpu, st->buf, st->n);
    st->seq += st->n;
    st->n = 0;
}

static void stage_one(struct sink *s, int cpu, struct vbts_record r)
{
    struct stage *st = &s->stage[cpu];
    st->buf[st->n++] = r;
    uint32_t max = s->srv ? server_chunk_max(s->srv, cpu) : s->chunk_max;
    if (st->n >= max)
        seal(s, cpu);
}

void sink_emit(struct sink *s, int cpu, struct vbts_record r)
{
    struct stage *st = &s->stage[cpu];
    bool marker = vbts_record_is_marker(&r);
    if (s->srv) {
        /* CONFIG from a client: tracing off, context markers off. */
        unsigned f = server_trace_flags(s->srv);
        if (marker) {
            unsigned q = vbts_marker_qual(&r);
            if ((q == VBTS_MARK_CTX_ARRIVE || q == VBTS_MARK_CTX_DEPART) &&
                !(f & VBTS_CFG_CTX_MARKERS))
                return;
        } else if (!(f & VBTS_CFG_TRACE_ON)) {
            st->suppressed++;
            return;
        }
        if (st->suppressed) {
            stage_one(s, cpu, vbts_marker(VBTS_MARK_LOST, st->suppressed, 0));
            st->suppressed = 0;
        }
    }
    if (!marker)
        st->branches++;
    stage_one(s, cpu, r);
}

void sink_emit_start(struct sink *s, int cpu)
{
    sink_emit(s, cpu, vbts_marker(VBTS_MARK_START, clock_realtime_ns(), 0));
}

void sink_stop(struct sink *s, int cpu, enum vbts_stop_reason why)
{
    struct stage *st = &s->stage[cpu];
    if (st->stopped)
        return;
    st->stopped = true;
    sink_emit(s, cpu, vbts_marker(VBTS_MARK_STOP, clock_realtime_ns(), why));
    seal(s, cpu);
    if (s->srv)
        server_vcpu_done(s->srv, cpu);
}

bool sink_stopped(const struct sink *s, int cpu)
{
    return s->stage[cpu].stopped;
}

uint64_t sink_branches(const struct sink *s, int cpu)
{
    return s->stage[cpu].branches;
}
