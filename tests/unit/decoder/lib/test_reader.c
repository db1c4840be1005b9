/* SPDX-License-Identifier: MIT */
/*
 * libvbtsdecode reader: round trips, every format error with its exact
 * offset and message, and delivery of the bytes in pieces (pipes, sockets,
 * non-blocking fds, EINTR), as a live trace socket would deliver them.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <vbts/decode.h>
#include <zstd.h>

#include "vbts/le.h"

/* ---- a stream builder that also records the events it expects ---- */

struct stream {
    unsigned char *b;
    size_t n, cap;
    uint32_t flags;
    uint16_t cpu;
    uint64_t seq;
    struct vbts_event *exp;
    size_t nexp, capexp;
};

static void put(struct stream *s, const void *p, size_t n)
{
    if (s->n + n > s->cap) {
        s->cap = (s->n + n) * 2;
        s->b = realloc(s->b, s->cap);
        cr_assert_not_null(s->b);
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
}

static void set_le(struct stream *s, size_t off, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        s->b[off + i] = (unsigned char)(v >> (8 * i));
}

static void s_header(struct stream *s, uint32_t flags, uint32_t ncpus)
{
    unsigned char b[32];
    s->flags = flags;
    put(s, b, vbts_encode_file_header(b, flags, ncpus));
}

static void s_chunk(struct stream *s, uint16_t cpu, uint32_t count, uint64_t seq)
{
    unsigned char b[24];
    s->cpu = cpu;
    s->seq = seq;
    put(s, b, vbts_encode_chunk_header(b, cpu, count, seq));
}

static struct vbts_event *s_expect(struct stream *s, uint64_t from, uint64_t to, uint64_t flags)
{
    if (s->nexp == s->capexp) {
        s->capexp = s->capexp ? 2 * s->capexp : 64;
        s->exp = realloc(s->exp, s->capexp * sizeof(*s->exp));
        cr_assert_not_null(s->exp);
    }
    struct vbts_event *e = &s->exp[s->nexp++];
    memset(e, 0, sizeof(*e));
    e->rec = (struct vbts_record){from, to, flags};
    e->offset = s->n;
    e->seq = s->seq++;
    e->cpu = s->cpu;
    unsigned char b[24];
    put(s, b, vbts_encode_record(b, &e->rec));
    return e;
}

static void s_branch(struct stream *s, uint64_t from, uint64_t to, unsigned kind, uint64_t extra)
{
    struct vbts_event *e = s_expect(s, from, to, (uint64_t)kind << VBTS_KIND_SHIFT | extra);
    e->kind = (s->flags & VBTS_FILE_F_KIND) ? (uint8_t)kind : 0;
}

static void s_mark(struct stream *s, unsigned qual, uint64_t to, uint64_t aux)
{
    struct vbts_event *e = s_expect(s, 0, to, VBTS_MARK | (uint64_t)qual << 48 | aux);
    e->is_marker = 1;
    e->qualifier = (uint8_t)qual;
    e->aux = aux;
}

static void s_free(struct stream *s)
{
    free(s->b);
    free(s->exp);
}

/* ---- reading ---- */

struct result {
    struct vbts_event *ev;
    size_t n;
    int rc;
    uint64_t off;
};

static void drain(struct vbts_reader *r, struct result *res, size_t max)
{
    res->ev = calloc(max + 1, sizeof(*res->ev));
    res->n = 0;
    while ((res->rc = vbts_reader_next(r, &res->ev[res->n])) == 1)
        cr_assert_leq(++res->n, max, "more events than the stream holds");
    res->off = vbts_reader_offset(r);
}

static void assert_event(const struct vbts_event *g, const struct vbts_event *w, size_t i)
{
    cr_assert_eq(g->rec.from, w->rec.from, "event %zu from", i);
    cr_assert_eq(g->rec.to, w->rec.to, "event %zu to", i);
    cr_assert_eq(g->rec.flags, w->rec.flags, "event %zu flags", i);
    cr_assert_eq(g->offset, w->offset, "event %zu offset", i);
    cr_assert_eq(g->seq, w->seq, "event %zu seq", i);
    cr_assert_eq(g->cpu, w->cpu, "event %zu cpu", i);
    cr_assert_eq(g->is_marker, w->is_marker, "event %zu is_marker", i);
    cr_assert_eq(g->qualifier, w->qualifier, "event %zu qualifier", i);
    cr_assert_eq(g->kind, w->kind, "event %zu kind", i);
    cr_assert_eq(g->aux, w->aux, "event %zu aux", i);
}

/* The events of s are all read, then rc at offset off. */
static void assert_result(const struct result *res, const struct stream *s, int rc, uint64_t off)
{
    cr_assert_eq(res->n, s->nexp, "got %zu events, want %zu", res->n, s->nexp);
    for (size_t i = 0; i < res->n; i++)
        assert_event(&res->ev[i], &s->exp[i], i);
    cr_assert_eq(res->rc, rc, "rc %d (%s), want %d (%s)", res->rc, vbts_strerror(res->rc), rc,
                 vbts_strerror(rc));
    cr_assert_eq(res->off, off, "offset %llu, want %llu", (unsigned long long)res->off,
                 (unsigned long long)off);
}

/*
 * The events of r read as a program filling arrays would:
 * vbts_reader_branches() batch records at a time, and vbts_reader_next()
 * for what stopped it.  A branch's offset is not in its array entry: each
 * batch's offset is checked against the reader's instead.
 */
static void drain_bulk(struct vbts_reader *r, struct result *res, const struct stream *s, size_t batch)
{
    struct vbts_branch *br = calloc(batch, sizeof(*br));
    cr_assert_not_null(br);
    res->ev = calloc(s->nexp + 1, sizeof(*res->ev));
    res->n = 0;
    for (;;) {
        size_t n = vbts_reader_branches(r, br, batch);
        cr_assert_leq(n, batch);
        cr_assert_leq(res->n + n, s->nexp, "more events than the stream holds");
        for (size_t i = 0; i < n; i++) {
            struct vbts_event *e = &res->ev[res->n++];
            cr_assert_eq(br[i].reserved[0] | br[i].reserved[1] | br[i].reserved[4], 0);
            *e = (struct vbts_event){ .rec = { br[i].from, br[i].to, br[i].flags },
                                      .offset = s->exp[res->n - 1].offset, .seq = br[i].seq,
                                      .cpu = br[i].cpu, .kind = br[i].kind };
        }
        uint64_t off = vbts_reader_offset(r);
        res->rc = n == batch ? 1 : vbts_reader_next(r, &res->ev[res->n]);
        /* Past the last branch stored, chunk headers maybe too, not past
         * the next event.  (After an error, the offset is the error's.) */
        if (n && res->rc >= 0) {
            cr_assert_geq(off, s->exp[res->n - 1].offset + 24);
            cr_assert_leq(off, res->n < s->nexp ? s->exp[res->n].offset : UINT64_MAX);
        }
        if (n == batch)
            continue;
        if (res->rc != 1)
            break;
        /* Nothing stored: it stopped before a marker, not a branch. */
        cr_assert(n > 0 || res->ev[res->n].is_marker, "event %zu", res->n);
        cr_assert_leq(++res->n, s->nexp, "more events than the stream holds");
    }
    res->off = vbts_reader_offset(r);
    free(br);
}

static int memfd_with(const struct stream *s)
{
    int fd = memfd_create("vbts-test", 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, s->b, s->n), (ssize_t)s->n);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

/*
 * Read s from memory and from an fd; both must give the expected events,
 * then rc at off, and keep returning the same error.
 */
static void expect(const struct stream *s, int rc, uint64_t off, const char *msg)
{
    struct result res;
    struct vbts_reader *r = vbts_reader_new_mem(s->b, s->n);
    cr_assert_not_null(r);
    drain(r, &res, s->nexp);
    assert_result(&res, s, rc, off);
    cr_assert_str_eq(vbts_strerror(res.rc), msg);
    struct vbts_event ev;
    cr_assert_eq(vbts_reader_next(r, &ev), rc, "errors are sticky");
    cr_assert_eq(vbts_reader_offset(r), off);
    vbts_reader_free(r);
    free(res.ev);

    int fd = memfd_with(s);
    r = vbts_reader_new(fd);
    cr_assert_not_null(r);
    drain(r, &res, s->nexp);
    assert_result(&res, s, rc, off);
    vbts_reader_free(r);
    free(res.ev);

    /* In bulk, from memory and from the fd, in batches of every kind. */
    static const size_t batches[] = { 1, 2, 3, 4096 };
    for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
        for (int from_fd = 0; from_fd < 2; from_fd++) {
            cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
            r = from_fd ? vbts_reader_new(fd) : vbts_reader_new_mem(s->b, s->n);
            cr_assert_not_null(r);
            drain_bulk(r, &res, s, batches[b]);
            assert_result(&res, s, rc, off);
            struct vbts_branch br;
            cr_assert_eq(vbts_reader_branches(r, &br, 1), 0, "nothing after the end");
            cr_assert_eq(vbts_reader_next(r, &res.ev[0]), rc, "the end stays");
            vbts_reader_free(r);
            free(res.ev);
        }
    }
    close(fd);
}

