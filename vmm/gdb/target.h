/* SPDX-License-Identifier: MIT */
/*
 * Inside gdb/: the stub's target made of the VM (target.c), and the state
 * it shares with the connection (gdb.c).  The vCPUs stop between runs,
 * all together; the server thread works on them only while they stand.
 */
#ifndef VBTS_GDB_TARGET_H
#define VBTS_GDB_TARGET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gdb/btrace.h"
#include "gdb/gdb.h"
#include "gdb/stub.h"
#include "x86/debug.h"

struct vm;
struct vcpu;
struct trace;

/* How long the server thread and a stopped vCPU wait before they look again (ms). */
#define TARGET_POLL_MS 20

/* Why a vCPU stops of its own. */
enum why { WHY_NONE, WHY_STEP, WHY_POINT };

/* A breakpoint or watchpoint of gdb's: the same on every vCPU. */
struct point {
    enum stub_point type;
    uint64_t addr;
    unsigned len;
    uint8_t old[8];             /* by stepping: a write watchpoint's bytes before the step */
};

struct gdb_vcpu {
    /* Set by the vCPU's own thread at a debug exit, taken when it stops. */
    enum why why;
    int point;                  /* WHY_POINT: which */
    /* Under the lock. */
    bool paused;
    bool ended;
    enum stub_action act;       /* what gdb asked at the last resume */
    bool dirty;                 /* gdb wrote its registers or memory */
    bool want_record;
    /* The vCPU's own. */
    bool recording;
    bool stepping;              /* KVM steps it for gdb (a step, or points by stepping) */
    bool passing;               /* stepping through the hidden page (hide.c) */
    int8_t dr_point[DEBUG_MAX_BP];  /* the point in each of gdb's debug-register slots */
    struct btrace bt;           /* filled by its thread while it runs */
};

#define GDB_REFUSED_MAX 4
#define GDB_REFUSED_POLLS 20       /* TARGET_POLL_MS each */

struct gdb {
    struct vm *vm;
    struct trace *tr;
    bool wait;
    bool held;                  /* -S and no gdb has resumed the guest yet: it waits for one */
    enum gdb_arch arch;         /* --gdb-arch, or from the image */
    bool said_narrow;           /* this connection heard that i386 cannot show 64-bit code */
    bool dr_fire;               /* the host's guests fire DR0-3; else points by stepping */
    bool pvm;                   /* kvm_pvm: data breakpoints do not fire in emulated kernel code */
    /* hide.c: execution points by a hidden page (under the lock while vCPUs run). */
    bool hide_isolated;         /* gdb took the hideable page */
    bool hide_on;               /* it is gdb's way now */
    int hide_passing;           /* vCPUs stepping through it */
    bool tf;                    /* the host steps with RFLAGS.TF: re-armed before each run */
    int lfd, cfd;
    int refused[GDB_REFUSED_MAX];       /* second gdbs, told so, closing (gdb.c) */
    int refused_polls[GDB_REFUSED_MAX];
    char address[320];
    pthread_t thread;
    bool thread_on;
    atomic_bool done;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_bool stop_req;       /* every vCPU stops before its next run */
    int npaused, alive;
    uint64_t gen;               /* resumes so far */
    bool have_stop;
    struct stub_stop stop;      /* the first reason, once all have stopped */
    struct point points[DEBUG_MAX_BP];
    int npoints;
    struct gdb_vcpu *cpu;

    struct stub stub;
    bool stub_on;
};

/* The stub's operations on the VM. */
extern const struct stub_ops target_ops;

/* gdb's hooks and debug exits on every vCPU.  -1 with the error set. */
int target_install(struct gdb *g);
/* Where gdb's branch trace comes from. */
void target_set_trace(struct gdb *g, struct trace *tr);
/* Guest memory at a linear address through vCPU cpu's page tables: the bytes readable from the start. */
size_t target_mem_read(struct gdb *g, int cpu, uint64_t addr, void *buf, size_t len);
/* On the vCPU's thread: KVM's debug state for what gdb wants of it now. */
int target_step_for_points(struct gdb *g, struct vcpu *cpu);
/* Ask every vCPU to stop (under the lock). */
void target_request_stop(struct gdb *g);
/* Wait on the condition a moment (under the lock). */
void target_wait_a_little(struct gdb *g);
/*
 * gdb leaves: its points and recordings go, and the guest runs on (resume),
 * or stays stopped for the next gdb.
 */
void target_release(struct gdb *g, bool resume);

#endif
