/* SPDX-License-Identifier: MIT */
/*
 * Incremental reader of a vbts stream.  It only consumes a structure once
 * all its bytes are buffered, so a non-blocking fd can return
 * VBTS_ERR_AGAIN at any point and the next call resumes where it stopped.
 * Memory use is fixed: one read buffer and one slot per vCPU (at most
 * 65536, the range of the 16-bit cpu field), whatever the counts say.
 *
 * A stream that starts with zstd's magic is decompressed below the
 * parser, a whole frame at a time: its compressed bytes are gathered, then
 * decompressed in one call, so that a stream cut off inside a frame ends
 * where the frame began (vbts writes one frame per chunk), and so that
 * what a frame gives does not depend on how its bytes arrived (zstd's
 * streaming decoder checks a frame's stated size only when the frame ends
 * inside one call).  Only a frame beyond the buffers (256 KiB compressed or
 * decompressed: not vbts's) is decompressed in pieces and let through as
 * it comes, its size checked here; its window is bounded by zstd's
 * default limit (128 MiB).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbts/decode.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "vbts/le.h"

#define BUF_SIZE       (64 * 1024)
#define ZBUF_SIZE      (256 * 1024)   /* decompressed: more than one chunk's frame */
#define ZIN_SIZE       (256 * 1024)   /* compressed: more than one chunk's frame */
static const unsigned char ZSTD_MAGIC[4] = { 0x28, 0xb5, 0x2f, 0xfd };
#define FILE_HDR_SIZE  32
#define CHUNK_HDR_SIZE 24
#define MAX_CPUS       65536u

enum state { ST_HEADER, ST_SKIP, ST_BODY };

struct cpu_seq {
    uint64_t next;  /* seq the next chunk of this vCPU must carry */
    int seen;       /* no chunk yet: any first seq is accepted */
};

struct vbts_reader {
    int fd;                       /* -1 for a memory reader */
    unsigned char *buf;           /* our buffer (fd readers, compressed streams) */
    const unsigned char *data;    /* buf, or the caller's memory */
    size_t pos, len;              /* unconsumed bytes: data[pos..len) */
    int sniffed;                  /* the first bytes were checked for zstd's magic */
    ZSTD_DCtx *zd;                /* a compressed stream: its decompressor, else NULL */
    const unsigned char *zin;     /* compressed bytes: zbuf, or the caller's memory */
    unsigned char *zbuf;
    size_t zin_pos, zin_len;
    int zpieces;                  /* a frame beyond the buffers, in pieces: */
    unsigned long long zwant;     /* the size it states (or ZSTD_CONTENTSIZE_UNKNOWN) */
    unsigned long long zgot;      /* and what it gave so far */
    uint64_t off;                 /* stream offset of data[pos] */
    enum state state;
    uint64_t skip;                /* extra header bytes left to skip */
    struct vbts_file_header hdr;
    struct cpu_seq *cpus;
    uint16_t cpu;                 /* chunk being read */
    uint32_t left;                /* its records not yet returned */
    uint64_t seq;                 /* seq of its next record */
    int err;                      /* sticky error, 0 if none */
    int err_errno;                /* errno of a VBTS_ERR_IO */
    uint64_t err_off;
};

static struct vbts_reader *alloc_reader(void)
{
    struct vbts_reader *r = calloc(1, sizeof(*r));
    if (r)
        r->fd = -1;
    return r;
}

struct vbts_reader *vbts_reader_new(int fd)
{
    if (fd < 0) {
        errno = EBADF;
        return NULL;
    }
    struct vbts_reader *r = alloc_reader();
    if (!r)
        return NULL;
    r->buf = malloc(BUF_SIZE);
    if (!r->buf) {
        free(r);
        return NULL;
    }
    r->fd = fd;
    r->data = r->buf;
    return r;
}

struct vbts_reader *vbts_reader_new_mem(const void *buf, size_t size)
{
    if (!buf && size) {
        errno = EINVAL;
        return NULL;
    }
    struct vbts_reader *r = alloc_reader();
    if (r) {
        /* (NULL, 0) is an empty stream; memcmp() must not see NULL. */
        r->data = buf ? buf : (const void *)"";
        r->len = size;
    }
    return r;
}