/* A stream with one vCPU, one chunk, a START and a branch. */
static void small(struct stream *s, uint32_t ncpus)
{
    s_header(s, VBTS_FILE_F_KIND, ncpus);
    s_chunk(s, 0, 2, 0);
    s_mark(s, VBTS_MARK_START, 1000, 0);
    s_branch(s, 0x401000, 0x401010, VBTS_KIND_JMP, 0);
}

/* Every kind of record, three vCPUs interleaved, an empty chunk. */
static void rich(struct stream *s)
{
    s_header(s, VBTS_FILE_F_KIND, 3);
    s_chunk(s, 0, 3, 0);
    s_mark(s, VBTS_MARK_START, 1795327389123456789ull, 0);
    s_branch(s, 0x100000, 0x100010, VBTS_KIND_JCC, 0);
    s_branch(s, 0xffffffff81000000ull, 0x100020, VBTS_KIND_CALL, VBTS_BTS_PREDICTED);
    s_chunk(s, 2, 2, 0);
    s_mark(s, VBTS_MARK_START, 1795327389123456790ull, 0);
    s_mark(s, VBTS_MARK_CTX_ARRIVE, 0x1000, 123);
    s_chunk(s, 0, 2, 3);
    s_mark(s, VBTS_MARK_LOST, 17, 0);
    s_branch(s, 0x100030, 0x100005, VBTS_KIND_RET, 0);
    s_chunk(s, 2, 0, 2);
    s_chunk(s, 2, 4, 2);
    s_branch(s, 0, 0x7000, VBTS_KIND_JMP, 0);  /* from 0 but no bit 63: a branch */
    s_mark(s, VBTS_MARK_CTX_DEPART, 0x1000, VBTS_MARK_AUX_MASK);
    s_mark(s, 9, 0xabc, 5);                    /* undefined qualifier: still a marker */
    s_mark(s, VBTS_MARK_STOP, 1795327389123459289ull, VBTS_STOP_GUEST_CRASH);
    s_chunk(s, 0, 1, 5);
    s_mark(s, VBTS_MARK_STOP, 1795327389123459289ull, VBTS_STOP_GUEST_EXIT);
}

