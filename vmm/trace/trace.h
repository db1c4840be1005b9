/* SPDX-License-Identifier: MIT */
/*
 * vbts's own branch trace: what to trace (the window, filters), and the
 * engine that records every branch of every vCPU into a sink
 * (export/sink.h).  The same engine feeds guest BTS (guest_bts/), so it
 * steps while either needs it.
 */
#ifndef VBTS_TRACE_TRACE_H
#define VBTS_TRACE_TRACE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct vm;
struct sink;
struct guest_bts;
struct vcpu;

/* How the engine moves: an exit per instruction, or per branch (docs/engine.md). */
enum trace_engine { TRACE_ENGINE_STEP, TRACE_ENGINE_BRANCH };

enum trace_cpl { TRACE_CPL_ALL, TRACE_CPL_KERNEL, TRACE_CPL_USER };
enum trace_window { WINDOW_WAITING, WINDOW_OPEN, WINDOW_CLOSED };

/* What the command line asked for; trace_config_build resolves it. */
struct trace_options {
    bool trace;                 /* --trace given */
    const char *symbols;
    const char *start, *stop;   /* ADDR or SYMBOL */
    uint64_t max_branches;
    int cpl;                    /* enum trace_cpl */
    bool have_cr3;
    bool cr3_start;             /* --cr3 start: the CR3 the window opens in */
    uint64_t cr3;
    bool verify_flow;
    bool stop_after;
};

/* What to trace, shared by all vCPUs (--trace-start/stop, filters). */
struct trace_config {
    bool have_start, have_stop, have_cr3;
    uint64_t start, stop;       /* linear addresses of the window's triggers */
    uint64_t cr3;               /* --cr3: page-table base to trace (bits 12..51) */
    bool cr3_start;             /* --cr3 start: start_cr3 is the base */
    _Atomic uint64_t start_cr3; /* the opening vCPU's CR3 bits 12..51, | 1 once set */
    uint64_t max_branches;      /* 0: no limit; else the total over all vCPUs */
    enum trace_cpl cpl;
    bool verify_flow;
    bool stop_after;            /* end the run when the window closes */
    atomic_int window;          /* enum trace_window */
    _Atomic uint64_t emitted;   /* branch records written, all vCPUs */
    _Atomic uint64_t flow_checked, flow_violations;
};

/* Fill `c`; -1 with the error set (bad trigger, a filter without --trace). */
int trace_config_build(struct trace_config *c, const struct trace_options *o);

struct trace;

/*
 * The engine on every vCPU of the VM (hooks, debug exits, event and
 * guest-BTS notifications), whether or not --trace is given: guest BTS
 * needs its steps too.  gbts may be NULL (--no-guest-bts).
 */
struct trace *trace_install(struct vm *vm, struct trace_config *c, struct guest_bts *gbts);
/* A third consumer of records: a debugger's branch trace of one vCPU. */
typedef void (*trace_record_fn)(void *ctx, int cpu, uint64_t from, uint64_t to);
void trace_on_record(struct trace *t, trace_record_fn fn, void *ctx);
/*
 * On the vCPU's own thread, between runs: every branch of this vCPU goes
 * to the listener from now on (or no longer), whatever the window and its
 * filters; the engine steps the vCPU while it does.  -1 with the error set.
 */
int trace_record(struct trace *t, struct vcpu *cpu, bool on);
/*
 * On the vCPU's own thread, between runs: a debugger stops the vCPU, and
 * reads the records of what ran up to here (a stretch in flight ends at
 * RIP).  -1 with the error set if the trace ended there.
 */
int trace_pause(struct trace *t, struct vcpu *cpu);
/*
 * On the vCPU's own thread, between runs: a debugger changed its registers
 * or memory.  The registers kvm_run holds are read again (what every
 * exit handler reads), and the instruction the engine foresaw, which may
 * not be the one that runs, is predicted again.  -1 with the error set.
 */
int trace_resync(struct trace *t, struct vcpu *cpu);

/* The engine steps this vCPU now (its window, guest BTS, or a recording). */
bool trace_steps(const struct trace *t, const struct vcpu *cpu);
/* --trace is given: the engine may start stepping any vCPU when the window opens. */
bool trace_writes(const struct trace *t);

/*
 * The engine for this host: `asked` (--engine), or -1 for the fastest one
 * that is exact here.  -1 with the error set if the host cannot run the
 * one asked for.  Before the vCPUs start.
 */
int trace_set_engine(struct trace *t, int asked);
const char *trace_engine_name(const struct trace *t);

/*
 * Why the start trigger could not open the window, where the engine knows:
 * a user-mode page on a host that fires no breakpoints there.  NULL if not.
 */
const char *trace_start_unreachable(const struct trace *t);

/* Where records go (--trace); before the vCPUs start. */
void trace_set_sink(struct trace *t, struct sink *s);
/* Branch records written and the engine's exits (steps and stretches), all vCPUs. */
void trace_totals(const struct trace *t, uint64_t *branches, uint64_t *exits);
/*
 * The same exits by cause, all vCPUs, as "N jcc, N ret, ..., N step":
 * the stretches' ends by what ended them (trace/stretch.h), exceptions
 * caught at their handlers, steps that let interrupts in, other steps.
 */
void trace_exit_causes(const struct trace *t, char *buf, size_t len);
void trace_free(struct trace *t);

#endif
