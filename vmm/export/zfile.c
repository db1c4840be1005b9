/* SPDX-License-Identifier: MIT */
#include "export/zfile.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "export/file.h"
#include "export/ring.h"
#include "export/zframe.h"

/* Chunks queued at most: 16 of 96 KiB, a few milliseconds of compressing. */
#define ZQ_SLOTS 16
#define SLOT_BYTES (sizeof(struct vbts_chunk_header) + EXPORT_CHUNK_MAX * sizeof(struct vbts_record))

struct slot {
    size_t len;
    uint8_t *bytes;
};

struct zfile {
    int fd;
    char *path;
    struct zframe *zf;
    uint8_t *out;                   /* one compressed frame */
    size_t out_cap;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;            /* a slot filled, a slot freed, closing */
    struct slot slots[ZQ_SLOTS];
    unsigned head, count;           /* oldest queued slot, slots queued */
    bool closing;
    bool failed;
    char err[VBTS_MAX_MSG];
};

/* One frame of n bytes to the file; false (err set) if it could not be written. */
static bool put_frame(struct zfile *z, const uint8_t *src, size_t n)
{
    size_t c = zframe_pack(z->zf, z->out, z->out_cap, src, n);
    if (!c) {
        snprintf(z->err, sizeof(z->err), "writing trace %s: zstd could not compress a chunk",
                 z->path);
        return false;
    }
    if (file_write(z->fd, z->out, c) < 0) {
        snprintf(z->err, sizeof(z->err), "writing trace %s: %s", z->path, strerror(errno));
        return false;
    }
    return true;
}

static void *writer(void *arg)
{
    struct zfile *z = arg;
    pthread_mutex_lock(&z->lock);
    for (;;) {
        while (!z->count && !z->closing)
            pthread_cond_wait(&z->cond, &z->lock);
        if (!z->count)
            break;
        struct slot *s = &z->slots[z->head];
        bool skip = z->failed;
        pthread_mutex_unlock(&z->lock);
        /* After a failure the rest is only taken off the queue. */
        bool ok = skip || put_frame(z, s->bytes, s->len);
        pthread_mutex_lock(&z->lock);
        if (!ok)
            z->failed = true;
        z->head = (z->head + 1) % ZQ_SLOTS;
        z->count--;
        pthread_cond_broadcast(&z->cond);
    }
    pthread_mutex_unlock(&z->lock);
    return NULL;
}

static void free_zfile(struct zfile *z)
{
    for (int i = 0; i < ZQ_SLOTS; i++)
        free(z->slots[i].bytes);
    zframe_free(z->zf);
    free(z->out);
    free(z->path);
    pthread_cond_destroy(&z->cond);
    pthread_mutex_destroy(&z->lock);
    free(z);
}

struct zfile *zfile_open(int fd, const char *path, const struct vbts_file_header *h)
{
    struct zfile *z = calloc(1, sizeof(*z));
    if (!z) {
        close(fd);
        error_fail("out of memory");
        return NULL;
    }
    pthread_mutex_init(&z->lock, NULL);
    pthread_cond_init(&z->cond, NULL);
    z->fd = fd;
    z->out_cap = zframe_bound(SLOT_BYTES);
    z->path = strdup(path);
    z->out = malloc(z->out_cap);
    z->zf = zframe_new(SLOT_BYTES);
    bool ok = z->path && z->out && z->zf;
    for (int i = 0; ok && i < ZQ_SLOTS; i++)
        ok = (z->slots[i].bytes = malloc(SLOT_BYTES)) != NULL;
    if (!ok) {
        close(fd);
        free_zfile(z);
        error_fail("out of memory for the compressed trace %s", path);
        return NULL;
    }
    if (!put_frame(z, (const uint8_t *)h, sizeof(*h))) {
        error_fail("%s", z->err);
        close(fd);
        free_zfile(z);
        return NULL;
    }
    int e = pthread_create(&z->thread, NULL, writer, z);
    if (e) {
        errno = e;
        error_fail_errno("cannot start the compressing thread for %s", path);
        close(fd);
        free_zfile(z);
        return NULL;
    }
    return z;
}

int zfile_put(struct zfile *z, int cpu, uint64_t seq, const struct vbts_record *r, uint32_t n)
{
    if (n > EXPORT_CHUNK_MAX)
        abort();                    /* the sink seals at most that: a bug */
    pthread_mutex_lock(&z->lock);
    while (z->count == ZQ_SLOTS && !z->failed)
        pthread_cond_wait(&z->cond, &z->lock);
    if (z->failed) {
        pthread_mutex_unlock(&z->lock);
        return -1;
    }
    /* Copied under the lock: the writer holds it only between frames. */
    struct slot *s = &z->slots[(z->head + z->count) % ZQ_SLOTS];
    struct vbts_chunk_header h = {
        .magic = VBTS_CHUNK_MAGIC, .cpu = (uint16_t)cpu, .count = n, .seq = seq,
    };
    memcpy(s->bytes, &h, sizeof(h));
    memcpy(s->bytes + sizeof(h), r, (size_t)n * sizeof(*r));
    s->len = sizeof(h) + (size_t)n * sizeof(*r);
    z->count++;
    pthread_cond_broadcast(&z->cond);
    pthread_mutex_unlock(&z->lock);
    return 0;
}

const char *zfile_error(struct zfile *z)
{
    pthread_mutex_lock(&z->lock);
    bool f = z->failed;
    pthread_mutex_unlock(&z->lock);
    return f ? z->err : NULL;
}

int zfile_close(struct zfile *z)
{
    if (!z)
        return 0;
    pthread_mutex_lock(&z->lock);
    z->closing = true;
    pthread_cond_broadcast(&z->cond);
    pthread_mutex_unlock(&z->lock);
    pthread_join(z->thread, NULL);
    int ret = 0;
    if (z->failed)
        ret = error_fail("%s", z->err);
    if (close(z->fd) < 0 && ret == 0)
        ret = error_fail_errno("closing trace %s", z->path);
    free_zfile(z);
    return ret;
}