/* ---- round trips ---- */

Test(trace_reader, round_trip)
{
    struct stream s = {0};
    rich(&s);
    expect(&s, 0, s.n, "success");

    /* Spot checks against hand-computed values, not just the builder. */
    cr_assert_eq(s.n, 32 + 6 * 24 + 12 * 24);
    struct vbts_reader *r = vbts_reader_new_mem(s.b, s.n);
    struct result res;
    drain(r, &res, 12);
    cr_assert_eq(res.n, 12);
    cr_assert_eq(res.ev[0].offset, 56);
    cr_assert_eq(res.ev[0].is_marker, 1);
    cr_assert_eq(res.ev[0].qualifier, VBTS_MARK_START);
    cr_assert_eq(res.ev[0].rec.to, 1795327389123456789ull);
    cr_assert_eq(res.ev[2].kind, VBTS_KIND_CALL);
    cr_assert_eq(res.ev[2].rec.flags, 0x410);
    cr_assert_eq(res.ev[4].cpu, 2);
    cr_assert_eq(res.ev[4].seq, 1);
    cr_assert_eq(res.ev[4].aux, 123);
    cr_assert_eq(res.ev[4].rec.to, 0x1000);
    cr_assert_eq(res.ev[5].offset, 224);
    cr_assert_eq(res.ev[5].seq, 3);
    cr_assert_eq(res.ev[7].offset, 320);
    cr_assert_eq(res.ev[7].is_marker, 0);
    cr_assert_eq(res.ev[7].kind, VBTS_KIND_JMP);
    cr_assert_eq(res.ev[8].aux, 0xffffffffffffull);
    cr_assert_eq(res.ev[9].qualifier, 9);
    cr_assert_eq(res.ev[10].aux, VBTS_STOP_GUEST_CRASH);
    cr_assert_eq(res.ev[10].seq, 5);
    cr_assert_eq(res.ev[11].cpu, 0);
    cr_assert_eq(res.ev[11].seq, 5);
    cr_assert_eq(res.rc, 0);
    struct vbts_event ev;
    cr_assert_eq(vbts_reader_next(r, &ev), 0, "end of stream stays the end");
    cr_assert_eq(vbts_reader_offset(r), s.n);
    vbts_reader_free(r);
    free(res.ev);
    s_free(&s);
}

Test(trace_reader, header)
{
    struct stream s = {0};
    small(&s, 4);
    set_le(&s, 10, 3, 2);           /* a newer minor version */
    set_le(&s, 20, 0xfffffff1, 4);  /* flags this reader does not know */
    struct vbts_reader *r = vbts_reader_new_mem(s.b, s.n);
    struct vbts_file_header h;
    cr_assert_eq(vbts_reader_offset(r), 0);
    cr_assert_eq(vbts_reader_header(r, &h), 0);
    cr_assert_eq(memcmp(h.magic, VBTS_MAGIC, 8), 0);
    cr_assert_eq(h.version_major, 1);
    cr_assert_eq(h.version_minor, 3);
    cr_assert_eq(h.header_size, 32);
    cr_assert_eq(h.record_size, 24);
    cr_assert_eq(h.flags, 0xfffffff1);
    cr_assert_eq(h.ncpus, 4);
    cr_assert_eq(h.reserved, 0);
    cr_assert_eq(vbts_reader_offset(r), 32);
    struct result res;
    drain(r, &res, 2);
    assert_result(&res, &s, 0, s.n);
    cr_assert_eq(vbts_reader_header(r, &h), 0, "the header stays available");
    cr_assert_eq(h.ncpus, 4);
    vbts_reader_free(r);
    free(res.ev);
    s_free(&s);
}

Test(trace_reader, kind_only_with_flag)
{
    struct stream s = {0};
    s_header(&s, 0, 1);
    s_chunk(&s, 0, 2, 0);
    s_branch(&s, 0x1000, 0x2000, VBTS_KIND_RET, 0);  /* builder expects kind 0 */
    s_mark(&s, VBTS_MARK_LOST, 3, 0);
    cr_assert_eq(s.exp[0].kind, 0);
    expect(&s, 0, s.n, "success");
    s_free(&s);
}