void vbts_reader_free(struct vbts_reader *r)
{
    if (!r)
        return;
    ZSTD_freeDCtx(r->zd);
    free(r->zbuf);
    free(r->cpus);
    free(r->buf);
    free(r);
}

static int fail(struct vbts_reader *r, int err, uint64_t off)
{
    r->err = err;
    r->err_errno = errno;
    r->err_off = off;
    return err;
}

static size_t avail(const struct vbts_reader *r)
{
    return r->len - r->pos;
}

/* Plain bytes from the fd into buf until need are there: 1, 0 at end of stream, or an error. */
static int fill_raw(struct vbts_reader *r, size_t need)
{
    while (avail(r) < need) {
        if (r->fd < 0)
            return 0;
        /* Fewer than need (<= 32) bytes to move: cheap, and each read()
         * then gets the whole buffer. */
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, avail(r));
            r->len -= r->pos;
            r->pos = 0;
        }
        ssize_t n = read(r->fd, r->buf + r->len, BUF_SIZE - r->len);
        if (n > 0)
            r->len += (size_t)n;
        else if (n == 0)
            return 0;
        else if (errno == EAGAIN || errno == EWOULDBLOCK)
            return VBTS_ERR_AGAIN;
        else if (errno != EINTR)
            return fail(r, VBTS_ERR_IO, r->off);
    }
    return 1;
}

/*
 * A compressed stream from here on: what was read so far is its first
 * compressed bytes, and buf holds what they decompress to.
 */
static int start_zstd(struct vbts_reader *r)
{
    r->zd = ZSTD_createDCtx();
    unsigned char *out = malloc(ZBUF_SIZE);
    unsigned char *in = r->fd >= 0 ? malloc(ZIN_SIZE) : NULL;
    if (!r->zd || !out || (r->fd >= 0 && !in)) {
        free(out);
        free(in);
        return fail(r, VBTS_ERR_NOMEM, 0);
    }
    if (r->fd >= 0) {
        memcpy(in, r->buf, r->len);         /* at most BUF_SIZE <= ZIN_SIZE */
        free(r->buf);
        r->zbuf = in;
        r->zin = in;
    } else {
        r->zin = r->data;
    }
    r->zin_pos = r->pos;
    r->zin_len = r->len;
    r->buf = out;
    r->data = out;
    r->pos = r->len = 0;
    return 0;
}

/* The stream's first four bytes, read before anything is parsed. */
static int sniff(struct vbts_reader *r)
{
    int rc = fill_raw(r, sizeof(ZSTD_MAGIC));
    if (rc < 0)
        return rc;
    r->sniffed = 1;
    if (avail(r) >= sizeof(ZSTD_MAGIC) && !memcmp(r->data + r->pos, ZSTD_MAGIC, sizeof(ZSTD_MAGIC)))
        return start_zstd(r);
    return 0;
}

/* More compressed input after what is buffered: 1, 0 at its end, or an error. */
static int read_zin(struct vbts_reader *r)
{
    if (r->fd < 0)
        return 0;
    if (r->zin_pos > 0) {
        memmove(r->zbuf, r->zbuf + r->zin_pos, r->zin_len - r->zin_pos);
        r->zin_len -= r->zin_pos;
        r->zin_pos = 0;
    }
    for (;;) {
        ssize_t n = read(r->fd, r->zbuf + r->zin_len, ZIN_SIZE - r->zin_len);
        if (n > 0) {
            r->zin_len += (size_t)n;
            return 1;
        }
        if (n == 0)
            return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return VBTS_ERR_AGAIN;
        if (errno != EINTR)
            return fail(r, VBTS_ERR_IO, r->off + avail(r));
    }
}

/* The frame at the compressed bytes is beyond the buffers: decompress it in pieces. */
static int start_pieces(struct vbts_reader *r)
{
    r->zwant = ZSTD_getFrameContentSize(r->zin + r->zin_pos, r->zin_len - r->zin_pos);
    if (r->zwant == ZSTD_CONTENTSIZE_ERROR)
        return fail(r, VBTS_ERR_ZSTD, r->off + avail(r));
    r->zgot = 0;
    r->zpieces = 1;
    ZSTD_DCtx_reset(r->zd, ZSTD_reset_session_only);
    return 0;
}

