/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile server for the protocol client
 * (decoder/lib/client.c).  A thread accepts the client's connection on a
 * unix socket and sends it the input, whatever it asks; the client says
 * HELLO, makes a STATUS and a GET call, then reads items to the end.
 * Every item must lie within what the client buffered (ASan checks each
 * byte), and error texts must be short, printable and NUL-terminated.
 */
#include "fuzz.h"

#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <vbts/client.h>

static char dir[64], addr[128];
static int listener = -1;

static void cleanup(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/s", dir);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof(dir), "/tmp/vbts-fuzz-client.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    atexit(cleanup);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
    snprintf(addr, sizeof(addr), "unix:%s", sa.sun_path);
    listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(listener, 4) < 0)
        return -1;
    return 0;
}

struct server {
    const uint8_t *data;
    size_t size;
};

/* Send everything, then read what the client sent until it closes: a
 * socket closed with unread data would reset the connection instead. */
static void *serve(void *arg)
{
    const struct server *s = arg;
    int fd = accept(listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    for (size_t done = 0; done < s->size;) {
        ssize_t n = write(fd, s->data + done, s->size - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char buf[4096];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    close(fd);
    return NULL;
}

static unsigned sink;

static void touch(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sink += p[i];
}

static int check_item(void *ctx, const struct vbts_item *it)
{
    (void)ctx;
    if (it->kind == VBTS_ITEM_MSG) {
        fuzz_check(it->length <= VBTS_CLIENT_MAX_MSG, "message of %u bytes", it->length);
        touch(it->payload, it->length);
        if (it->text) {
            size_t n = strnlen(it->text, VBTS_PROTO_MAX_TEXT + 1);
            fuzz_check(n <= VBTS_PROTO_MAX_TEXT, "error text of %zu bytes", n);
            for (size_t i = 0; i < n; i++)
                fuzz_check(it->text[i] >= 0x20 && it->text[i] <= 0x7e, "text byte 0x%02x",
                           (unsigned char)it->text[i]);
        }
    } else {
        fuzz_check(it->kind == VBTS_ITEM_CHUNK, "item kind %d", it->kind);
        fuzz_check(it->chunk.count <= VBTS_CLIENT_MAX_CHUNK, "chunk of %u", it->chunk.count);
        touch(it->records, (size_t)it->chunk.count * VBTS_RECORD_SIZE);
    }
    return 0;
}

static void check_err(const char *err, size_t len)
{
    fuzz_check(strnlen(err, len) < len, "error message not NUL-terminated");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (listener < 0 && LLVMFuzzerInitialize(NULL, NULL) < 0)
        abort();
    /* More would fill the socket while the client waits to send. */
    if (size > 64 * 1024)
        return 0;
    struct server s = { data, size };
    pthread_t t;
    if (pthread_create(&t, NULL, serve, &s))
        abort();
    char err[256] = "";
    struct vbts_client *c = vbts_client_open(addr, err, sizeof(err));
    if (!c) {
        check_err(err, sizeof(err));
    } else {
        sink += vbts_client_ncpus(c) + vbts_client_file_flags(c);
        struct vbts_item it;
        if (vbts_client_call(c, VBTS_MSG_STATUS, NULL, 0, &it, err, sizeof(err), check_item,
                             NULL) == 0)
            check_item(NULL, &it);
        check_err(err, sizeof(err));
        uint8_t get[VBTS_GET_REQ_SIZE] = { 0 };
        if (vbts_client_call(c, VBTS_MSG_GET, get, sizeof(get), &it, err, sizeof(err), check_item,
                             NULL) == 0)
            check_item(NULL, &it);
        check_err(err, sizeof(err));
        for (int k = 0; k < 1000 && vbts_client_read(c, &it, err, sizeof(err)) == 1; k++)
            check_item(NULL, &it);
        check_err(err, sizeof(err));
        vbts_client_close(c);
    }
    pthread_join(t, NULL);
    return 0;
}