Test(trace_reader, header_only_and_empty_chunks)
{
    struct stream s = {0};
    s_header(&s, VBTS_FILE_F_KIND, 1);
    expect(&s, 0, 32, "success");
    s_chunk(&s, 0, 0, 0);
    s_chunk(&s, 0, 0, 0);
    expect(&s, 0, 80, "success");
    s_free(&s);
}

Test(trace_reader, longer_header_is_skipped)
{
    struct stream s = {0};
    unsigned char extra[20];
    memset(extra, 0x5a, sizeof(extra));
    s_header(&s, VBTS_FILE_F_KIND, 1);
    put(&s, extra, sizeof(extra));
    set_le(&s, 12, 52, 4);
    s_chunk(&s, 0, 1, 0);
    s_branch(&s, 1, 2, VBTS_KIND_INT, 0);
    cr_assert_eq(s.exp[0].offset, 52 + 24);
    expect(&s, 0, s.n, "success");
    s_free(&s);
}

/* ---- errors: each with the offset of the offending field or item ---- */

Test(trace_reader, bad_magic)
{
    struct stream s = {0};
    small(&s, 1);
    s.b[3] = 'X';
    s.nexp = 0;
    expect(&s, VBTS_ERR_BAD_MAGIC, 0, "not a vbts trace (bad magic)");
    s.n = 5;  /* short and not vbts: bad magic rather than truncated */
    expect(&s, VBTS_ERR_BAD_MAGIC, 0, "not a vbts trace (bad magic)");
    s_free(&s);
}

Test(trace_reader, unsupported_version)
{
    struct stream s = {0};
    small(&s, 1);
    s.nexp = 0;
    set_le(&s, 8, 2, 2);
    expect(&s, VBTS_ERR_VERSION, 8, "unsupported format version");
    set_le(&s, 8, 0, 2);
    expect(&s, VBTS_ERR_VERSION, 8, "unsupported format version");
    s_free(&s);
}

Test(trace_reader, bad_sizes)
{
    struct stream s = {0};
    small(&s, 1);
    s.nexp = 0;
    set_le(&s, 12, 31, 4);
    expect(&s, VBTS_ERR_HEADER_SIZE, 12, "bad header size");
    set_le(&s, 12, 0, 4);
    expect(&s, VBTS_ERR_HEADER_SIZE, 12, "bad header size");
    set_le(&s, 12, 32, 4);
    set_le(&s, 16, 32, 4);
    expect(&s, VBTS_ERR_RECORD_SIZE, 16, "bad record size");
    set_le(&s, 16, 0, 4);
    expect(&s, VBTS_ERR_RECORD_SIZE, 16, "bad record size");
    s_free(&s);
}

Test(trace_reader, truncated_header)
{
    struct stream s = {0};
    small(&s, 1);
    s.nexp = 0;
    size_t n = s.n;
    size_t lens[] = {0, 1, 8, 31};
    for (size_t i = 0; i < 4; i++) {
        s.n = lens[i];
        expect(&s, VBTS_ERR_TRUNC_HEADER, 0, "truncated file header");
    }
    /* Cut inside the extra bytes a longer header_size announces. */
    s.n = n;
    set_le(&s, 12, 0xffffffff, 4);
    expect(&s, VBTS_ERR_TRUNC_HEADER, 0, "truncated file header");
    s_free(&s);
}

Test(trace_reader, reserved_fields)
{
    struct stream s = {0};
    small(&s, 1);
    s.nexp = 0;
    set_le(&s, 28, 1, 4);
    expect(&s, VBTS_ERR_RESERVED, 28, "nonzero reserved field");
    set_le(&s, 28, 0, 4);
    set_le(&s, 32 + 6, 0x8000, 2);   /* chunk flags */
    expect(&s, VBTS_ERR_RESERVED, 38, "nonzero reserved field");
    set_le(&s, 32 + 6, 0, 2);
    set_le(&s, 32 + 12, 1u << 31, 4); /* chunk reserved */
    expect(&s, VBTS_ERR_RESERVED, 44, "nonzero reserved field");
    s_free(&s);
}

Test(trace_reader, bad_chunk_magic)
{
    struct stream s = {0};
    small(&s, 1);
    s_chunk(&s, 0, 1, 2);
    s_branch(&s, 1, 2, VBTS_KIND_JMP, 0);
    s.b[104] = 'v';  /* "vCHK" in the second chunk */
    s.nexp = 2;
    expect(&s, VBTS_ERR_CHUNK_MAGIC, 104, "bad chunk magic");
    s.b[104] = 'V';
    s.b[32] = 0;
    s.nexp = 0;
    expect(&s, VBTS_ERR_CHUNK_MAGIC, 32, "bad chunk magic");
    s_free(&s);
}

Test(trace_reader, cpu_out_of_range)
{
    struct stream s = {0};
    small(&s, 2);
    s_chunk(&s, 2, 1, 0);
    s_branch(&s, 1, 2, VBTS_KIND_JMP, 0);
    s.nexp = 2;
    expect(&s, VBTS_ERR_CPU, 108, "chunk cpu out of range");
    set_le(&s, 24, 0, 4);  /* ncpus 0: no chunk is valid */
    s.nexp = 0;
    expect(&s, VBTS_ERR_CPU, 36, "chunk cpu out of range");
    s_free(&s);
}

