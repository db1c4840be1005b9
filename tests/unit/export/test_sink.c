/* SPDX-License-Identifier: MIT */
/* The sink: per-vCPU staging sealed into chunks, STOP at the end, counts. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "core/error.h"
#include "export/sink.h"
#include "vbts/client.h"
#include "vbts/decode.h"
#include "vbts/protocol.h"

Test(sink, records_reach_the_file_in_order)
{
    char path[] = "/tmp/vbts-test-sink.XXXXXX";
    int tmp = mkstemp(path);
    close(tmp);
    const char *dests[] = { path };
    struct sink_config c = { .dests = dests, .ndests = 1, .buffer_size = 24 * 1024, .force = true };
    struct sink *s = sink_open(&c, 2);
    cr_assert_not_null(s, "%s", error_last());
    sink_emit_start(s, 0);
    for (uint64_t i = 0; i < 5000; i++)
        sink_emit(s, 0, (struct vbts_record){ 0x1000 + i, 0x2000 + i, (uint64_t)VBTS_KIND_JMP << VBTS_KIND_SHIFT });
    sink_emit(s, 1, (struct vbts_record){ 1, 2, (uint64_t)VBTS_KIND_CALL << VBTS_KIND_SHIFT });
    cr_assert_eq(sink_branches(s, 0), 5000);
    cr_assert_not(sink_stopped(s, 0));
    sink_stop(s, 0, VBTS_STOP_GUEST_EXIT);
    sink_stop(s, 0, VBTS_STOP_ERROR);           /* idempotent: one STOP */
    sink_stop(s, 1, VBTS_STOP_GUEST_EXIT);
    cr_assert(sink_stopped(s, 0));
    cr_assert_not(sink_failed(s));
    cr_assert_eq(sink_close(s), 0, "%s", error_last());

    int fd = open(path, O_RDONLY);
    struct vbts_reader *r = vbts_reader_new(fd);
    cr_assert_not_null(r);
    struct vbts_event ev;
    uint64_t n0 = 0, stops = 0;
    int st;
    while ((st = vbts_reader_next(r, &ev)) == 1) {
        if (ev.cpu == 0 && !ev.is_marker) {
            cr_assert_eq(ev.rec.from, 0x1000 + n0);
            n0++;
        }
        if (ev.is_marker && ev.qualifier == VBTS_MARK_STOP)
            stops++;
    }
    cr_assert_eq(st, 0, "clean end: %s", vbts_strerror(st));
    cr_assert_eq(n0, 5000);
    cr_assert_eq(stops, 2, "one STOP per vCPU");
    vbts_reader_free(r);
    close(fd);
    unlink(path);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s", path);
    off_t len = lseek(fd, 0, SEEK_END);
    unsigned char *b = malloc((size_t)len + 1);
    cr_assert_eq(pread(fd, b, (size_t)len, 0), len);
    close(fd);
    *n = (size_t)len;
    return b;
}

Test(sink, zst_file_holds_the_plain_file_compressed)
{
    char dir[] = "/tmp/vbts-test-sink.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char plain[64], packed[64];
    snprintf(plain, sizeof(plain), "%s/t.vbts", dir);
    snprintf(packed, sizeof(packed), "%s/t.vbts.zst", dir);
    const char *dests[] = { plain, packed };
    struct sink_config c = { .dests = dests, .ndests = 2, .buffer_size = 24 * 1024 };
    struct sink *s = sink_open(&c, 2);
    cr_assert_not_null(s, "%s", error_last());
    sink_emit_start(s, 0);
    sink_emit_start(s, 1);
    for (uint64_t i = 0; i < 50000; i++)
        sink_emit(s, (int)(i % 7 == 0), (struct vbts_record){ 0x1000 + i % 64, 0x2000 + i % 64,
                                                           (uint64_t)VBTS_KIND_JMP << VBTS_KIND_SHIFT });
    sink_stop(s, 0, VBTS_STOP_GUEST_EXIT);
    sink_stop(s, 1, VBTS_STOP_GUEST_EXIT);
    cr_assert_eq(sink_close(s), 0, "%s", error_last());
    size_t np, nz;
    unsigned char *p = slurp(plain, &np), *z = slurp(packed, &nz), *back = malloc(np + 1);
    cr_assert_gt(np, 50000 * 24);
    cr_assert_lt(nz * 10, np, "%zu bytes, plain %zu", nz, np);
    size_t got = ZSTD_decompress(back, np + 1, z, nz);
    cr_assert(!ZSTD_isError(got), "%s", ZSTD_getErrorName(got));
    cr_assert_eq(got, np);
    cr_assert_arr_eq(back, p, np, "zstd -d of the .zst is the plain file, byte for byte");
    free(p);
    free(z);
    free(back);
    unlink(plain);
    unlink(packed);
    rmdir(dir);
}

