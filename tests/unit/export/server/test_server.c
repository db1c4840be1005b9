/* SPDX-License-Identifier: MIT */
/* The server thread over real sockets: a silent client gets the plain stream; a stalled watcher holds nothing. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/error.h"
#include "export/server/server.h"
#include "vbts/decode.h"
#include "vbts/protocol.h"

Test(server, stream_over_a_unix_socket)
{
    char dir[] = "/tmp/vbts-test-server.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char dest[128];
    snprintf(dest, sizeof(dest), "unix:%s/s", dir);
    const char *dests[] = { dest };
    struct server_config c = { .dests = dests, .ndests = 1, .buffer_size = 24 * 100,
                               .buffer_limit = 1 << 20, .overflow = VBTS_OVERFLOW_BLOCK,
                               .linger = 1, .quiet = true };
    struct server *x = server_open(&c, 1, VBTS_FILE_F_KIND);
    cr_assert_not_null(x, "%s", error_last());
    struct vbts_record r[10];
    for (int i = 0; i < 10; i++)
        r[i] = (struct vbts_record){ (uint64_t)i + 1, (uint64_t)i + 2, 0 };
    cr_assert_eq(server_publish(x, 0, r, 10), 10);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(server_finish(x), 0, "block mode: the client took everything");
    struct vbts_reader *rd = vbts_reader_new(fd);
    struct vbts_event ev;
    int n = 0, st;
    while ((st = vbts_reader_next(rd, &ev)) == 1)
        cr_assert_eq(ev.rec.from, (uint64_t)++n);
    cr_assert_eq(st, 0, "%s", vbts_strerror(st));
    cr_assert_eq(n, 10);
    vbts_reader_free(rd);
    close(fd);
    server_close(x);
    rmdir(dir);
}

/* A client that reads the unix socket to its end, counting branch records. */
static void *read_all(void *arg)
{
    int fd = *(int *)arg;
    struct vbts_reader *rd = vbts_reader_new(fd);
    struct vbts_event ev;
    intptr_t n = 0;
    while (vbts_reader_next(rd, &ev) == 1)
        n += !ev.is_marker;
    vbts_reader_free(rd);
    return (void *)n;
}

/*
 * A watcher (tcp: without ,control) that connects and never reads holds
 * neither the guest nor the end of the run: once the streaming client has
 * every record, server_finish returns, the watcher's queue still full.  It
 * did hold the end (in the lab, where its queue could not empty into the
 * socket buffers), until the watcher went away.
 */
Test(server, a_stalled_watcher_does_not_hold_the_end, .timeout = 30)
{
    char dir[] = "/tmp/vbts-test-server.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(in);
    cr_assert_eq(bind(probe, (struct sockaddr *)&in, sizeof(in)), 0);
    cr_assert_eq(getsockname(probe, (struct sockaddr *)&in, &len), 0);
    close(probe);
    char udest[128], tdest[64];
    snprintf(udest, sizeof(udest), "unix:%s/s", dir);
    snprintf(tdest, sizeof(tdest), "tcp:127.0.0.1:%u", ntohs(in.sin_port));
    const char *dests[] = { udest, tdest };
    struct server_config c = { .dests = dests, .ndests = 2, .buffer_size = 24 * 4096,
                               .buffer_limit = 1 << 24, .overflow = VBTS_OVERFLOW_BLOCK,
                               .linger = 1, .quiet = true };
    struct server *x = server_open(&c, 1, VBTS_FILE_F_KIND);
    cr_assert_not_null(x, "%s", error_last());
    int w = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(w, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    cr_assert_eq(connect(w, (struct sockaddr *)&in, sizeof(in)), 0, "the watcher connects");
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
    cr_assert_eq(connect(u, (struct sockaddr *)&sa, sizeof(sa)), 0);
    pthread_t reader;
    cr_assert_eq(pthread_create(&reader, NULL, read_all, &u), 0);
    /* 12 MB of trace: far more than the watcher's socket buffers take. */
    static struct vbts_record r[1000];
    for (int i = 0; i < 1000; i++)
        r[i] = (struct vbts_record){ (uint64_t)i + 1, (uint64_t)i + 2, 0 };
    for (int k = 0; k < 500; k++)
        cr_assert_eq(server_publish(x, 0, r, 1000), 1000);
    cr_assert_eq(server_finish(x), 0, "block mode: the streaming client took everything");
    void *n;
    pthread_join(reader, &n);
    cr_assert_eq((intptr_t)n, 500000);
    server_close(x);
    close(w);
    close(u);
    rmdir(dir);
}