Test(trace_reader, truncated_chunk_header)
{
    struct stream s = {0};
    small(&s, 1);
    s_chunk(&s, 0, 1, 2);
    for (size_t cut = 1; cut < 24; cut++) {
        s.n = 104 + cut;
        expect(&s, VBTS_ERR_TRUNC_CHUNK, 104, "truncated chunk header");
    }
    s_free(&s);
}

Test(trace_reader, truncated_record)
{
    struct stream s = {0};
    s_header(&s, VBTS_FILE_F_KIND, 1);
    s_chunk(&s, 0, 3, 0);
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    s_branch(&s, 3, 4, VBTS_KIND_JCC, 0);
    expect(&s, VBTS_ERR_TRUNC_RECORD, 104, "truncated record");
    s_branch(&s, 5, 6, VBTS_KIND_JCC, 0);
    s.nexp = 2;
    for (size_t cut = 1; cut < 24; cut++) {
        s.n = 104 + cut;
        expect(&s, VBTS_ERR_TRUNC_RECORD, 104, "truncated record");
    }
    s_free(&s);
}

Test(trace_reader, huge_count_is_just_truncated)
{
    struct stream s = {0};
    s_header(&s, VBTS_FILE_F_KIND, 1);
    s_chunk(&s, 0, UINT32_MAX, UINT64_MAX - 1);
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    s_branch(&s, 3, 4, VBTS_KIND_JCC, 0);  /* seq wraps to 0, modulo 2^64 */
    cr_assert_eq(s.exp[1].seq, UINT64_MAX);
    expect(&s, VBTS_ERR_TRUNC_RECORD, 104, "truncated record");
    s_free(&s);
}

Test(trace_reader, huge_ncpus)
{
    struct stream s = {0};
    s_header(&s, VBTS_FILE_F_KIND, UINT32_MAX);
    s_chunk(&s, 65535, 1, 7);
    s_mark(&s, VBTS_MARK_START, 1, 0);
    s_chunk(&s, 0, 1, 0);
    s_mark(&s, VBTS_MARK_START, 1, 0);
    s_chunk(&s, 65535, 0, 8);
    expect(&s, 0, s.n, "success");
    s_free(&s);
}

Test(trace_reader, sequence_per_cpu)
{
    struct stream s = {0};
    s_header(&s, VBTS_FILE_F_KIND, 2);
    s_chunk(&s, 0, 2, 0);
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    s_chunk(&s, 1, 1, 100);  /* a vCPU's first chunk may start anywhere */
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    s_chunk(&s, 0, 1, 2);
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    s_chunk(&s, 1, 1, 101);
    s_branch(&s, 1, 2, VBTS_KIND_JCC, 0);
    expect(&s, 0, s.n, "success");

    size_t good = s.n, nexp = s.nexp;
    s_chunk(&s, 0, 1, 4);    /* cpu 0 expects 3 */
    expect(&s, VBTS_ERR_SEQ_GAP, good + 16, "sequence gap");
    s.n = good;
    s_chunk(&s, 1, 1, 101);  /* cpu 1 expects 102 */
    expect(&s, VBTS_ERR_SEQ_BACK, good + 16, "sequence regression");
    s.n = good;
    s_chunk(&s, 0, 1, 0);
    expect(&s, VBTS_ERR_SEQ_BACK, good + 16, "sequence regression");
    s.n = good;
    s.nexp = nexp;
    s_chunk(&s, 1, 0, 102);  /* empty chunks must be in sequence too */
    s_chunk(&s, 1, 1, 103);
    expect(&s, VBTS_ERR_SEQ_GAP, good + 24 + 16, "sequence gap");
    s_free(&s);
}

Test(trace_reader, bad_arguments)
{
    struct vbts_event ev;
    struct vbts_file_header h;
    errno = 0;
    cr_assert_null(vbts_reader_new(-1));
    cr_assert_eq(errno, EBADF);
    cr_assert_eq(vbts_reader_next(NULL, &ev), VBTS_ERR_INVAL);
    cr_assert_eq(vbts_reader_header(NULL, &h), VBTS_ERR_INVAL);
    cr_assert_eq(vbts_reader_offset(NULL), 0);
    cr_assert_eq(vbts_reader_buffered(NULL), 0);
    vbts_reader_free(NULL);
    struct vbts_reader *r = vbts_reader_new_mem(NULL, 0);
    cr_assert_not_null(r);
    cr_assert_eq(vbts_reader_next(r, NULL), VBTS_ERR_INVAL);
    cr_assert_eq(vbts_reader_next(r, &ev), VBTS_ERR_TRUNC_HEADER);
    cr_assert_eq(vbts_reader_header(r, &h), VBTS_ERR_TRUNC_HEADER);
    vbts_reader_free(r);
}

