/* SPDX-License-Identifier: MIT */
/* The sockets clients connect to: 0600 unix sockets, stale ones replaced, loopback TCP. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/error.h"
#include "export/server/conn.h"
#include "export/server/feed.h"
#include "export/server/listen.h"

Test(listen, unix_socket_is_private_and_reusable)
{
    char dir[] = "/tmp/vbts-test-listen.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char dest[160], path[128];
    snprintf(path, sizeof(path), "%.100s/s", dir);
    snprintf(dest, sizeof(dest), "unix:%s", path);
    struct listener l = { .fd = -1 };
    cr_assert_eq(listen_open(&l, dest), 0, "%s", error_last());
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_str_eq(l.name, dest);
    struct listener l2 = { .fd = -1 };
    cr_assert_eq(listen_open(&l2, dest), -1, "a live socket is not taken over");
    char want[512];
    snprintf(want, sizeof(want), "--trace %s: socket %s is in use by another process", dest, path);
    cr_assert_str_eq(error_last(), want);
    close(l.fd);                        /* now stale: a new run may take it */
    cr_assert_eq(listen_open(&l2, dest), 0, "%s", error_last());
    close(l2.fd);
    unlink(path);
    FILE *f = fopen(path, "w");
    fclose(f);
    cr_assert_eq(listen_open(&l2, dest), -1);
    snprintf(want, sizeof(want), "--trace %s: %s exists and is not a socket", dest, path);
    cr_assert_str_eq(error_last(), want);
    unlink(path);
    rmdir(dir);
    free(l.name);
    free(l.unlink_path);
    free(l2.name);
    free(l2.unlink_path);
}

Test(listen, tcp_on_loopback_by_default)
{
    struct listener l = { .fd = -1 };
    cr_assert_eq(listen_open(&l, "tcp:0"), 0, "%s", error_last());
    cr_assert(strncmp(l.name, "tcp:127.0.0.1:", 14) == 0, "%s", l.name);
    cr_assert_neq(strcmp(l.name, "tcp:127.0.0.1:0"), 0, "the port the kernel chose");
    close(l.fd);
    free(l.name);
    cr_assert_eq(listen_open(&l, "tcp:127.0.0.1:99999"), -1);
    cr_assert_str_eq(error_last(), "--trace tcp:127.0.0.1:99999: bad port '99999' (use tcp:HOST:PORT, e.g. tcp:127.0.0.1:5000)");
    cr_assert_eq(listen_open(&l, "unix:"), -1);
    cr_assert_str_eq(error_last(), "--trace unix:: empty socket path");
}
