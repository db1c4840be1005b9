/* SPDX-License-Identifier: MIT */
/*
 * Where records go (--trace, repeatable): per-vCPU staging, sealed into
 * chunks that are written to every trace file as is and published to the
 * socket server, so a file and a socket carry the same bytes unless a
 * client lost records.
 *
 * sink_emit (the vCPU thread) only appends to the vCPU's private chunk
 * buffer.  The producer decides chunk boundaries: a chunk is sealed when it
 * holds the server's chunk size (4096 records, or the buffer size if
 * smaller) or when the vCPU stops.
 */
#ifndef VBTS_EXPORT_SINK_H
#define VBTS_EXPORT_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "vbts/format.h"

struct sink_config {
    const char *const *dests;   /* FILE, unix:PATH, tcp:HOST:PORT */
    int ndests;
    uint64_t buffer_size;       /* bytes per vCPU, for sockets */
    uint64_t buffer_limit;      /* bytes for all vCPUs; 0: a quarter of RAM */
    int overflow;               /* enum vbts_overflow */
    double linger;              /* wrap, drop: seconds the final buffers stay readable */
    bool quiet;
    bool force;                 /* replace files that exist */
    /* A trace file could not be written (a vCPU thread, once): the run
     * should end, since everything traced from now on would be lost. */
    void (*on_fail)(void *ctx, const char *msg);
    void *fail_ctx;
};

struct sink;

/* NULL with the error set (a file that cannot be created, a bad socket). */
struct sink *sink_open(const struct sink_config *c, int ncpus);
/* After the run: serve socket clients until they have the trace (block) or
 * --linger is over.  0, or the signal that cut short an undelivered block drain. */
int sink_finish(struct sink *s);
/* From the signal thread: producers and sink_finish stop waiting. */
void sink_interrupt(struct sink *s, int sig);
/* -1 (error set) if anything could not be written. */
int sink_close(struct sink *s);
/* A trace file could not be written: the trace is incomplete. */
bool sink_failed(const struct sink *s);

/* The vCPU thread's side. */
void sink_emit(struct sink *s, int cpu, struct vbts_record r);
void sink_emit_start(struct sink *s, int cpu);
/* STOP with its reason, then flush everything (idempotent). */
void sink_stop(struct sink *s, int cpu, enum vbts_stop_reason why);
bool sink_stopped(const struct sink *s, int cpu);
/* Branch records written for the vCPU (markers excluded). */
uint64_t sink_branches(const struct sink *s, int cpu);

#endif
