/* SPDX-License-Identifier: MIT */
/*
 * Inside the trace layer: the per-vCPU state the engines share, their own
 * (leap_state: the branch engine) and the hosts' (pvm_state, tf_state),
 * each used only by its file.  The engines (step.c, leap.c) reach the host
 * through one seam (backend.h); trace.c wires both to the VM.
 * prefix: trace
 */
#ifndef VBTS_TRACE_ENGINE_H
#define VBTS_TRACE_ENGINE_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"
#include "trace/attrib.h"
#include "trace/branch.h"
#include "trace/gdbg.h"
#include "trace/stretch.h"
#include "trace/trace.h"
#include "vbts/format.h"

struct backend;

struct trace {
    struct vm *vm;
    struct trace_config *cfg;
    struct sink *sink;          /* NULL when not tracing */
    struct guest_bts *gbts;     /* NULL with --no-guest-bts */
    struct trace_vcpu *cpu;     /* per vCPU */
    const struct backend *be;   /* how this host steps and shows events (backend.h) */
    enum trace_engine engine;
    bool block_irq;             /* KVM can hold interrupts back (KVM_GUESTDBG_BLOCKIRQ) */
    bool bp_fire;               /* hardware breakpoints fire in this host's guests */
    bool watch;                 /* ...and catch exceptions at their handlers (VBTS_EXCEPTION_WATCH=0: not) */
    bool start_armed;           /* the start trigger is set up (breakpoints or catch.c) */
    atomic_bool start_user;     /* ...and it is in a user-mode page (kvm_pvm: it cannot fire) */
    trace_record_fn on_record;  /* a debugger's branch trace (trace_record) */
    void *record_ctx;
    /* The start trigger's page hidden from the guest (trace/catch.c). */
    atomic_bool catch_armed;
    pthread_mutex_t catch_lock;
    int catch_passing;          /* vCPUs stepping through the page */
};

/* The branch engine's (leap.c). */
struct leap_state {
    uint64_t stops;             /* stretches run: their breakpoint exits */
    struct stretch s;           /* the stretch in flight */
    bool flight;                /* ...armed in KVM, not yet ended */
    bool armed;                 /* KVM has stretches' breakpoints, not a single-step */
    uint64_t dr[4];             /* ...these */
    int ndr;
    uint64_t let_in_ns;         /* when a step last let interrupts in */
    uint64_t insns;             /* instructions run since */
    struct stores host;         /* guest memory KVM writes at entries (kvm_x86_host_writes)... */
    bool host_known;            /* ...read since the last WRMSR (trace.c tell_loads) */
    uint64_t ends[STRETCH_END_KINDS];   /* stops at a stretch's end, by what ended it */
    uint64_t caught;            /* stops at a handler: an exception of the stretch */
    uint64_t probes;            /* steps that let interrupts in */
    void *mem;                  /* s's instructions and records */
    uint64_t long_from;         /* plans from here ran out of room in a loop: they do not run through loops, */
    unsigned long_skip, long_backoff;   /* ...this many more times (doubling each time they do again) */
};

/* kvm_pvm's (pvm.c, ustep.c). */
struct pvm_state {
    int event_vector;           /* event the monitor raised, not yet seen, or -1 */
    bool ustep;                 /* a user-mode step is armed: TF set where the step needs it */
    uint64_t db_handler;        /* the guest's #DB handler, its breakpoint */
    bool iret_tf;               /* TF set in an IRETQ frame's RFLAGS image... */
    uint64_t iret_at;           /* ...in this byte */
    uint8_t iret_byte;          /* ...which held this */
    bool r11_tf;                /* TF set in R11 for a SYSRET */
    unsigned frames;            /* the IRET stepped and the IRETs it returns to: */
    uint64_t frame[ATTRIB_SKIP_MAX][5];     /* their frames as they were before the step */
};

/* Stock KVM's (tf.c). */
struct tf_state {
    unsigned since_probe;       /* steps since KVM was last asked for a pending event */
    unsigned irq_gap;           /* interruptible steps still owed to the guest */
    bool r11_tf;                /* TF set in R11 for a SYSRET */
    bool probe_soon;            /* IF may have become 1: ask at the next boundary */
    bool probe_next;            /* ...at the one after: an STI's or MOV SS's shadow is on the next */
    bool irq_owed;              /* the guest raised an interrupt or NMI itself (a self-IPI): no gap */
    bool halted;                /* after HLT: nothing runs until an event comes */
    int nwatch;                 /* exception handlers under breakpoints for the step in flight */
    uint64_t watch[4];
    uint32_t watch_vectors[4];  /* ...the vectors (bits 0..31) each serves */
    uint32_t unwatched;         /* vectors the step may raise that no breakpoint covers */
    uint32_t also_watch;        /* vectors of a delivery the CPU makes, the monitor cannot model */
};

struct trace_vcpu {
    struct trace *tr;
    struct vcpu *cpu;
    uint64_t steps;             /* single-step exits seen */
    struct branch_pred pred;    /* the instruction the vCPU is about to run */
    bool pred_valid;
    bool owed;                  /* an exit stopped at the predicted instruction; KVM completes it next run */
    bool stepping;              /* the engine follows the vCPU (KVM steps it, or runs stretches) */
    bool tracing;               /* inside the window: records go to the sink */
    bool recording;             /* records go to on_record too (trace_record) */
    bool bp_armed;              /* hardware breakpoint on the start trigger */
    bool passing;               /* stepping, untraced, through the trigger's page (catch.c) */
    bool started;               /* seen out of the wait for INIT/SIPI (or never in it) */
    bool sipi_wait;             /* ...and seen in it, at the RIP of its reset, not the SIPI's */
    bool halted_off;            /* the step ran a HLT with interrupts off: an NMI or INIT must wake it */
    bool loads_msr;             /* the run before this one stepped a WRMSR or LIDT (tell_loads) */
    unsigned runs_unchecked;    /* ...runs since host-compat last read LSTAR */
    uint64_t cr3;               /* guest context of the last step */
    uint64_t start_ns;          /* monotonic time of this vCPU's START */
    uint64_t flow_to;           /* --verify-flow: where straight-line code resumed */
    bool flow_valid;
    struct kvm_sregs flow_sregs;/* the mode that code ran in */
    struct kvm_regs before_regs;    /* the vCPU before the step in flight */
    struct kvm_sregs before_sregs;
    uint64_t events;            /* event records written (exceptions, interrupts, INT n) */
    struct gdbg_state gd;       /* the guest's own debugging (gdbg.c) */
    struct leap_state leap;
    struct pvm_state pvm;
    struct tf_state tf;
};

/* The registers KVM synced into kvm_run at the last exit. */
static inline void trace_view(const struct trace_vcpu *t, struct cpu_view *v)
{
    struct kvm_run *run = t->cpu->run;
    v->mem = &t->cpu->vm->mem;
    v->regs = &run->s.regs.regs;
    v->sregs = &run->s.regs.sregs;
}

/*
 * The trace ends on this vCPU, in one line: the records so far stand, the
 * file's stop marker says `desync` (the vCPU was found where the engine's
 * prediction does not reach), and vbts exits 125.  Always -1.
 */
int trace_desync(struct trace_vcpu *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
