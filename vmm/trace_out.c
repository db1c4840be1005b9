/* SPDX-License-Identifier: MIT */
/*
 * Per-vCPU record staging and the sink it drains into.
 *
 * trace_emit (the vCPU thread) only appends to a private chunk buffer.  The
 * producer decides chunk boundaries: a chunk is sealed when it holds
 * export_chunk_max() records (4096, or the buffer size if smaller) or when
 * the vCPU stops.  A sealed chunk is written to every trace file as is and
 * published to the socket buffers (export_*.c), which send the same chunks,
 * so a file and a socket carry the same bytes unless a client lost records.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "trace.h"

struct out_file {
    int fd;
    const char *path;
};

struct trace_sink {
    int ncpus;
    struct out_file *files;
    int nfiles;
    pthread_mutex_t lock;       /* file writes from several vCPUs */
    bool failed;
    char err[VBTS_MAX_MSG];
    uint32_t chunk_max;         /* without sockets */
    struct export *ex;          /* NULL without socket destinations */
};

/* What trace_vcpu_new allocates: the engine's view and ours. */
struct vcpu_out {
    struct trace_vcpu t;
    uint64_t suppressed;        /* branches not recorded while CONFIG turned tracing off */
};

static int write_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        ssize_t w = writev(fd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (cnt > 0 && (size_t)w >= iov->iov_len) {
            w -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= w;
        }
    }
    return 0;
}

static uint64_t default_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || psize <= 0)
        return 1ull << 30;
    return (uint64_t)pages * (uint64_t)psize / 4;
}

