/* SPDX-License-Identifier: MIT */
/*
 * The trace socket server (--trace unix:PATH, tcp:HOST:PORT): listeners,
 * one thread with poll(2), per-client sessions that stream the trace or
 * speak the control protocol (docs/protocol.md).  export/sink.c publishes
 * sealed chunks into its per-vCPU rings.
 */
#ifndef VBTS_EXPORT_SERVER_SERVER_H
#define VBTS_EXPORT_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vbts/format.h"

struct server_config {
    const char *const *dests;       /* "unix:PATH", "tcp:HOST:PORT" */
    int ndests;
    uint64_t buffer_size;           /* bytes per vCPU */
    uint64_t buffer_limit;          /* bytes, all vCPUs */
    int overflow;                   /* enum vbts_overflow */
    double linger;                  /* seconds */
    bool quiet;
};

struct server;

/* Listen on every destination and start the server; NULL with the error set. */
struct server *server_open(const struct server_config *c, int ncpus, uint32_t file_flags);
/* Producer side (vCPU threads). */
uint64_t server_publish(struct server *x, int cpu, const struct vbts_record *r, uint64_t n);
uint32_t server_chunk_max(struct server *x, int cpu);
unsigned server_trace_flags(struct server *x);      /* VBTS_CFG_* */
/* The vCPU stopped: its buffer receives nothing more. */
void server_vcpu_done(struct server *x, int cpu);
/* A signal: stop waiting for clients (producers and server_finish). */
void server_interrupt(struct server *x, int sig);
/*
 * The guest ended: serve clients until block mode has delivered every
 * record, or the linger time of wrap and drop mode is over.  Returns 0, or
 * the signal number if a signal cut short a block-mode drain that still
 * had records.
 */
int server_finish(struct server *x);
/* Stop the server, remove unix socket files, print the summary. */
void server_close(struct server *x);

/* For the fuzzer and unit tests: a server without sockets or thread. */
struct server *server_new_detached(int ncpus, uint64_t cap, int overflow);
/* Feed bytes as from one client; replies and data are appended to out. */
void server_detached_feed(struct server *x, const uint8_t *in, size_t len,
                          void (*out)(void *ctx, const uint8_t *p, size_t n), void *ctx);
void server_free_detached(struct server *x);

#endif
