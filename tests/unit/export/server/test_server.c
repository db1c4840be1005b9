/* SPDX-License-Identifier: MIT */
/* The server thread over a real unix socket: a silent client gets the plain stream. */
#include <criterion/criterion.h>
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
