/* SPDX-License-Identifier: MIT */
/*
 * The GDB remote protocol's commands, apart from sockets and vCPUs: the
 * stub reads packets (rsp.h), answers them through a target's operations
 * and sends the replies, so that the unit tests and the fuzzer drive it
 * without a VM.  All-stop: the target is either stopped (every vCPU) or
 * running, and while it runs only the interrupt byte counts.  One gdb
 * thread per vCPU, numbered from 1.
 */
#ifndef VBTS_GDB_STUB_H
#define VBTS_GDB_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdb/btrace.h"
#include "gdb/regs.h"
#include "gdb/rsp.h"

/* What a vCPU does when the target resumes. */
enum stub_action { STUB_STAY, STUB_CONTINUE, STUB_STEP };

/* Z packet types. */
enum stub_point { STUB_SW_BREAK, STUB_HW_BREAK, STUB_WRITE_WATCH, STUB_READ_WATCH,
                  STUB_ACCESS_WATCH };

/* Why the target stopped, as the stop reply says it. */
struct stub_stop {
    int cpu;                    /* the vCPU that stopped, or -1: none in particular */
    int signal;                 /* 5 SIGTRAP, 2 SIGINT */
    enum { STUB_WHY_PLAIN, STUB_WHY_SWBREAK, STUB_WHY_HWBREAK, STUB_WHY_WATCH,
           STUB_WHY_AWATCH } why;
    uint64_t addr;              /* the watchpoint's address */
};

/* The target, called only while it is stopped (but interrupt). */
struct stub_ops {
    /* 0, or -1: the vCPU's registers cannot be read. */
    int (*regs_get)(void *ctx, int cpu, struct regs_state *s);
    int (*regs_set)(void *ctx, int cpu, const struct regs_state *s, unsigned changed);
    /* Bytes copied from the start of the range before the first that cannot be. */
    size_t (*mem_read)(void *ctx, int cpu, uint64_t addr, void *buf, size_t len);
    size_t (*mem_write)(void *ctx, int cpu, uint64_t addr, const void *buf, size_t len);
    /* 0 done, 1 not supported (empty reply), -1 refused with *why. */
    int (*point)(void *ctx, bool insert, enum stub_point type, uint64_t addr, uint64_t kind,
                 const char **why);
    /*
     * actions[cpu] for every vCPU; the target reports its next stop with
     * stub_stopped().  -1 with *why: it cannot (and stays stopped).
     */
    int (*resume)(void *ctx, const enum stub_action *actions, const char **why);
    void (*interrupt)(void *ctx);
    void (*kill)(void *ctx);
    void (*detach)(void *ctx);
    bool (*alive)(void *ctx, int cpu);
    /* Branch trace: 0, or -1 with *why (gdb shows it). */
    int (*btrace_on)(void *ctx, int cpu, uint64_t size, const char **why);
    int (*btrace_off)(void *ctx, int cpu, const char **why);
    char *(*btrace_read)(void *ctx, int cpu, enum btrace_read how, size_t *len, const char **why);
    char *(*btrace_conf)(void *ctx, int cpu, size_t *len);
    /* Bytes to the client. */
    void (*send)(void *ctx, const char *buf, size_t len);
};

struct stub {
    const struct stub_ops *ops;
    void *ctx;
    int ncpus;
    enum regs_arch arch;
    bool no_ack;
    bool running;
    bool ended;                 /* the target is gone (k, or the guest ended) */
    int gcpu;                   /* Hg: registers and memory */
    int ccpu;                   /* Hc: c and s without vCont; -1 all */
    uint64_t bts_size;          /* Qbtrace-conf:bts:size */
    struct stub_stop last;
    /* The qXfer object being read in pieces, made at offset 0. */
    char *xfer;
    size_t xfer_len;
    char xfer_key[64];
    struct rsp rsp;
    char reply[RSP_MAX_PACKET + 1];
    uint8_t mem[RSP_MAX_PACKET];    /* an M or X packet's bytes */
    char frame[2 * RSP_MAX_PACKET + 8];
};

void stub_init(struct stub *s, const struct stub_ops *ops, void *ctx, int ncpus,
               enum regs_arch arch, const struct stub_stop *initial);
void stub_fini(struct stub *s);
/* Bytes from the client. */
void stub_input(struct stub *s, const uint8_t *buf, size_t len);
/* The running target stopped: the stop reply. */
void stub_stopped(struct stub *s, const struct stub_stop *st);
/* The target ended with this exit status (W). */
void stub_exited(struct stub *s, int status);
/* A line for gdb's console (an O packet), while the target runs, before its stop reply. */
void stub_console(struct stub *s, const char *line);

#endif