/* Some of a frame beyond the buffers: 1 (maybe nothing new), 0 at the end, or an error. */
static int some_pieces(struct vbts_reader *r)
{
    if (r->zin_pos == r->zin_len) {
        int rc = read_zin(r);
        if (rc <= 0)
            return rc;
    }
    ZSTD_inBuffer in = { r->zin, r->zin_len, r->zin_pos };
    ZSTD_outBuffer out = { r->buf, ZBUF_SIZE, r->len };
    size_t z = ZSTD_decompressStream(r->zd, &out, &in);
    if (ZSTD_isError(z))
        return fail(r, VBTS_ERR_ZSTD, r->off + avail(r));
    r->zgot += out.pos - r->len;
    r->zin_pos = in.pos;
    r->len = out.pos;
    if (r->zwant != ZSTD_CONTENTSIZE_UNKNOWN && (r->zgot > r->zwant || (z == 0 && r->zgot != r->zwant)))
        return fail(r, VBTS_ERR_ZSTD, r->off + avail(r));
    if (z == 0)
        r->zpieces = 0;
    return 1;
}

/* Decompressed bytes until need are readable: 1, 0 at the end, or an error. */
static int fill_zstd(struct vbts_reader *r, size_t need)
{
    while (avail(r) < need) {
        /* Fewer than need (<= 48) bytes to move. */
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, avail(r));
            r->len -= r->pos;
            r->pos = 0;
        }
        int rc;
        if (r->zpieces) {
            if ((rc = some_pieces(r)) <= 0)
                return rc;
            continue;
        }
        const unsigned char *src = r->zin + r->zin_pos;
        size_t have = r->zin_len - r->zin_pos;
        size_t fs = have ? ZSTD_findFrameCompressedSize(src, have) : 0;
        if (!have || ZSTD_isError(fs)) {
            if (have && ZSTD_getErrorCode(fs) != ZSTD_error_srcSize_wrong)
                return fail(r, VBTS_ERR_ZSTD, r->off + avail(r));
            if (have >= ZIN_SIZE) {
                if ((rc = start_pieces(r)) < 0)
                    return rc;
                continue;
            }
            /* At the end, a frame cut short is dropped. */
            if ((rc = read_zin(r)) <= 0)
                return rc;
            continue;
        }
        unsigned long long cs = ZSTD_getFrameContentSize(src, fs);
        size_t room = ZBUF_SIZE - r->len;
        if (cs == ZSTD_CONTENTSIZE_ERROR)
            return fail(r, VBTS_ERR_ZSTD, r->off + avail(r));
        if (fs > ZIN_SIZE || (cs != ZSTD_CONTENTSIZE_UNKNOWN && cs > room)) {
            if ((rc = start_pieces(r)) < 0)
                return rc;
            continue;
        }
        size_t n = ZSTD_decompressDCtx(r->zd, r->buf + r->len, room, src, fs);
        if (ZSTD_isError(n)) {
            if (cs == ZSTD_CONTENTSIZE_UNKNOWN && ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
                if ((rc = start_pieces(r)) < 0)
                    return rc;
                continue;
            }
            return fail(r, VBTS_ERR_ZSTD, r->off + avail(r));
        }
        r->len += n;
        r->zin_pos += fs;
    }
    return 1;
}

/*
 * Make need bytes (<= 48) available: 1 when they are, 0 at end of stream
 * before that, VBTS_ERR_AGAIN or VBTS_ERR_IO.  A pipe or socket may return
 * any short count, so we loop; the bytes that did arrive stay buffered
 * across VBTS_ERR_AGAIN.
 */
static int fill(struct vbts_reader *r, size_t need)
{
    if (!r->sniffed) {
        int rc = sniff(r);
        if (rc < 0)
            return rc;
    }
    return r->zd ? fill_zstd(r, need) : fill_raw(r, need);
}

static void consume(struct vbts_reader *r, size_t n)
{
    r->pos += n;
    r->off += n;
}

