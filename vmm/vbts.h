/* SPDX-License-Identifier: MIT */
/* Monitor-wide types: the VM, its vCPUs, and error reporting. */
#ifndef VBTS_VMM_H
#define VBTS_VMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_bts.h"
#include "guest_mem.h"
#include "hostcompat_x86.h"
#include "lapic.h"

/* Exit statuses, the monitor's contract with scripts (README, docs/usage.md). */
#define VBTS_EXIT_OK          0
#define VBTS_EXIT_GUEST_CRASH 2
#define VBTS_EXIT_MONITOR     125

#define VBTS_MAX_MSG 512

/*
 * Errors are reported fail-fast with one line naming what failed.  Library
 * code records the line with vbts_fail() and returns -1; the caller that
 * decides the exit status prints it.
 */
int vbts_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vbts_fail_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *vbts_last_error(void);

struct trace_sink;
struct trace_vcpu;
struct trace_config;
struct vbts_symtab;
struct iobus;

enum vm_end {
    VM_RUNNING = 0,
    VM_END_HALT,        /* HLT with nothing to wake the vCPU, or power-off */
    VM_END_DEBUG_EXIT,  /* guest wrote the debug-exit port */
    VM_END_CRASH,       /* triple fault or an instruction KVM could not run */
    VM_END_MONITOR,     /* the monitor failed or cannot go on */
    VM_END_SIGNAL,      /* SIGINT/SIGTERM */
    VM_END_TRACE_DONE,  /* --stop-after-trace: the trace window closed */
};

struct vcpu {
    struct vm *vm;
    int index;
    int fd;
    struct kvm_run *run;
    size_t run_size;
    pthread_t thread;
    struct trace_vcpu *trace;   /* the step recorder, for --trace and guest BTS */
    struct guest_bts gbts;      /* the guest's own BTS MSRs */
    struct lapic lapic;         /* LVT PMI, when KVM has no in-kernel APIC */
    struct hostcompat_vcpu hc;  /* host-compat's breakpoint and retry state */
};

struct vm {
    int kvm_fd;
    int vm_fd;
    struct gmem mem;
    int ncpus;
    struct vcpu *vcpus;
    struct iobus *io;
    struct trace_sink *sink;    /* NULL when not tracing */
    bool guest_bts;             /* guest BTS MSRs are virtualised */
    struct trace_config *tcfg;  /* what to trace; NULL when not tracing */
    /* Linux guests (linux_vm.c): in-kernel irqchip, host-compat, panic watch. */
    bool irqchip;               /* KVM's PIC/IOAPIC/LAPIC/PIT instead of dev_lapic.c */
    bool hostcompat;            /* complete instructions the host cannot emulate */
    const struct vbts_symtab *syms;  /* --symbols, to name RIP when the guest stops */
    atomic_bool guest_panic;    /* the console showed "Kernel panic - not syncing" */
    char panic_line[160];

    /* First end wins; later ones are consequences of it. */
    pthread_mutex_t end_lock;
    atomic_int end;
    int exit_status;
    char end_msg[VBTS_MAX_MSG];
};

/* Records why the run ends (first caller wins) and stops every vCPU. */
void vm_request_end(struct vm *vm, enum vm_end why, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Make every vCPU but the caller leave KVM_RUN and look at shared state. */
void vm_kick_others(struct vm *vm);

static inline bool vm_ending(struct vm *vm)
{
    return atomic_load_explicit(&vm->end, memory_order_relaxed) != VM_RUNNING;
}

#endif
