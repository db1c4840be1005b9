/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: hostile bytes as a trace stream into the reader
 * (decoder/lib/reader.c), twice: from memory, and from a non-blocking pipe
 * fed in pieces of every size, so that each structure is cut at every
 * point and resumed after VBTS_ERR_AGAIN.  Both must give the same records
 * and the same end; every record must be the bytes at its offset.  A
 * stream with zstd's magic is read decompressed: its records must be the
 * bytes at their offsets in what zstd itself makes of the input.
 */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdbool.h>
#include <stdlib.h>
#include <vbts/decode.h>
#include <vbts/le.h>
#include <zstd.h>

#define MAX_EVENTS 4096

struct run {
    struct vbts_event ev[MAX_EVENTS];
    int n;
    int rc;             /* the last next(): 0 or an error */
    uint64_t offset;
};

static struct run mem, piped;

/* What records are checked against: the input, or zstd's output for it. */
#define PLAIN_MAX (1u << 20)
static const uint8_t *plain;
static size_t plain_len;
static int compressed;

/* As much of data as zstd decompresses, up to PLAIN_MAX bytes, frames cut short included. */
static void unzstd(const uint8_t *data, size_t size)
{
    static uint8_t *buf;
    if (!buf && !(buf = malloc(PLAIN_MAX)))
        abort();
    ZSTD_DStream *d = ZSTD_createDStream();
    if (!d)
        abort();
    ZSTD_inBuffer in = { data, size, 0 };
    ZSTD_outBuffer out = { buf, PLAIN_MAX, 0 };
    while (in.pos < in.size && out.pos < out.size) {
        size_t before = in.pos + out.pos;
        if (ZSTD_isError(ZSTD_decompressStream(d, &out, &in)) || in.pos + out.pos == before)
            break;
    }
    ZSTD_freeDStream(d);
    plain = buf;
    plain_len = out.pos;
}

/* The record at ev->offset is what ev says, and ev is consistent. */
static void check_event(const struct vbts_file_header *h, const struct vbts_event *ev)
{
    /* Past PLAIN_MAX (a tiny frame may unpack to much) the bytes are not kept. */
    bool kept = ev->offset <= plain_len && plain_len - ev->offset >= VBTS_RECORD_SIZE;
    fuzz_check(kept || (compressed && plain_len == PLAIN_MAX),
               "record at %llu of %zu bytes", (unsigned long long)ev->offset, plain_len);
    const uint8_t *p = plain + ev->offset;
    fuzz_check(!kept || (ev->rec.from == vbts_le64(p) && ev->rec.to == vbts_le64(p + 8) &&
                         ev->rec.flags == vbts_le64(p + 16)), "record differs from its bytes");
    fuzz_check(ev->cpu < h->ncpus, "cpu %u of %u", ev->cpu, h->ncpus);
    fuzz_check(ev->is_marker == (vbts_record_is_marker(&ev->rec) != 0), "marker bit");
    if (ev->is_marker)
        fuzz_check(ev->kind == 0 && ev->qualifier == vbts_marker_qual(&ev->rec) &&
                   ev->aux == vbts_marker_aux(&ev->rec), "marker fields");
    else
        fuzz_check(ev->qualifier == 0 && ev->aux == 0 &&
                   ev->kind == ((h->flags & VBTS_FILE_F_KIND) ? vbts_record_kind(&ev->rec) : 0),
                   "branch fields");
}

