/* SPDX-License-Identifier: MIT */
/* Per-vCPU buffers and the sink they drain into, one chunk per flush. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trace.h"

struct trace_sink {
    int fd;
    char *path;
    pthread_mutex_t lock;
    bool failed;
    char err[VBTS_MAX_MSG];
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

static void sink_fail(struct trace_sink *s)
{
    if (!s->failed)
        snprintf(s->err, sizeof(s->err), "writing trace %s: %s", s->path, strerror(errno));
    s->failed = true;
}

struct trace_sink *trace_sink_open(const char *path, int ncpus)
{
    struct trace_sink *s = calloc(1, sizeof(*s));
    if (!s) {
        vbts_fail("out of memory");
        return NULL;
    }
    s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (s->fd < 0) {
        vbts_fail_errno("cannot create trace file %s", path);
        free(s);
        return NULL;
    }
    s->path = strdup(path);
    pthread_mutex_init(&s->lock, NULL);
    struct vbts_file_header h = {
        .version_major = VBTS_VERSION_MAJOR, .version_minor = VBTS_VERSION_MINOR,
        .header_size = sizeof(h), .record_size = VBTS_RECORD_SIZE,
        .flags = VBTS_FILE_F_KIND, .ncpus = (uint32_t)ncpus,
    };
    memcpy(h.magic, VBTS_MAGIC, VBTS_MAGIC_LEN);
    struct iovec iov = { &h, sizeof(h) };
    if (write_all(s->fd, &iov, 1) < 0) {
        vbts_fail_errno("writing trace %s", path);
        close(s->fd);
        free(s->path);
        free(s);
        return NULL;
    }
    return s;
}

bool trace_sink_failed(const struct trace_sink *s)
{
    return s->failed;
}

int trace_sink_close(struct trace_sink *s)
{
    int ret = 0;
    if (!s)
        return 0;
    if (s->failed)
        ret = vbts_fail("%s", s->err);
    if (close(s->fd) < 0 && ret == 0)
        ret = vbts_fail_errno("closing trace %s", s->path);
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s);
    return ret;
}

static void sink_write_chunk(struct trace_sink *s, int cpu, uint64_t seq,
                             const struct vbts_record *r, uint32_t n)
{
    struct vbts_chunk_header h = {
        .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu, .count = n, .seq = seq,
    };
    struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)r, (size_t)n * sizeof(*r) } };
    pthread_mutex_lock(&s->lock);
    if (!s->failed && write_all(s->fd, iov, 2) < 0)
        sink_fail(s);
    pthread_mutex_unlock(&s->lock);
}

static void flush(struct trace_vcpu *t)
{
    if (t->n == 0)
        return;
    sink_write_chunk(t->sink, t->cpu->index, t->seq, t->buf, t->n);
    t->seq += t->n;
    t->n = 0;
}

struct trace_vcpu *trace_vcpu_new(struct trace_sink *sink, struct vcpu *cpu, uint32_t buf_records)
{
    struct trace_vcpu *t = calloc(1, sizeof(*t));
    if (!t) {
        vbts_fail("out of memory");
        return NULL;
    }
    t->buf = sink ? calloc(buf_records, sizeof(*t->buf)) : NULL;
    if (sink && !t->buf) {
        free(t);
        vbts_fail("cannot allocate a %u-record trace buffer", buf_records);
        return NULL;
    }
    t->cap = buf_records;
    t->sink = sink;
    t->cpu = cpu;
    return t;
}

void trace_vcpu_free(struct trace_vcpu *t)
{
    if (!t)
        return;
    free(t->buf);
    free(t);
}

void trace_emit(struct trace_vcpu *t, struct vbts_record r)
{
    if (t->n == t->cap)
        flush(t);
    t->buf[t->n++] = r;
    if (!vbts_record_is_marker(&r))
        t->branches++;
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
    flush(t);
}

void trace_emit_start(struct trace_vcpu *t)
{
    trace_emit(t, vbts_marker(VBTS_MARK_START, realtime_ns(), 0));
}
