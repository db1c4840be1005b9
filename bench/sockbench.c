/* SPDX-License-Identifier: MIT */
/*
 * Socket streaming throughput: the monitor's real record path (sink_emit,
 * sealed chunks, the socket buffer and server) with a synthetic producer,
 * so the guest's single-step speed is not what is measured.  One run writes
 * a file and serves a unix socket (block mode); a client reads the socket
 * to the end; then `cat FILE | reader` moves the same bytes through a pipe.
 *
 *   sockbench DIR [RECORDS]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vbts/client.h>

#include "core/error.h"
#include "export/sink.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t nrec;

static void *producer(void *arg)
{
    struct sink *t = arg;
    sink_emit_start(t, 0);
    for (uint64_t i = 0; i < nrec; i++) {
        struct vbts_record r = { 0x100000 + (i & 0xfff), 0x100000 + ((i * 7) & 0xfff),
                                 (uint64_t)(1 + i % 6) << VBTS_KIND_SHIFT };
        sink_emit(t, 0, r);
    }
    sink_stop(t, 0, VBTS_STOP_GUEST_EXIT);
    return NULL;
}

/* Read fd to the end straight into buf (no per-byte work): bytes read. */
static uint64_t drain_fd(int fd, char *buf, uint64_t cap)
{
    uint64_t n = 0;
    for (;;) {
        size_t want = cap - n < (1u << 20) ? (size_t)(cap - n) : (1u << 20);
        if (want == 0) {
            fprintf(stderr, "sockbench: more bytes than expected\n");
            exit(1);
        }
        ssize_t r = read(fd, buf + n, want);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            perror("read");
            exit(1);
        }
        n += (uint64_t)r;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: sockbench DIR [RECORDS]\n");
        return 2;
    }
    nrec = argc > 2 ? strtoull(argv[2], NULL, 10) : 4000000;
    char file[512], sock[512], addr[520];
    snprintf(file, sizeof(file), "%s/bench.vbts", argv[1]);
    snprintf(sock, sizeof(sock), "%s/bench.sock", argv[1]);
    snprintf(addr, sizeof(addr), "unix:%s", sock);
    const char *dests[] = { file, addr };
    struct sink_config c = { .dests = dests, .ndests = 2, .buffer_size = 4u << 20,
                             .overflow = 0, .linger = 0, .quiet = true, .force = true };
    struct sink *s = sink_open(&c, 1);
    if (!s) {
        fprintf(stderr, "sockbench: %s\n", error_last());
        return 1;
    }

    char err[256];
    struct vbts_client *cl = vbts_client_open(addr, err, sizeof(err));
    struct vbts_item it;
    if (!cl || vbts_client_call(cl, VBTS_MSG_STREAM, (const uint8_t[8]){ 0 }, 8, &it, err,
                                sizeof(err), NULL, NULL) < 0) {
        fprintf(stderr, "sockbench: %s\n", err);
        return 1;
    }
    uint64_t cap = (nrec + 16) * VBTS_RECORD_SIZE * 2 + (1u << 20);
    char *sbuf = malloc(cap), *cbuf = malloc(cap);
    if (!sbuf || !cbuf)
        return 1;
    memset(sbuf, 1, cap);   /* fault the pages in before timing */
    memset(cbuf, 1, cap);
    pthread_t th;
    double t0 = now();
    pthread_create(&th, NULL, producer, s);
    uint64_t bytes = drain_fd(vbts_client_fd(cl), sbuf, cap);
    double t1 = now();
    pthread_join(th, NULL);
    sink_finish(s);
    vbts_client_close(cl);
    sink_close(s);

    /* The same bytes through cat and a pipe. */
    int pfd[2];
    if (pipe(pfd) < 0)
        return 1;
    double t2 = now();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        close(pfd[0]);
        close(pfd[1]);
        execlp("cat", "cat", file, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    uint64_t cbytes = drain_fd(pfd[0], cbuf, cap);
    waitpid(pid, NULL, 0);
    double t3 = now();
    close(pfd[0]);
    unlink(file);

    bool same = bytes == cbytes && memcmp(sbuf, cbuf, bytes) == 0;
    double records = (double)(nrec + 2);    /* with the start and stop markers */
    double ds = t1 - t0, dc = t3 - t2;
    printf("%-44s %12s %10s %10s\n", "path (same bytes)", "records/s", "MB/s", "seconds");
    printf("%-44s %12.0f %10.1f %10.3f\n", "socket: emit -> buffer -> unix socket -> client",
           records / ds, bytes / ds / 1e6, ds);
    printf("%-44s %12.0f %10.1f %10.3f\n", "cat FILE | pipe -> reader", records / dc,
           cbytes / dc / 1e6, dc);
    printf("socket/cat throughput ratio: %.2f; %" PRIu64 " records, %" PRIu64
           " bytes, socket bytes %s the file's\n", (bytes / ds) / (cbytes / dc), nrec + 2, bytes,
           same ? "identical to" : "DIFFERENT from");
    free(sbuf);
    free(cbuf);
    return same ? 0 : 1;
}
