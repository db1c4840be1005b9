/* SPDX-License-Identifier: MIT */
/*
 * Inside the trace layer: the engine's per-vCPU state, the window and
 * records (window.c), and the single-step engine (step.c).  trace.c wires
 * both to the VM.
 */
#ifndef VBTS_TRACE_ENGINE_H
#define VBTS_TRACE_ENGINE_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/vm.h"
#include "trace/branch.h"
#include "trace/stretch.h"
#include "trace/trace.h"
#include "vbts/format.h"

struct trace {
    struct vm *vm;
    struct trace_config *cfg;
    struct sink *sink;          /* NULL when not tracing */
    struct guest_bts *gbts;     /* NULL with --no-guest-bts */
    struct trace_vcpu *cpu;     /* per vCPU */
    bool tf;                    /* the host steps with RFLAGS.TF (trace/tf.c) */
    enum trace_engine engine;
    bool block_irq;             /* ... and can hold interrupts back while it does */
    bool start_armed;           /* the start trigger is set up (breakpoints or catch.c) */
    atomic_bool start_user;     /* ...and it is in a user-mode page (kvm_pvm: it cannot fire) */
    trace_record_fn on_record;  /* a debugger's branch trace (trace_record) */
    void *record_ctx;
    /* The start trigger's page hidden from the guest (trace/catch.c). */
    atomic_bool catch_armed;
    pthread_mutex_t catch_lock;
    int catch_passing;          /* vCPUs stepping through the page */
};

struct trace_vcpu {
    struct trace *tr;
    struct vcpu *cpu;
    uint64_t steps;             /* single-step exits seen */
    uint64_t leaps;             /* stretches run (trace/leap.c): their breakpoint exits */
    struct stretch leap;        /* the stretch in flight */
    bool leaping;               /* ...armed in KVM, not yet ended */
    bool kvm_leap;              /* KVM has stretches' breakpoints, not a single-step */
    uint64_t dr[4];             /* ...these */
    int ndr;
    uint64_t let_in_ns;         /* when a step last let interrupts in */
    struct branch_pred pred;    /* the instruction the vCPU is about to run */
    bool pred_valid;
    bool stepping;              /* single-step is armed in KVM */
    int event_vector;           /* event the monitor raised, not yet seen, or -1 */
    bool tracing;               /* inside the window: records go to the sink */
    bool recording;             /* records go to on_record too (trace_record) */
    bool bp_armed;              /* hardware breakpoint on the start trigger */
    bool passing;               /* stepping, untraced, through the trigger's page (catch.c) */
    uint64_t cr3;               /* guest context of the last step */
    uint64_t start_ns;          /* monotonic time of this vCPU's START */
    uint64_t flow_to;           /* --verify-flow: where straight-line code resumed */
    bool flow_valid;
    struct kvm_sregs flow_sregs;/* the mode that code ran in */
    struct kvm_regs before_regs;    /* the vCPU before the step in flight */
    struct kvm_sregs before_sregs;
    /* Hosts that step with RFLAGS.TF (trace/tf.c). */
    unsigned since_probe;       /* steps since KVM was last asked for a pending event */
    unsigned irq_gap;           /* interruptible steps still owed to the guest (tf.c) */
    bool r11_tf;                /* TF set in R11 for a SYSRET (tf.c, ustep.c) */
    /* kvm_pvm's user-mode steps (trace/ustep.c). */
    bool ustep;                 /* one is armed: TF set where the step needs it */
    uint64_t db_handler;        /* the guest's #DB handler, its breakpoint */
    bool iret_tf;               /* TF set in an IRETQ frame's RFLAGS image... */
    uint64_t iret_at;           /* ...in this byte */
    uint8_t iret_byte;          /* ...which held this */
    bool probe_soon;            /* IF may have become 1: ask at the next boundary */
    bool halted;                /* after HLT: nothing runs until an event comes */
};

/* The registers KVM synced into kvm_run at the last exit. */
static inline void trace_view(const struct trace_vcpu *t, struct cpu_view *v)
{
    struct kvm_run *run = t->cpu->run;
    v->mem = &t->cpu->vm->mem;
    v->regs = &run->s.regs.regs;
    v->sregs = &run->s.regs.sregs;
}

#endif
