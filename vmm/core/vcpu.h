/* SPDX-License-Identifier: MIT */
/*
 * vCPU threads and the exit registry.  The loop runs KVM_RUN and hands
 * each exit to the handlers registered for its reason, in the order they
 * registered, until one says it is done; what nobody takes gets the core's
 * default (port I/O to the bus, MMIO to the MMIO bus, HLT, shutdown, ...).
 * Hooks run at fixed points of every vCPU's life.  Modules register during
 * setup, before vcpu_run_all(); the core calls nothing above itself.
 */
#ifndef VBTS_CORE_VCPU_H
#define VBTS_CORE_VCPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct kvm_run;

struct vcpu {
    struct vm *vm;
    int index;
    int fd;
    struct kvm_run *run;
    size_t run_size;
    pthread_t thread;
    atomic_bool thread_started;
    bool probe_ready;           /* KVM_SET_SIGNAL_MASK lets SIG_PROBE through KVM_RUN */
    bool owes;                  /* KVM completes the last exit (I/O, MMIO, MSR) at the next KVM_RUN */
    unsigned long long end_rip; /* where the vCPU stood after its last KVM_RUN (end_known) */
    bool end_known, end_halted;
    void *arch;                 /* the x86 layer's per-vCPU state (x86/kvm_x86.h) */
};

enum vcpu_verdict { VCPU_EXIT_PASS, VCPU_EXIT_DONE };
/* An exit handler: DONE if it dealt with the exit, PASS to let the next one see it. */
typedef enum vcpu_verdict (*vcpu_exit_fn)(struct vcpu *cpu, void *ctx);

enum vcpu_hook {
    VCPU_HOOK_START,            /* each vCPU, on the main thread, before any thread runs */
    VCPU_HOOK_PRE_RUN,          /* on the vCPU thread, before every KVM_RUN */
    VCPU_HOOK_EXIT,             /* on the vCPU thread, at every exit, before its handlers */
    VCPU_HOOK_THREAD_END,       /* on the vCPU thread, after its last KVM_RUN */
    VCPU_NHOOKS
};
/* A hook: -1 ends the run (status 125) with the error it set; at an exit, no handler sees it. */
typedef int (*vcpu_hook_fn)(struct vcpu *cpu, void *ctx);

#define VCPU_MAX_HANDLERS 32
#define VCPU_MAX_HOOKS    8

struct vcpu_registry {
    int nexit;
    struct { uint32_t reason; vcpu_exit_fn fn; void *ctx; } exit[VCPU_MAX_HANDLERS];
    int nhook[VCPU_NHOOKS];
    struct { vcpu_hook_fn fn; void *ctx; } hook[VCPU_NHOOKS][VCPU_MAX_HOOKS];
};

/* -1 with the error set when the registry is full. */
int vcpu_on_exit(struct vm *vm, uint32_t reason, vcpu_exit_fn fn, void *ctx);
int vcpu_on_hook(struct vm *vm, enum vcpu_hook when, vcpu_hook_fn fn, void *ctx);

/*
 * A KVM_RUN that stops before the guest runs an instruction: a signal is
 * pending, so KVM does what it does before every entry (accept a pending
 * interrupt, queue an exception, inject) and then cancels the entry, with
 * the injection put back into the vCPU's events (KVM_GET_VCPU_EVENTS shows
 * it).  Only from the vCPU's own thread, and not while KVM owes the vCPU
 * the completion of an I/O, MMIO or MSR exit (that would run now).
 * 0, or -1 with the error set.
 */
int vcpu_probe(struct vcpu *cpu);

/*
 * Let KVM finish what the last exit owes (an IN's register, an MMIO
 * read's, the rest of an emulated instruction) without running the guest,
 * so that the registers are whole: for a debugger that stops the vCPU
 * between exits.  An exit that comes instead is handed to its handlers.
 * 0, or -1 with the error set.
 */
int vcpu_complete(struct vcpu *cpu);

/* Hand the exit in cpu->run to its handlers, or to the core's default. */
void vcpu_dispatch_exit(struct vcpu *cpu);

/* Run every vCPU on its own thread until the VM ends; returns the exit status. */
int vcpu_run_all(struct vm *vm);
/*
 * Where the vCPUs stood when their threads ended, for a run a signal
 * ended: "vCPU 0 at rip=0x... in f+0x12, vCPU 1 halted at rip=0x...".
 */
void vcpu_where(const struct vm *vm, char *buf, size_t len);

#endif
