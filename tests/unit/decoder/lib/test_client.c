/* SPDX-License-Identifier: MIT */
/* The client against a monitor's server: HELLO, STATUS, and errors for bad addresses. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <vbts/client.h>

#include "core/error.h"
#include "export/server/server.h"

Test(client, hello_and_status)
{
    char dir[] = "/tmp/vbts-test-client.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char dest[128];
    snprintf(dest, sizeof(dest), "unix:%s/s", dir);
    const char *dests[] = { dest };
    struct server_config c = { .dests = dests, .ndests = 1, .buffer_size = 2400,
                               .buffer_limit = 1 << 20, .overflow = VBTS_OVERFLOW_WRAP,
                               .linger = 0, .quiet = true };
    struct server *x = server_open(&c, 2, VBTS_FILE_F_KIND);
    cr_assert_not_null(x, "%s", error_last());
    char err[256];
    struct vbts_client *cl = vbts_client_open(dest, err, sizeof(err));
    cr_assert_not_null(cl, "%s", err);
    cr_assert_eq(vbts_client_ncpus(cl), 2);
    cr_assert_eq(vbts_client_file_flags(cl), VBTS_FILE_F_KIND);
    struct vbts_item it;
    cr_assert_eq(vbts_client_call(cl, VBTS_MSG_STATUS, NULL, 0, &it, err, sizeof(err), NULL, NULL), 0, "%s", err);
    cr_assert_eq(it.length, VBTS_STATUS_REPLY_HEAD + 2 * VBTS_STATUS_REPLY_CPU);
    vbts_client_close(cl);
    server_finish(x);
    server_close(x);
    rmdir(dir);
}

Test(client, bad_addresses)
{
    char err[256];
    cr_assert_null(vbts_client_open("t.vbts", err, sizeof(err)));
    cr_assert_str_eq(err, "t.vbts: not unix:PATH or tcp:HOST:PORT");
    cr_assert_null(vbts_client_open("unix:/nonexistent/s", err, sizeof(err)));
    cr_assert_str_eq(err, "unix:/nonexistent/s: No such file or directory");
    cr_assert(vbts_is_socket_addr("tcp:1"));
    cr_assert_not(vbts_is_socket_addr("tcp"));
}