static void free_sink(struct trace_sink *s)
{
    for (int i = 0; i < s->nfiles; i++)
        if (s->files[i].fd >= 0)
            close(s->files[i].fd);
    free(s->files);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

struct trace_sink *trace_sink_open(const struct trace_sink_config *c, int ncpus)
{
    uint64_t limit = c->buffer_limit ? c->buffer_limit : default_limit();
    if (c->buffer_size < VBTS_RECORD_SIZE) {
        vbts_fail("--buffer-size: %llu bytes is less than one record (24 bytes)",
                  (unsigned long long)c->buffer_size);
        return NULL;
    }
    if (c->buffer_size > limit / (uint64_t)ncpus) {
        vbts_fail("--buffer-size: %d vCPU buffer%s of %llu bytes exceed%s the buffer limit of "
                  "%llu bytes (%s)", ncpus, ncpus > 1 ? "s" : "",
                  (unsigned long long)c->buffer_size, ncpus > 1 ? "" : "s",
                  (unsigned long long)limit,
                  c->buffer_limit ? "--buffer-limit" : "a quarter of RAM; raise it with --buffer-limit");
        return NULL;
    }
    struct trace_sink *s = calloc(1, sizeof(*s));
    if (s)
        s->files = calloc((size_t)c->ndests, sizeof(*s->files));
    if (!s || !s->files) {
        free(s);
        vbts_fail("out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->ncpus = ncpus;
    s->chunk_max = xring_chunk_max_for(c->buffer_size / VBTS_RECORD_SIZE);

    struct vbts_file_header h = {
        .version_major = VBTS_VERSION_MAJOR, .version_minor = VBTS_VERSION_MINOR,
        .header_size = sizeof(h), .record_size = VBTS_RECORD_SIZE,
        .flags = VBTS_FILE_F_KIND, .ncpus = (uint32_t)ncpus,
    };
    memcpy(h.magic, VBTS_MAGIC, VBTS_MAGIC_LEN);
    const char *socks[16];
    int nsocks = 0;
    for (int i = 0; i < c->ndests; i++) {
        const char *d = c->dests[i];
        if (export_dest_kind(d)) {
            if (nsocks < (int)(sizeof(socks) / sizeof(socks[0])))
                socks[nsocks++] = d;
            continue;
        }
        struct out_file *f = &s->files[s->nfiles];
        f->path = d;
        f->fd = open(d, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (f->fd < 0) {
            vbts_fail_errno("cannot create trace file %s", d);
            free_sink(s);
            return NULL;
        }
        s->nfiles++;
        struct iovec iov = { &h, sizeof(h) };
        if (write_all(f->fd, &iov, 1) < 0) {
            vbts_fail_errno("writing trace %s", d);
            free_sink(s);
            return NULL;
        }
    }
    if (nsocks) {
        struct export_config ec = {
            .dests = socks, .ndests = nsocks, .buffer_size = c->buffer_size,
            .buffer_limit = limit, .overflow = c->overflow, .linger = c->linger,
            .quiet = c->quiet,
        };
        s->ex = export_open(&ec, ncpus, VBTS_FILE_F_KIND);
        if (!s->ex) {
            free_sink(s);
            return NULL;
        }
    }
    return s;
}

bool trace_sink_failed(const struct trace_sink *s)
{
    return s->failed;
}

int trace_sink_finish(struct trace_sink *s)
{
    return s && s->ex ? export_finish(s->ex) : 0;
}

void trace_sink_interrupt(struct trace_sink *s, int sig)
{
    if (s && s->ex)
        export_interrupt(s->ex, sig);
}

int trace_sink_close(struct trace_sink *s)
{
    int ret = 0;
    if (!s)
        return 0;
    export_close(s->ex);
    if (s->failed)
        ret = vbts_fail("%s", s->err);
    for (int i = 0; i < s->nfiles; i++) {
        if (close(s->files[i].fd) < 0 && ret == 0)
            ret = vbts_fail_errno("closing trace %s", s->files[i].path);
        s->files[i].fd = -1;
    }
    free_sink(s);
    return ret;
}

static void write_files(struct trace_sink *s, int cpu, uint64_t seq,
                        const struct vbts_record *r, uint32_t n)
{
    if (!s->nfiles)
        return;
    struct vbts_chunk_header h = {
        .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu, .count = n, .seq = seq,
    };
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nfiles && !s->failed; i++) {
        struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)r, (size_t)n * sizeof(*r) } };
        if (write_all(s->files[i].fd, iov, 2) < 0) {
            snprintf(s->err, sizeof(s->err), "writing trace %s: %s", s->files[i].path,
                     strerror(errno));
            s->failed = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* Seal the staged records as one chunk: to the files, then to the sockets. */
static void seal(struct trace_vcpu *t)
{
    if (t->n == 0)
        return;
    write_files(t->sink, t->cpu->index, t->seq, t->buf, t->n);
    if (t->sink->ex)
        export_publish(t->sink->ex, t->cpu->index, t->buf, t->n);
    t->seq += t->n;
    t->n = 0;
}

struct trace_vcpu *trace_vcpu_new(struct trace_sink *sink, struct vcpu *cpu, uint32_t buf_records)
{
    (void)buf_records;      /* the buffer size is the sink's (--buffer-size) */
    struct vcpu_out *o = calloc(1, sizeof(*o));
    if (!o) {
        vbts_fail("out of memory");
        return NULL;
    }
    struct trace_vcpu *t = &o->t;
    t->cap = EXPORT_CHUNK_MAX;
    t->buf = sink ? calloc(t->cap, sizeof(*t->buf)) : NULL;
    if (sink && !t->buf) {
        free(o);
        vbts_fail("cannot allocate a %u-record trace buffer", EXPORT_CHUNK_MAX);
        return NULL;
    }
    t->sink = sink;
    t->cpu = cpu;
    return t;
}

void trace_vcpu_free(struct trace_vcpu *t)
{
    if (!t)
        return;
    free(t->buf);
    free((struct vcpu_out *)t);
}

static void stage(struct trace_vcpu *t, struct vbts_record r)
{
    t->buf[t->n++] = r;
    uint32_t max = t->sink->ex ? export_chunk_max(t->sink->ex, t->cpu->index) : t->sink->chunk_max;
    if (t->n >= max)
        seal(t);
}

void trace_emit(struct trace_vcpu *t, struct vbts_record r)
{
    struct vcpu_out *o = (struct vcpu_out *)t;
    bool marker = vbts_record_is_marker(&r);
    if (t->sink->ex) {
        /* CONFIG from a client: tracing off, context markers off. */
        unsigned f = export_trace_flags(t->sink->ex);
        if (marker) {
            unsigned q = vbts_marker_qual(&r);
            if ((q == VBTS_MARK_CTX_ARRIVE || q == VBTS_MARK_CTX_DEPART) &&
                !(f & VBTS_CFG_CTX_MARKERS))
                return;
        } else if (!(f & VBTS_CFG_TRACE_ON)) {
            o->suppressed++;
            return;
        }
        if (o->suppressed) {
            stage(t, vbts_marker(VBTS_MARK_LOST, o->suppressed, 0));
            o->suppressed = 0;
        }
    }
    if (!marker)
        t->branches++;
    stage(t, r);
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void trace_vcpu_stop(struct trace_vcpu *t, enum vbts_stop_reason why)
{
    if (t->stopped || !t->sink)
        return;
    t->stopped = true;
    trace_emit(t, vbts_marker(VBTS_MARK_STOP, realtime_ns(), why));
    seal(t);
    if (t->sink->ex)
        export_vcpu_done(t->sink->ex, t->cpu->index);
}

void trace_emit_start(struct trace_vcpu *t)
{
    trace_emit(t, vbts_marker(VBTS_MARK_START, realtime_ns(), 0));
}
