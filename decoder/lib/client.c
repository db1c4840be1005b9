/* SPDX-License-Identifier: MIT */
/*
 * Client side of the vbts control protocol.  Everything the server sends is
 * length-checked before it is read into memory.
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vbts/client.h>
#include <vbts/decode.h>
#include <vbts/dest.h>

struct vbts_client {
    int fd;
    uint32_t ncpus, file_flags;
    uint8_t *buf;
    size_t cap;
    char text[VBTS_PROTO_MAX_TEXT + 1];
};

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int vbts_is_socket_addr(const char *addr)
{
    return addr && vbts_dest_kind(addr) != VBTS_DEST_FILE;
}

static int connect_unix(const char *addr, const struct vbts_dest *d, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    memcpy(sa.sun_path, d->path, strlen(d->path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errf(err, errlen, "%s: %s", addr, strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(fd);
        return errf(err, errlen, "%s: %s", addr, strerror(e));
    }
    return fd;
}

static int connect_tcp(const char *addr, const struct vbts_dest *d, char *err, size_t errlen)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV };
    struct addrinfo *ai = NULL, *a;
    int g = getaddrinfo(d->host, d->port, &hints, &ai);
    if (g)
        return errf(err, errlen, "%s: %s", addr, gai_strerror(g));
    int fd = -1, e = 0;
    for (a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return errf(err, errlen, "%s: %s", addr, strerror(e));
    return fd;
}

int vbts_socket_connect(const char *addr, char *err, size_t errlen)
{
    struct vbts_dest d;
    if (vbts_dest_parse(addr, &d, err, errlen) < 0)
        return -1;
    switch (d.kind) {
    case VBTS_DEST_UNIX:
        return connect_unix(addr, &d, err, errlen);
    case VBTS_DEST_TCP:
        return connect_tcp(addr, &d, err, errlen);
    default:
        return errf(err, errlen, "%s: not unix:PATH or tcp:HOST:PORT", addr);
    }
}

/* Exactly n bytes: 1, 0 at a clean end before the first byte, -1 on error. */
static int read_exact(int fd, void *p, size_t n, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0) {
            if (got == 0)
                return 0;
            return errf(err, errlen, "connection closed in the middle of a message");
        } else if (errno != EINTR) {
            return errf(err, errlen, "read: %s", strerror(errno));
        }
    }
    return 1;
}