Test(sink, buffer_sizes_are_checked)
{
    const char *dests[] = { "/tmp/unused.vbts" };
    struct sink_config c = { .dests = dests, .ndests = 1, .buffer_size = 10 };
    cr_assert_null(sink_open(&c, 1));
    cr_assert_str_eq(error_last(), "--buffer-size: 10 bytes is less than one record (24 bytes)");
    c.buffer_size = 2400;
    c.buffer_limit = 4000;
    cr_assert_null(sink_open(&c, 2));
    cr_assert_str_eq(error_last(), "--buffer-size: 2 vCPU buffers of 2400 bytes exceed the buffer limit of 4000 bytes (--buffer-limit)");
}

/*
 * Four vCPUs writing while eight clients stream: in block mode every
 * client gets every record of every vCPU in order; in drop mode each
 * client's records and lost counts add up to what was produced, every gap
 * marked where it is.
 */
#define NCPU 4
#define NCLIENT 8
#define PER_CPU 200000u

struct load {
    struct sink *sink;
    char addr[128];
    int mode;
    atomic_int streaming;
    int cpu;                        /* producers */
    struct load_client {
        struct load *l;
        uint64_t got[NCPU], lost[NCPU], next[NCPU], starts[NCPU], stops[NCPU];
        char err[256];
    } cl[NCLIENT];
};

static struct load load;

static void *producer(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    sink_emit_start(load.sink, cpu);
    for (uint32_t i = 0; i < PER_CPU; i++)
        sink_emit(load.sink, cpu, (struct vbts_record){ ((uint64_t)cpu << 32) | i, i,
                                   (uint64_t)VBTS_KIND_JMP << VBTS_KIND_SHIFT });
    sink_stop(load.sink, cpu, VBTS_STOP_GUEST_EXIT);
    return NULL;
}

/* The first fault a client sees, kept for the assertion in the test. */
static void *client(void *arg)
{
    struct load_client *k = arg;
    struct vbts_item it;
    struct vbts_client *c = vbts_client_open(k->l->addr, k->err, sizeof(k->err));
    if (!c)
        return NULL;
    if (vbts_client_call(c, VBTS_MSG_STREAM, (const uint8_t[VBTS_STREAM_REQ_SIZE]){ 0 },
                         VBTS_STREAM_REQ_SIZE, &it, k->err, sizeof(k->err), NULL, NULL) < 0) {
        vbts_client_close(c);
        return NULL;
    }
    atomic_fetch_add(&k->l->streaming, 1);
    struct vbts_reader *r = vbts_reader_new(vbts_client_fd(c));
    struct vbts_event ev;
    int st;
    while ((st = vbts_reader_next(r, &ev)) == 1 && !k->err[0]) {
        unsigned cpu = ev.cpu;
        if (cpu >= NCPU) {
            snprintf(k->err, sizeof(k->err), "cpu %u", cpu);
        } else if (!ev.is_marker) {
            uint64_t i = ev.rec.to;
            if (ev.rec.from >> 32 != cpu || i != k->next[cpu])
                snprintf(k->err, sizeof(k->err), "cpu %u: record %llu where %llu was due", cpu,
                         (unsigned long long)i, (unsigned long long)k->next[cpu]);
            k->next[cpu] = i + 1;
            k->got[cpu]++;
        } else if (ev.qualifier == VBTS_MARK_LOST) {
            k->lost[cpu] += ev.rec.to;
            k->next[cpu] += ev.rec.to;
        } else if (ev.qualifier == VBTS_MARK_START) {
            k->starts[cpu]++;
        } else if (ev.qualifier == VBTS_MARK_STOP) {
            k->stops[cpu]++;
        }
    }
    if (st < 0 && !k->err[0])
        snprintf(k->err, sizeof(k->err), "reader: %s", vbts_strerror(st));
    vbts_reader_free(r);
    vbts_client_close(c);
    return NULL;
}

