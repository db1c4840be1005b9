/* SPDX-License-Identifier: MIT */
/* The sockets clients connect to: unix:PATH (0600, a stale one replaced) and tcp:HOST:PORT. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/error.h"
#include "export/server/conn.h"
#include "export/server/listen.h"
#include "vbts/dest.h"

static int listen_unix(struct listener *l, const char *dest, const struct vbts_dest *d)
{
    const char *path = d->path;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return error_fail("--trace %s: %s exists and is not a socket", dest, path);
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int r = probe >= 0 ? connect(probe, (struct sockaddr *)&sa, sizeof(sa)) : -1;
        int e = errno;
        if (probe >= 0)
            close(probe);
        if (r == 0)
            return error_fail("--trace %s: socket %s is in use by another process", dest, path);
        if (e != ECONNREFUSED)
            return error_fail("--trace %s: cannot reuse %s: %s", dest, path, strerror(e));
        unlink(path);           /* a stale socket from a run that died */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return error_fail_errno("--trace %s: socket", dest);
    mode_t old = umask(0177);   /* the socket file is created 0600 */
    int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (r < 0) {
        error_fail_errno("--trace %s: cannot bind", dest);
        close(fd);
        return -1;
    }
    if (chmod(path, 0600) < 0 || listen(fd, 16) < 0) {
        error_fail_errno("--trace %s: cannot listen", dest);
        close(fd);
        unlink(path);
        return -1;
    }
    l->fd = fd;
    l->name = strdup(dest);
    l->unlink_path = strdup(path);
    return 0;
}

int listen_tcp_socket(const char *what, const struct vbts_dest *d, char *name, size_t namelen)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICSERV };
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(d->host, d->port, &hints, &ai);
    if (g != 0)
        return error_fail("%s: cannot resolve '%s': %s", what, d->host, gai_strerror(g));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return error_fail_errno("%s: socket", what);
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0) {
        error_fail_errno("%s: cannot listen", what);
        freeaddrinfo(ai);
        close(fd);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char addr[INET6_ADDRSTRLEN] = "?";
    unsigned bound = (unsigned)strtoul(d->port, NULL, 10);
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
    snprintf(name, namelen, ss.ss_family == AF_INET6 ? "tcp:[%s]:%u" : "tcp:%s:%u", addr, bound);
    return fd;
}

static int listen_tcp(struct listener *l, const char *dest, const struct vbts_dest *d)
{
    char what[300], name[320];
    snprintf(what, sizeof(what), "--trace %s", dest);
    int fd = listen_tcp_socket(what, d, name, sizeof(name));
    if (fd < 0)
        return -1;
    l->fd = fd;
    l->name = strdup(name);
    l->unlink_path = NULL;
    return 0;
}

int listen_open(struct listener *l, const char *dest)
{
    struct vbts_dest d;
    char err[VBTS_MAX_MSG];
    if (vbts_dest_parse(dest, &d, err, sizeof(err)) < 0)
        return error_fail("--trace %s", err);
    l->control = d.control;
    if (d.kind == VBTS_DEST_UNIX)
        return listen_unix(l, dest, &d);
    return listen_tcp(l, dest, &d);
}

void listen_close_all(struct server *x)
{
    for (int i = 0; i < x->nls; i++) {
        if (x->ls[i].fd >= 0)
            close(x->ls[i].fd);
        x->ls[i].fd = -1;
        if (x->ls[i].unlink_path)
            unlink(x->ls[i].unlink_path);
    }
}

void listen_accept(struct server *x, struct listener *l, double now)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = x->nconns < MAX_CLIENTS ? conn_new(x, fd, now) : NULL;
        if (c) {
            c->watch = !l->control;
        } else {
            uint8_t buf[VBTS_PROTO_HDR_SIZE + 4 + VBTS_PROTO_MAX_TEXT];
            size_t n = proto_error(buf, 0, VBTS_PROTO_E_CLIENTS, NULL);
            if (send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                /* nothing more to say */
            }
            close(fd);
        }
    }
}

