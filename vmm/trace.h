/* SPDX-License-Identifier: MIT */
/*
 * The tracing engine: per-vCPU record buffers, the sink that writes them as
 * format chunks (include/vbts/format.h), and the single-step recorder.
 */
#ifndef VBTS_TRACE_H
#define VBTS_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_branch.h"
#include "vbts.h"
#include "vbts/format.h"

struct trace_sink;

enum trace_cpl { TRACE_CPL_ALL, TRACE_CPL_KERNEL, TRACE_CPL_USER };
enum trace_window { WINDOW_WAITING, WINDOW_OPEN, WINDOW_CLOSED };

/* What to trace, shared by all vCPUs (--trace-start/stop, filters). */
struct trace_config {
    bool have_start, have_stop, have_cr3;
    uint64_t start, stop;       /* linear addresses of the window's triggers */
    uint64_t cr3;               /* --cr3: page-table base to trace (bits 12..51) */
    uint64_t max_branches;      /* 0: no limit; else the total over all vCPUs */
    enum trace_cpl cpl;
    bool verify_flow;
    bool stop_after;            /* end the run when the window closes */
    atomic_int window;          /* enum trace_window */
    _Atomic uint64_t emitted;   /* branch records written, all vCPUs */
    _Atomic uint64_t flow_checked, flow_violations;
};

struct vbts_options;
/* Fill `c` from the options; -1 with the error set (bad trigger, no --trace). */
int trace_config_build(struct trace_config *c, const struct vbts_options *o);

/* Where the trace goes (--trace, repeatable) and how sockets buffer it. */
struct trace_sink_config {
    const char *const *dests;   /* FILE, unix:PATH, tcp:HOST:PORT */
    int ndests;
    uint64_t buffer_size;       /* bytes per vCPU */
    uint64_t buffer_limit;      /* bytes for all vCPUs; 0: a quarter of RAM */
    int overflow;               /* enum vbts_overflow */
    double linger;              /* wrap, drop: seconds the final buffers stay readable */
    bool quiet;
};

struct trace_sink *trace_sink_open(const struct trace_sink_config *c, int ncpus);
/* After the run: serve socket clients until they have the trace (block) or
 * --linger is over.  0, or the signal that cut short an undelivered block drain. */
int trace_sink_finish(struct trace_sink *s);
/* From the signal thread: producers and trace_sink_finish stop waiting. */
void trace_sink_interrupt(struct trace_sink *s, int sig);
/* Returns -1 (error set) if anything could not be written. */
int trace_sink_close(struct trace_sink *s);
bool trace_sink_failed(const struct trace_sink *s);

struct trace_vcpu {
    struct trace_sink *sink;
    struct vcpu *cpu;
    struct vbts_record *buf;
    uint32_t n, cap;
    uint64_t seq;               /* sequence number of buf[0] */
    uint64_t branches;          /* branch records, markers excluded */
    uint64_t steps;             /* single-step exits seen */
    struct branch_pred pred;    /* the instruction the vCPU is about to run */
    bool pred_valid;
    bool stepping;              /* single-step is armed in KVM */
    int event_vector;           /* event the monitor injected, not yet seen, or -1 */
    bool tracing;               /* inside the window: records go to the sink */
    bool bp_armed;              /* hardware breakpoint on the start trigger */
    uint64_t cr3;               /* guest context of the last step */
    uint64_t start_ns;          /* CLOCK_MONOTONIC at this vCPU's START */
    uint64_t flow_to;           /* --verify-flow: where straight-line code resumed */
    bool flow_valid;
    struct kvm_sregs flow_sregs;/* the mode that code ran in */
    bool stopped;
};

struct trace_vcpu *trace_vcpu_new(struct trace_sink *sink, struct vcpu *cpu, uint32_t buf_records);
void trace_vcpu_free(struct trace_vcpu *t);

/* Before the first run: with --trace, emit START and arm single-stepping. */
int trace_vcpu_start(struct trace_vcpu *t);
/* Step exactly while --trace or the guest's own BTS needs it. */
int trace_update_stepping(struct trace_vcpu *t);
/*
 * KVM's debug state for this vCPU, from everything that needs it: the
 * engine's steps and start trigger (DR0), and host-compat's breakpoint
 * (DR1) or its step past it while the engine does not step.  -1, error set.
 */
int trace_update_debug(struct trace_vcpu *t);
/* The engine single-steps this vCPU (its debug exits are the engine's). */
bool trace_is_stepping(const struct trace_vcpu *t);
/* The monitor completed the current instruction (I/O, MMIO exit). */
void trace_note_completion(struct trace_vcpu *t);
/* The monitor injected `vector`: the next step shows its delivery. */
void trace_note_event(struct vcpu *cpu, int vector);
/* Called for every KVM_EXIT_DEBUG: a step, or the start trigger's breakpoint. */
int trace_on_debug(struct trace_vcpu *t);
/* Before each KVM_RUN: follow the window opened or closed by another vCPU. */
int trace_poll(struct trace_vcpu *t);
/* At the end of the run: STOP with its reason if the vCPU is tracing. */
void trace_finish(struct trace_vcpu *t, enum vbts_stop_reason why);
/* Emit STOP with its reason and flush everything (idempotent). */
void trace_vcpu_stop(struct trace_vcpu *t, enum vbts_stop_reason why);

void trace_emit(struct trace_vcpu *t, struct vbts_record r);
void trace_emit_start(struct trace_vcpu *t);

#endif