static void read_mem(const uint8_t *data, size_t size)
{
    struct vbts_reader *r = vbts_reader_new_mem(data, size);
    fuzz_check(r != NULL, "vbts_reader_new_mem");
    struct vbts_file_header h;
    uint64_t last = 0;
    mem.n = 0;
    for (;;) {
        struct vbts_event ev;
        int rc = vbts_reader_next(r, &ev);
        if (rc <= 0 || mem.n == MAX_EVENTS) {
            mem.rc = rc;
            break;
        }
        fuzz_check(vbts_reader_header(r, &h) == 0, "header after a record");
        check_event(&h, &ev);
        fuzz_check(mem.n == 0 || ev.offset > last, "offsets go forward");
        last = ev.offset;
        mem.ev[mem.n++] = ev;
    }
    mem.offset = vbts_reader_offset(r);
    fuzz_check(mem.rc <= 0 || mem.n == MAX_EVENTS, "rc %d", mem.rc);
    fuzz_check(mem.rc != VBTS_ERR_AGAIN && mem.rc != VBTS_ERR_IO, "a memory reader read: %d", mem.rc);
    /* A sticky end: asking again says the same. */
    struct vbts_event ev;
    if (mem.rc <= 0)
        fuzz_check(vbts_reader_next(r, &ev) == mem.rc, "end is not sticky");
    vbts_reader_free(r);
}

/* The same bytes through a pipe, in pieces of 1 to 64 bytes and larger. */
static void read_pipe(const uint8_t *data, size_t size)
{
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        abort();
    struct vbts_reader *r = vbts_reader_new(p[0]);
    fuzz_check(r != NULL, "vbts_reader_new");
    size_t fed = 0;
    uint32_t seed = (uint32_t)size * 2654435761u;
    piped.n = 0;
    piped.rc = 1;
    while (piped.rc > 0 && piped.n < MAX_EVENTS) {
        struct vbts_event ev;
        int rc = vbts_reader_next(r, &ev);
        if (rc == 1) {
            piped.ev[piped.n++] = ev;
            /* A compressed stream holds a frame's worth (256 KiB) */
            fuzz_check(vbts_reader_buffered(r) <= (compressed ? 256u : 64u) * 1024, "buffered");
            continue;
        }
        if (rc != VBTS_ERR_AGAIN) {
            piped.rc = rc;
            break;
        }
        fuzz_check(p[1] >= 0, "EAGAIN after end of stream");
        seed = seed * 1103515245u + 12345u;
        size_t piece = (seed >> 16) % 8 == 0 ? 4096 : 1 + (seed >> 16) % 64;
        if (piece > size - fed)
            piece = size - fed;
        if (piece) {
            ssize_t w = write(p[1], data + fed, piece);
            fuzz_check(w > 0, "pipe write: %s", strerror(errno));
            fed += (size_t)w;
        }
        if (fed == size) {
            close(p[1]);
            p[1] = -1;
        }
    }
    if (piped.n == MAX_EVENTS)
        piped.rc = 1;
    piped.offset = vbts_reader_offset(r);
    vbts_reader_free(r);
    close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
}

static int same(const struct vbts_event *a, const struct vbts_event *b)
{
    return a->rec.from == b->rec.from && a->rec.to == b->rec.to && a->rec.flags == b->rec.flags &&
           a->offset == b->offset && a->seq == b->seq && a->cpu == b->cpu &&
           a->is_marker == b->is_marker && a->qualifier == b->qualifier && a->kind == b->kind &&
           a->aux == b->aux;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    compressed = size >= 4 && vbts_le32(data) == ZSTD_MAGICNUMBER;
    plain = data;
    plain_len = size;
    if (compressed)
        unzstd(data, size);
    read_mem(data, size);
    read_pipe(data, size);
    fuzz_check(mem.n == piped.n, "memory: %d records, pipe: %d", mem.n, piped.n);
    for (int i = 0; i < mem.n; i++)
        fuzz_check(same(&mem.ev[i], &piped.ev[i]), "record %d differs", i);
    if (mem.n < MAX_EVENTS)
        fuzz_check(mem.rc == piped.rc && mem.offset == piped.offset,
                   "memory: %d at %llu, pipe: %d at %llu", mem.rc, (unsigned long long)mem.offset,
                   piped.rc, (unsigned long long)piped.offset);
    return 0;
}