Test(trace_reader, read_error)
{
    int fd = open(".", O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    struct vbts_reader *r = vbts_reader_new(fd);
    struct vbts_event ev;
    errno = 0;
    cr_assert_eq(vbts_reader_next(r, &ev), VBTS_ERR_IO);
    cr_assert_eq(errno, EISDIR);
    cr_assert_eq(vbts_reader_offset(r), 0);
    errno = 0;
    cr_assert_eq(vbts_reader_next(r, &ev), VBTS_ERR_IO, "sticky, with its errno");
    cr_assert_eq(errno, EISDIR);
    vbts_reader_free(r);
    close(fd);
}

/* ---- bytes in pieces ---- */

struct feeder {
    int fd;
    const unsigned char *b;
    size_t n, step;
    long delay_ns;
};

static void *feed(void *arg)
{
    struct feeder *f = arg;
    for (size_t i = 0; i < f->n; i += f->step) {
        size_t k = f->n - i < f->step ? f->n - i : f->step;
        if (write(f->fd, f->b + i, k) != (ssize_t)k)
            abort();
        if (f->delay_ns)
            nanosleep(&(struct timespec){0, f->delay_ns}, NULL);
    }
    close(f->fd);
    return NULL;
}

/* Feed s through fds[1] step bytes at a time; read it from fds[0]. */
static void through(const struct stream *s, int fds[2], size_t step, long delay_ns, int rc,
                    uint64_t off)
{
    struct feeder f = {fds[1], s->b, s->n, step, delay_ns};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, feed, &f), 0);
    struct vbts_reader *r = vbts_reader_new(fds[0]);
    struct result res;
    drain(r, &res, s->nexp);
    pthread_join(t, NULL);
    assert_result(&res, s, rc, off);
    vbts_reader_free(r);
    free(res.ev);
    close(fds[0]);
}

Test(trace_reader, pipe_one_byte_writes)
{
    struct stream s = {0};
    rich(&s);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    through(&s, p, 1, 20000, 0, s.n);
    s.n -= 5;
    s.nexp--;
    cr_assert_eq(pipe(p), 0);
    through(&s, p, 1, 0, VBTS_ERR_TRUNC_RECORD, s.exp[s.nexp].offset);
    s_free(&s);
}

Test(trace_reader, socketpair_odd_writes)
{
    struct stream s = {0};
    rich(&s);
    int sp[2];
    for (size_t step = 2; step < 50; step += 7) {
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
        through(&s, sp, step, 10000, 0, s.n);
    }
    s_free(&s);
}

/*
 * A non-blocking fd fed one byte at a time: the reader must answer
 * VBTS_ERR_AGAIN until a whole item is there, and resume exactly, at every
 * possible cut.
 */
Test(trace_reader, nonblocking_every_byte)
{
    struct stream s = {0};
    rich(&s);
    int p[2];
    cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
    struct vbts_reader *r = vbts_reader_new(p[0]);
    struct vbts_event ev;
    size_t got = 0, again = 0;
    for (size_t i = 0; i < s.n; i++) {
        cr_assert_eq(write(p[1], s.b + i, 1), 1);
        int rc;
        while ((rc = vbts_reader_next(r, &ev)) == 1) {
            cr_assert_lt(got, s.nexp);
            assert_event(&ev, &s.exp[got], got);
            cr_assert_eq(i + 1, ev.offset + 24, "an event as soon as its last byte came");
            got++;
        }
        cr_assert_eq(rc, VBTS_ERR_AGAIN, "byte %zu: rc %d", i, rc);
        again++;
    }
    cr_assert_eq(got, s.nexp);
    cr_assert_eq(again, s.n);
    close(p[1]);
    cr_assert_eq(vbts_reader_next(r, &ev), 0);
    cr_assert_eq(vbts_reader_offset(r), s.n);
    vbts_reader_free(r);
    close(p[0]);
    s_free(&s);
}

/* In bulk, a non-blocking fd fed a byte at a time gives every branch as it comes. */
Test(trace_reader, bulk_nonblocking_every_byte)
{
    struct stream s = {0};
    rich(&s);
    int p[2];
    cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
    struct vbts_reader *r = vbts_reader_new(p[0]);
    struct vbts_branch br[8];
    struct vbts_event ev;
    size_t got = 0;
    for (size_t i = 0; i < s.n; i++) {
        cr_assert_eq(write(p[1], s.b + i, 1), 1);
        for (;;) {
            size_t n = vbts_reader_branches(r, br, 8);
            for (size_t k = 0; k < n; k++, got++) {
                cr_assert_eq(s.exp[got].is_marker, 0);
                cr_assert_eq(br[k].from, s.exp[got].rec.from);
                cr_assert_eq(br[k].seq, s.exp[got].seq);
                cr_assert_eq(i + 1, s.exp[got].offset + 24, "a branch as soon as its last byte came");
            }
            int rc = vbts_reader_next(r, &ev);
            if (rc == VBTS_ERR_AGAIN)
                break;
            cr_assert_eq(rc, 1, "byte %zu: rc %d", i, rc);
            assert_event(&ev, &s.exp[got], got);
            got++;
        }
    }
    cr_assert_eq(got, s.nexp);
    close(p[1]);
    cr_assert_eq(vbts_reader_branches(r, br, 8), 0);
    cr_assert_eq(vbts_reader_next(r, &ev), 0);
    vbts_reader_free(r);
    close(p[0]);
    s_free(&s);
}