static int parse_header(struct vbts_reader *r)
{
    int rc = fill(r, FILE_HDR_SIZE);
    if (rc < 0)
        return rc;
    const unsigned char *p = r->data + r->pos;
    size_t n = avail(r) < VBTS_MAGIC_LEN ? avail(r) : VBTS_MAGIC_LEN;
    /* A short non-vbts file is "not vbts", not a truncated vbts file. */
    if (memcmp(p, VBTS_MAGIC, n) != 0)
        return fail(r, VBTS_ERR_BAD_MAGIC, 0);
    if (!rc)
        return fail(r, VBTS_ERR_TRUNC_HEADER, 0);

    struct vbts_file_header *h = &r->hdr;
    memcpy(h->magic, p, VBTS_MAGIC_LEN);
    h->version_major = vbts_le16(p + 8);
    h->version_minor = vbts_le16(p + 10);
    h->header_size = vbts_le32(p + 12);
    h->record_size = vbts_le32(p + 16);
    h->flags = vbts_le32(p + 20);
    h->ncpus = vbts_le32(p + 24);
    h->reserved = vbts_le32(p + 28);
    /* Minor versions only add what old readers may skip; majors may not. */
    if (h->version_major != VBTS_VERSION_MAJOR)
        return fail(r, VBTS_ERR_VERSION, 8);
    if (h->header_size < FILE_HDR_SIZE)
        return fail(r, VBTS_ERR_HEADER_SIZE, 12);
    if (h->record_size != VBTS_RECORD_SIZE)
        return fail(r, VBTS_ERR_RECORD_SIZE, 16);
    if (h->reserved != 0)
        return fail(r, VBTS_ERR_RESERVED, 28);

    size_t ncpus = h->ncpus < MAX_CPUS ? h->ncpus : MAX_CPUS;
    r->cpus = calloc(ncpus ? ncpus : 1, sizeof(*r->cpus));
    if (!r->cpus)
        return fail(r, VBTS_ERR_NOMEM, 0);
    consume(r, FILE_HDR_SIZE);
    r->skip = h->header_size - FILE_HDR_SIZE;
    r->state = ST_SKIP;
    return 0;
}

/* Skip by reading, not seeking: pipes and sockets cannot seek. */
static int skip_header(struct vbts_reader *r)
{
    while (r->skip > 0) {
        int rc = fill(r, 1);
        if (rc < 0)
            return rc;
        if (!rc)
            return fail(r, VBTS_ERR_TRUNC_HEADER, 0);
        size_t n = avail(r) < r->skip ? avail(r) : (size_t)r->skip;
        consume(r, n);
        r->skip -= n;
    }
    r->state = ST_BODY;
    return 0;
}

int vbts_reader_header(struct vbts_reader *r, struct vbts_file_header *hdr)
{
    if (!r)
        return VBTS_ERR_INVAL;
    int rc = 0;
    if (r->state == ST_HEADER && !r->err)
        rc = parse_header(r);
    if (rc == 0 && r->state == ST_SKIP && !r->err)
        rc = skip_header(r);
    if (rc < 0)
        return rc;
    /* A sticky error from the header stage; later errors keep the header. */
    if (r->state != ST_BODY) {
        errno = r->err_errno;
        return r->err;
    }
    if (hdr)
        *hdr = r->hdr;
    return 0;
}

static int parse_chunk(struct vbts_reader *r)
{
    const unsigned char *p = r->data + r->pos;
    uint64_t off = r->off;
    uint16_t cpu = vbts_le16(p + 4);
    uint32_t count = vbts_le32(p + 8);
    uint64_t seq = vbts_le64(p + 16);

    if (vbts_le32(p) != VBTS_CHUNK_MAGIC)
        return fail(r, VBTS_ERR_CHUNK_MAGIC, off);
    if (cpu >= r->hdr.ncpus)
        return fail(r, VBTS_ERR_CPU, off + 4);
    if (vbts_le16(p + 6) != 0)
        return fail(r, VBTS_ERR_RESERVED, off + 6);
    if (vbts_le32(p + 12) != 0)
        return fail(r, VBTS_ERR_RESERVED, off + 12);
    struct cpu_seq *c = &r->cpus[cpu];
    if (c->seen && seq != c->next)
        return fail(r, seq > c->next ? VBTS_ERR_SEQ_GAP : VBTS_ERR_SEQ_BACK, off + 16);

    c->seen = 1;
    c->next = seq + count;  /* wraps modulo 2^64, like seq itself */
    r->cpu = cpu;
    r->left = count;
    r->seq = seq;
    consume(r, CHUNK_HDR_SIZE);
    return 0;
}