static void run_load(int mode, uint64_t buffer_size)
{
    char dir[] = "/tmp/vbts-test-load.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    memset(&load, 0, sizeof(load));
    snprintf(load.addr, sizeof(load.addr), "unix:%s/s", dir);
    const char *dests[] = { load.addr };
    struct sink_config c = { .dests = dests, .ndests = 1, .buffer_size = buffer_size,
                             .overflow = mode, .linger = 10, .quiet = true };
    load.sink = sink_open(&c, NCPU);
    cr_assert_not_null(load.sink, "%s", error_last());
    pthread_t ct[NCLIENT], pt[NCPU];
    for (int i = 0; i < NCLIENT; i++) {
        load.cl[i].l = &load;
        pthread_create(&ct[i], NULL, client, &load.cl[i]);
    }
    /* Every client streams before the first record: all see everything. */
    for (int w = 0; w < 5000 && atomic_load(&load.streaming) < NCLIENT; w++)
        usleep(1000);
    cr_assert_eq(atomic_load(&load.streaming), NCLIENT);
    for (int i = 0; i < NCPU; i++)
        pthread_create(&pt[i], NULL, producer, (void *)(intptr_t)i);
    for (int i = 0; i < NCPU; i++)
        pthread_join(pt[i], NULL);
    cr_assert_eq(sink_finish(load.sink), 0);
    for (int i = 0; i < NCLIENT; i++)
        pthread_join(ct[i], NULL);
    cr_assert_eq(sink_close(load.sink), 0, "%s", error_last());
    rmdir(dir);
}

Test(sink, four_vcpus_eight_clients_block_loses_nothing, .timeout = 120)
{
    run_load(VBTS_OVERFLOW_BLOCK, 24 * 1024);
    for (int k = 0; k < NCLIENT; k++) {
        struct load_client *l = &load.cl[k];
        cr_assert_str_empty(l->err, "client %d: %s", k, l->err);
        for (int cpu = 0; cpu < NCPU; cpu++) {
            cr_assert_eq(l->got[cpu], PER_CPU, "client %d cpu %d", k, cpu);
            cr_assert_eq(l->lost[cpu], 0);
            cr_assert_eq(l->starts[cpu], 1);
            cr_assert_eq(l->stops[cpu], 1);
        }
    }
}

Test(sink, four_vcpus_eight_clients_drop_counts_add_up, .timeout = 120)
{
    run_load(VBTS_OVERFLOW_DROP, 24 * 256);
    uint64_t lost = 0;
    for (int k = 0; k < NCLIENT; k++) {
        struct load_client *l = &load.cl[k];
        cr_assert_str_empty(l->err, "client %d: %s", k, l->err);
        for (int cpu = 0; cpu < NCPU; cpu++) {
            /* Every record is there or counted in a LOST marker at its place. */
            cr_assert_eq(l->got[cpu] + l->lost[cpu], PER_CPU, "client %d cpu %d: got %llu lost %llu next %llu starts %llu stops %llu", k, cpu,
                         (unsigned long long)l->got[cpu], (unsigned long long)l->lost[cpu], (unsigned long long)l->next[cpu], (unsigned long long)l->starts[cpu], (unsigned long long)l->stops[cpu]);
            cr_assert_eq(l->next[cpu], PER_CPU, "client %d cpu %d: got %llu lost %llu", k, cpu,
                         (unsigned long long)l->got[cpu], (unsigned long long)l->lost[cpu]);
            cr_assert_eq(l->starts[cpu], 1);
            cr_assert_eq(l->stops[cpu], 1);
            lost += l->lost[cpu];
        }
    }
    cr_log_info("drop mode: %llu records lost over %d clients", (unsigned long long)lost, NCLIENT);
}
