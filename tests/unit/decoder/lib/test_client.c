/* SPDX-License-Identifier: MIT */
/* The client against a monitor's server: HELLO, STATUS, and errors for bad addresses. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* A monitor of protocol 1.0: HELLO's last field must be 0, else E_FIELD and close. */
static void *old_monitor(void *arg)
{
    int l = *(int *)arg, fd = accept(l, NULL, NULL);
    uint8_t in[20], out[64];
    size_t got = 0;
    while (fd >= 0 && got < sizeof(in)) {
        ssize_t n = read(fd, in + got, sizeof(in) - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    const char *t = "invalid field value";
    vbts_msg_header(out, VBTS_MSG_HELLO | VBTS_MSG_REPLY, (uint32_t)(4 + strlen(t)));
    vbts_put32(out + 12, vbts_le32(in + 16) ? VBTS_PROTO_E_FIELD : VBTS_PROTO_OK);
    memcpy(out + 16, t, strlen(t));
    cr_assert_eq(write(fd, out, 16 + strlen(t)), (ssize_t)(16 + strlen(t)));
    close(fd);
    return NULL;
}

Test(client, compress_refused_by_a_1_0_monitor)
{
    char dir[] = "/tmp/vbts-test-client.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(l, 1), 0);
    pthread_t t;
    pthread_create(&t, NULL, old_monitor, &l);
    char dest[128], err[256], want[300];
    snprintf(dest, sizeof(dest), "unix:%s", sa.sun_path);
    cr_assert_null(vbts_client_open_opts(dest, VBTS_HELLO_ZSTD, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s: the monitor does not compress streams (invalid field value)", dest);
    cr_assert_str_eq(err, want);
    pthread_join(t, NULL);
    close(l);
    unlink(sa.sun_path);
    rmdir(dir);
}