static int write_all(int fd, const void *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = send(fd, (const char *)p + done, n - done, MSG_NOSIGNAL);
        if (w > 0)
            done += (size_t)w;
        else if (w < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

static int reserve(struct vbts_client *c, size_t n)
{
    if (n <= c->cap)
        return 0;
    uint8_t *b = realloc(c->buf, n);
    if (!b)
        return -1;
    c->buf = b;
    c->cap = n;
    return 0;
}

int vbts_client_send(struct vbts_client *c, uint16_t type, const void *payload, uint32_t len)
{
    if (len > VBTS_PROTO_MAX_REQUEST) {
        errno = EINVAL;
        return -1;
    }
    uint8_t m[VBTS_PROTO_HDR_SIZE + VBTS_PROTO_MAX_REQUEST];
    vbts_msg_header(m, type, len);
    if (len)
        memcpy(m + VBTS_PROTO_HDR_SIZE, payload, len);
    return write_all(c->fd, m, VBTS_PROTO_HDR_SIZE + len);
}

int vbts_client_read(struct vbts_client *c, struct vbts_item *it, char *err, size_t errlen)
{
    uint8_t h[24];
    memset(it, 0, sizeof(*it));
    int r = read_exact(c->fd, h, 4, err, errlen);
    if (r <= 0)
        return r;
    uint32_t magic = vbts_le32(h);
    if (magic == VBTS_PROTO_MAGIC) {
        if (read_exact(c->fd, h + 4, VBTS_PROTO_HDR_SIZE - 4, err, errlen) <= 0)
            return errf(err, errlen, "connection closed in a message header");
        it->kind = VBTS_ITEM_MSG;
        it->type = vbts_le16(h + 4);
        it->length = vbts_le32(h + 8);
        if (it->length > VBTS_CLIENT_MAX_MSG)
            return errf(err, errlen, "server message of %u bytes is too long", it->length);
        if (reserve(c, it->length + 1) < 0)
            return errf(err, errlen, "out of memory");
        if (it->length && read_exact(c->fd, c->buf, it->length, err, errlen) <= 0)
            return errf(err, errlen, "connection closed in a message");
        it->payload = c->buf;
        if ((it->type & VBTS_MSG_REPLY) && it->length >= 4) {
            it->status = vbts_le32(c->buf);
            if (it->status) {
                size_t n = it->length - 4 < VBTS_PROTO_MAX_TEXT ? it->length - 4 : VBTS_PROTO_MAX_TEXT;
                memcpy(c->text, c->buf + 4, n);
                c->text[n] = 0;
                for (size_t i = 0; i < n; i++)
                    if ((unsigned char)c->text[i] < 0x20 || (unsigned char)c->text[i] > 0x7e)
                        c->text[i] = '?';
                it->text = c->text;
            }
        } else if (it->type & VBTS_MSG_REPLY) {
            return errf(err, errlen, "reply without a status");
        }
        return 1;
    }
    if (magic == VBTS_CHUNK_MAGIC) {
        if (read_exact(c->fd, h + 4, 20, err, errlen) <= 0)
            return errf(err, errlen, "connection closed in a chunk header");
        it->kind = VBTS_ITEM_CHUNK;
        it->chunk.magic = magic;
        it->chunk.cpu = vbts_le16(h + 4);
        it->chunk.flags = vbts_le16(h + 6);
        it->chunk.count = vbts_le32(h + 8);
        it->chunk.reserved = vbts_le32(h + 12);
        it->chunk.seq = vbts_le64(h + 16);
        if (it->chunk.count > VBTS_CLIENT_MAX_CHUNK)
            return errf(err, errlen, "chunk of %u records is too large", it->chunk.count);
        size_t n = (size_t)it->chunk.count * VBTS_RECORD_SIZE;
        if (reserve(c, n + 1) < 0)
            return errf(err, errlen, "out of memory");
        if (n && read_exact(c->fd, c->buf, n, err, errlen) <= 0)
            return errf(err, errlen, "connection closed in a chunk");
        it->records = c->buf;
        return 1;
    }
    if (!memcmp(h, VBTS_MAGIC, 4))
        return errf(err, errlen, "the monitor sent a plain trace stream: HELLO came later "
                    "than %d ms after connecting", VBTS_PROTO_GRACE_MS);
    return errf(err, errlen, "not a vbts control reply (bad magic)");
}

int vbts_client_call(struct vbts_client *c, uint16_t type, const void *payload, uint32_t len,
                     struct vbts_item *it, char *err, size_t errlen,
                     int (*on_item)(void *ctx, const struct vbts_item *it), void *ctx)
{
    if (vbts_client_send(c, type, payload, len) < 0)
        return errf(err, errlen, "send: %s", strerror(errno));
    for (;;) {
        int r = vbts_client_read(c, it, err, errlen);
        if (r == 0)
            return errf(err, errlen, "the monitor closed the connection");
        if (r < 0)
            return -1;
        if (it->kind == VBTS_ITEM_MSG && (it->type & VBTS_MSG_REPLY)) {
            if (it->status)
                return errf(err, errlen, "%s", it->text ? it->text : "error");
            if (it->type != (type | VBTS_MSG_REPLY))
                return errf(err, errlen, "reply of type 0x%x to a request of type %u",
                            it->type, type);
            return 0;
        }
        if (on_item && on_item(ctx, it) < 0)
            return errf(err, errlen, "interrupted");
    }
}

struct vbts_client *vbts_client_open(const char *addr, char *err, size_t errlen)
{
    return vbts_client_open_opts(addr, 0, err, errlen);
}

struct vbts_client *vbts_client_open_opts(const char *addr, uint32_t options, char *err,
                                          size_t errlen)
{
    struct vbts_client *c = calloc(1, sizeof(*c));
    if (!c) {
        errf(err, errlen, "out of memory");
        return NULL;
    }
    c->fd = vbts_socket_connect(addr, err, errlen);
    if (c->fd < 0) {
        free(c);
        return NULL;
    }
    uint8_t p[VBTS_HELLO_REQ_SIZE] = { 0 };
    vbts_put16(p, VBTS_PROTO_MAJOR);
    vbts_put16(p + 2, VBTS_PROTO_MINOR);
    vbts_put32(p + 4, options);
    struct vbts_item it;
    char e[256];
    if (vbts_client_call(c, VBTS_MSG_HELLO, p, sizeof(p), &it, e, sizeof(e), NULL, NULL) < 0) {
        /* Options came with protocol 1.1: a 1.0 monitor finds the field not 0. */
        if (options && it.kind == VBTS_ITEM_MSG && it.status == VBTS_PROTO_E_FIELD)
            errf(err, errlen, "%s: the monitor does not compress streams (%s)", addr, e);
        else
            errf(err, errlen, "%s: %s", addr, e);
        vbts_client_close(c);
        return NULL;
    }
    if (it.length < VBTS_HELLO_REPLY_SIZE) {
        errf(err, errlen, "%s: short HELLO reply", addr);
        vbts_client_close(c);
        return NULL;
    }
    c->ncpus = vbts_le32(it.payload + 8);
    c->file_flags = vbts_le32(it.payload + 12);
    return c;
}

void vbts_client_close(struct vbts_client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    free(c);
}

int vbts_client_fd(const struct vbts_client *c)
{
    return c->fd;
}

uint32_t vbts_client_ncpus(const struct vbts_client *c)
{
    return c->ncpus;
}

uint32_t vbts_client_file_flags(const struct vbts_client *c)
{
    return c->file_flags;
}