/*
 * A live stream: once it has stored a branch, vbts_reader_branches() does
 * not wait for more (a blocking pipe whose writer is still there: a read
 * would hang, and the alarm would end the test).
 */
Test(trace_reader, bulk_returns_what_has_come)
{
    struct stream s = {0};
    s_header(&s, VBTS_FILE_F_KIND, 1);
    s_chunk(&s, 0, 5, 0);
    s_branch(&s, 0x1000, 0x2000, VBTS_KIND_JMP, 0);
    s_branch(&s, 0x2000, 0x3000, VBTS_KIND_CALL, VBTS_BTS_PREDICTED);
    s_branch(&s, 0x3000, 0x4000, 77, 0);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], s.b, s.n), (ssize_t)s.n);
    struct vbts_reader *r = vbts_reader_new(p[0]);
    struct vbts_branch br[16];
    alarm(10);
    cr_assert_eq(vbts_reader_branches(r, br, 16), 3);
    alarm(0);
    cr_assert_eq(br[1].flags, (uint64_t)VBTS_KIND_CALL << 8 | VBTS_BTS_PREDICTED);
    cr_assert_eq(br[1].kind, VBTS_KIND_CALL);
    cr_assert_eq(br[2].kind, 77, "an undefined kind as it is");
    cr_assert_eq(br[2].seq, 2);
    cr_assert_eq(vbts_reader_offset(r), s.n);
    close(p[1]);
    cr_assert_eq(vbts_reader_branches(r, br, 16), 0);
    struct vbts_event ev;
    cr_assert_eq(vbts_reader_next(r, &ev), VBTS_ERR_TRUNC_RECORD);
    cr_assert_eq(vbts_reader_offset(r), s.n);
    vbts_reader_free(r);
    close(p[0]);
    s_free(&s);
}

Test(trace_reader, bulk_bad_arguments)
{
    struct vbts_branch br;
    cr_assert_eq(vbts_reader_branches(NULL, &br, 1), 0);
    struct stream s = {0};
    small(&s, 1);
    struct vbts_reader *r = vbts_reader_new_mem(s.b, s.n);
    cr_assert_eq(vbts_reader_branches(r, NULL, 1), 0);
    cr_assert_eq(vbts_reader_branches(r, &br, 0), 0);
    struct vbts_event ev;
    cr_assert_eq(vbts_reader_next(r, &ev), 1, "nothing was consumed");
    cr_assert_eq(ev.is_marker, 1);
    cr_assert_eq(vbts_reader_branches(r, &br, 1), 1);
    cr_assert_eq(br.from, 0x401000);
    vbts_reader_free(r);
    s_free(&s);
}

static volatile sig_atomic_t signals;

static void on_signal(int sig)
{
    (void)sig;
    signals++;
}

struct interrupter {
    pthread_t target;
    int fd;
    const struct stream *s;
};

static void *interrupt_then_feed(void *arg)
{
    struct interrupter *it = arg;
    for (int i = 0; i < 3; i++) {
        nanosleep(&(struct timespec){0, 30000000}, NULL);
        pthread_kill(it->target, SIGUSR1);
    }
    nanosleep(&(struct timespec){0, 30000000}, NULL);
    if (write(it->fd, it->s->b, it->s->n) != (ssize_t)it->s->n)
        abort();
    close(it->fd);
    return NULL;
}

/* read(2) interrupted by a signal without SA_RESTART is retried. */
Test(trace_reader, eintr_is_retried)
{
    struct sigaction sa = {.sa_handler = on_signal};  /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    struct stream s = {0};
    rich(&s);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    struct interrupter it = {pthread_self(), p[1], &s};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, interrupt_then_feed, &it), 0);
    struct vbts_reader *r = vbts_reader_new(p[0]);
    struct result res;
    drain(r, &res, s.nexp);
    pthread_join(t, NULL);
    cr_assert_eq(signals, 3);
    assert_result(&res, &s, 0, s.n);
    vbts_reader_free(r);
    free(res.ev);
    close(p[0]);
    s_free(&s);
}

/* More than the reader's 64 KiB buffer, so records straddle refills. */
Test(trace_reader, large_stream_fd)
{
    struct stream s = {0};
    uint64_t seq[3] = {0};
    s_header(&s, VBTS_FILE_F_KIND, 3);
    for (unsigned c = 0; s.n < 300 * 1024; c++) {
        uint16_t cpu = (uint16_t)(c % 3);
        uint32_t count = c % 97;
        s_chunk(&s, cpu, count, seq[cpu]);
        seq[cpu] += count;
        for (uint32_t i = 0; i < count; i++)
            s_branch(&s, 0x1000 + c, 0x2000 + i, i % VBTS_KIND_MAX_, i & VBTS_BTS_PREDICTED);
    }
    s_chunk(&s, 0, 1, seq[0]);
    s_branch(&s, 0x1000, 0x2000, VBTS_KIND_RET, 0);
    expect(&s, 0, s.n, "success");
    int p[2];
    cr_assert_eq(pipe(p), 0);
    through(&s, p, 4093, 0, 0, s.n);
    s.n -= 1;
    s.nexp--;
    expect(&s, VBTS_ERR_TRUNC_RECORD, s.n + 1 - 24, "truncated record");
    s_free(&s);
}