static void decode_record(struct vbts_reader *r, struct vbts_event *ev)
{
    const unsigned char *p = r->data + r->pos;

    memset(ev, 0, sizeof(*ev));
    ev->rec.from = vbts_le64(p);
    ev->rec.to = vbts_le64(p + 8);
    ev->rec.flags = vbts_le64(p + 16);
    ev->offset = r->off;
    ev->seq = r->seq;
    ev->cpu = r->cpu;
    if (vbts_record_is_marker(&ev->rec)) {
        ev->is_marker = 1;
        ev->qualifier = (uint8_t)vbts_marker_qual(&ev->rec);
        ev->aux = vbts_marker_aux(&ev->rec);
    } else if (r->hdr.flags & VBTS_FILE_F_KIND) {
        ev->kind = (uint8_t)vbts_record_kind(&ev->rec);
    }
    consume(r, VBTS_RECORD_SIZE);
    r->left--;
    r->seq++;
}

int vbts_reader_next(struct vbts_reader *r, struct vbts_event *ev)
{
    if (!r || !ev)
        return VBTS_ERR_INVAL;
    int rc = vbts_reader_header(r, NULL);
    if (rc < 0)
        return rc;
    for (;;) {
        if (r->err) {
            errno = r->err_errno;
            return r->err;
        }
        if (r->left > 0) {
            rc = fill(r, VBTS_RECORD_SIZE);
            if (rc < 0)
                return rc;
            if (!rc)
                return fail(r, VBTS_ERR_TRUNC_RECORD, r->off);
            decode_record(r, ev);
            return 1;
        }
        rc = fill(r, CHUNK_HDR_SIZE);
        if (rc < 0)
            return rc;
        if (!rc)
            return avail(r) ? fail(r, VBTS_ERR_TRUNC_CHUNK, r->off) : 0;
        rc = parse_chunk(r);
        if (rc < 0)
            return rc;
    }
}

_Static_assert(sizeof(struct vbts_branch) == 40, "struct vbts_branch is 40 bytes");

/*
 * The buffered records of the current chunk, straight into out: no event
 * per record.  Returns how many were stored; stops before a marker.
 */
static size_t copy_branches(struct vbts_reader *r, struct vbts_branch *out, size_t max)
{
    size_t n = avail(r) / VBTS_RECORD_SIZE;
    n = n < r->left ? n : r->left;
    n = n < max ? n : max;
    int kinds = (r->hdr.flags & VBTS_FILE_F_KIND) != 0;
    const unsigned char *p = r->data + r->pos;
    size_t i;
    for (i = 0; i < n; i++, p += VBTS_RECORD_SIZE) {
        uint64_t from = vbts_le64(p), flags = vbts_le64(p + 16);
        if (from == 0 && (flags & VBTS_MARK))
            break;
        out[i] = (struct vbts_branch){
            .from = from, .to = vbts_le64(p + 8), .flags = flags, .seq = r->seq + i,
            .cpu = r->cpu, .kind = kinds ? (uint8_t)((flags & VBTS_KIND_MASK) >> VBTS_KIND_SHIFT) : 0,
        };
    }
    consume(r, i * VBTS_RECORD_SIZE);
    r->left -= (uint32_t)i;
    r->seq += i;
    return i;
}

size_t vbts_reader_branches(struct vbts_reader *r, struct vbts_branch *out, size_t max)
{
    size_t n = 0;
    if (!r || !out || vbts_reader_header(r, NULL) < 0)
        return 0;
    while (n < max && !r->err) {
        size_t need = r->left ? VBTS_RECORD_SIZE : CHUNK_HDR_SIZE;
        /* Once something is stored, what has come is enough: no read(). */
        if (n && avail(r) < need)
            break;
        /* The end, a cut item, no data yet or an error: next() says which. */
        if (fill(r, need) <= 0)
            break;
        if (!r->left) {
            if (parse_chunk(r) < 0)
                break;
            continue;
        }
        size_t got = copy_branches(r, out + n, max - n);
        if (!got)
            break;      /* a marker */
        n += got;
    }
    return n;
}

uint64_t vbts_reader_offset(const struct vbts_reader *r)
{
    if (!r)
        return 0;
    return r->err ? r->err_off : r->off;
}

size_t vbts_reader_buffered(const struct vbts_reader *r)
{
    return r ? avail(r) : 0;
}