/*
 * Hostile input: flip every bit of a valid stream in turn.  The reader must
 * stop with 0 or an error within the stream's record count and never read
 * out of bounds (run under ASan by `make check`).
 */
Test(trace_reader, bit_flips_terminate)
{
    struct stream s = {0};
    rich(&s);
    struct vbts_event ev;
    for (size_t bit = 0; bit < s.n * 8; bit++) {
        s.b[bit / 8] ^= (unsigned char)(1u << bit % 8);
        struct vbts_reader *r = vbts_reader_new_mem(s.b, s.n);
        size_t n = 0;
        int rc;
        while ((rc = vbts_reader_next(r, &ev)) == 1)
            cr_assert_leq(++n, s.n / 24, "bit %zu", bit);
        cr_assert_leq(rc, 0);
        cr_assert_leq(vbts_reader_offset(r), s.n, "bit %zu", bit);
        vbts_reader_free(r);
        s.b[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    s_free(&s);
}

/* ---- compressed streams ---- */

/*
 * s's bytes as zstd frames, cut at the given decompressed offsets (the
 * last frame runs to the end); the events expected stay s's own, at
 * their decompressed offsets.
 */
static struct stream zstd_of(const struct stream *s, const size_t *cuts, size_t ncuts)
{
    struct stream z = *s;
    z.b = NULL;
    z.n = z.cap = 0;
    z.exp = malloc(s->nexp * sizeof(*s->exp));
    cr_assert_not_null(z.exp);
    memcpy(z.exp, s->exp, s->nexp * sizeof(*s->exp));
    size_t from = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : s->n;
        size_t cap = ZSTD_compressBound(to - from);
        unsigned char *f = malloc(cap);
        size_t n = ZSTD_compress(f, cap, s->b + from, to - from, 3);
        cr_assert(!ZSTD_isError(n));
        put(&z, f, n);
        free(f);
        from = to;
    }
    return z;
}

/* Decompressed offsets of rich()'s chunk headers: where vbts cuts its frames. */
static size_t rich_cuts(const struct stream *s, size_t *cuts)
{
    size_t n = 0;
    for (size_t off = 32; off + 4 <= s->n; off += 24)
        if (vbts_le32(s->b + off) == VBTS_CHUNK_MAGIC)
            cuts[n++] = off;
    return n;
}

Test(trace_reader, zstd_read_as_plain)
{
    struct stream s = {0};
    rich(&s);
    size_t cuts[16], nc = rich_cuts(&s, cuts);
    cr_assert_eq(nc, 6);
    struct stream z = zstd_of(&s, cuts, nc);
    cr_assert_eq(z.b[0], 0x28);
    expect(&z, 0, s.n, "success");
    s_free(&z);
    /* One frame, or frames cut anywhere: the same events. */
    z = zstd_of(&s, NULL, 0);
    expect(&z, 0, s.n, "success");
    s_free(&z);
    size_t odd[] = { 1, 5, 33, 100, 101, 300 };
    z = zstd_of(&s, odd, 6);
    expect(&z, 0, s.n, "success");
    s_free(&z);
    s_free(&s);
}

Test(trace_reader, zstd_through_pipes_in_pieces)
{
    struct stream s = {0};
    rich(&s);
    size_t cuts[16], nc = rich_cuts(&s, cuts);
    struct stream z = zstd_of(&s, cuts, nc);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    through(&z, p, 1, 0, 0, s.n);
    for (size_t step = 3; step < 60; step += 11) {
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
        through(&z, p, step, 0, 0, s.n);
    }
    s_free(&z);
    s_free(&s);
}

/* rich() as vbts frames it, expecting only what comes before its last frame (at *last). */
static struct stream zstd_but_last(const struct stream *s, size_t *last)
{
    size_t cuts[16], nc = rich_cuts(s, cuts);
    struct stream z = zstd_of(s, cuts, nc);
    *last = cuts[nc - 1];
    while (z.nexp && z.exp[z.nexp - 1].offset >= *last)
        z.nexp--;
    return z;
}

/* Cut inside its last frame, a compressed stream ends where that frame began. */
Test(trace_reader, zstd_cut_off_ends_at_the_last_whole_frame)
{
    struct stream s = {0};
    rich(&s);
    size_t last;
    struct stream z = zstd_but_last(&s, &last);
    cr_assert_eq(z.nexp, 11, "the last chunk's one record is lost");
    for (size_t cut = 1; cut < 12; cut++) {
        struct stream c = z;
        c.n = z.n - cut;
        expect(&c, 0, last, "success");
    }
    s_free(&z);
    s_free(&s);
}

Test(trace_reader, zstd_corrupt_frame)
{
    struct stream s = {0};
    rich(&s);
    size_t last;
    struct stream z = zstd_but_last(&s, &last);
    /* The last byte is the last frame's checksum: every frame before it reads. */
    z.b[z.n - 1] ^= 0x40;
    expect(&z, VBTS_ERR_ZSTD, last, "corrupt compressed frame");
    s_free(&z);
    s_free(&s);
}
