/* SPDX-License-Identifier: MIT */
/*
 * The virtual machine as the core sees it: KVM handles, guest RAM, the
 * vCPUs, the I/O and MMIO buses, the exit registry, and how the run ends.
 * Everything above the core (x86, devices, machines, tracing) keeps its
 * own state and reaches the core through registration (core/vcpu.h) and
 * the guest-event callback below.
 */
#ifndef VBTS_CORE_VM_H
#define VBTS_CORE_VM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/gmem.h"
#include "core/iobus.h"
#include "core/mmio.h"
#include "core/vcpu.h"

/* Exit statuses, the monitor's contract with scripts (README). */
#define VBTS_EXIT_OK          0
#define VBTS_EXIT_GUEST_CRASH 2
#define VBTS_EXIT_MONITOR     125

struct vbts_symtab;

enum vm_end {
    VM_RUNNING = 0,
    VM_END_HALT,        /* HLT with nothing to wake the vCPU, or power-off */
    VM_END_DEBUG_EXIT,  /* guest wrote the debug-exit port */
    VM_END_CRASH,       /* triple fault */
    VM_END_HOST,        /* an instruction the host cannot run (emulation failure) */
    VM_END_MONITOR,     /* the monitor failed or cannot go on */
    VM_END_SIGNAL,      /* SIGINT/SIGTERM */
    VM_END_TRACE_DONE,  /* --stop-after-trace: the trace window closed */
};

/* What a device signals; the machine decides what it means for the run. */
enum vm_guest_event { VM_GUEST_POWEROFF, VM_GUEST_RESET };
typedef void (*vm_guest_event_fn)(struct vm *vm, enum vm_guest_event ev, const char *how,
                                  void *ctx);

/* Where the loader put guest code: it runs at linear `lin`, from guest-physical `gpa`. */
struct vm_image {
    uint64_t lin, gpa, len;
};
#define VM_MAX_IMAGE 8

/* A RAM page with a memory slot of its own, which can be taken from the guest (core/kvm.c). */
struct vm_hideable {
    bool on;
    bool hidden;
    uint64_t gpa;
    struct mmio_device dev;     /* serves the guest's reads and writes while it is hidden */
};

struct vm {
    int kvm_fd;
    int vm_fd;
    struct gmem mem;
    int ncpus;
    struct vcpu *vcpus;
    struct iobus io;
    struct mmio_bus mmio;
    const struct vbts_symtab *syms; /* --symbols, to name RIP when the guest stops */
    void *arch;                     /* the x86 layer's VM state (x86/kvm_x86.h) */
    struct vcpu_registry reg;       /* exit handlers and hooks (core/vcpu.h) */
    vm_guest_event_fn on_guest_event;
    void *guest_event_ctx;
    /*
     * The instruction at the vCPU's RIP, read through the guest's page
     * tables by the arch layer: its length, or 0.  The core names the
     * instruction a failure stopped at with it, not with the bytes KVM
     * reports (kvm_pvm's are those of another instruction).
     */
    size_t (*insn_at)(struct vcpu *cpu, uint8_t *buf, size_t len);
    struct vm_image image[VM_MAX_IMAGE];    /* filled by the machine's loader */
    int nimage;
    struct vm_hideable hide;

    /* First end wins; later ones are consequences of it. */
    pthread_mutex_t end_lock;
    atomic_int end;
    int exit_status;
    char end_msg[VBTS_MAX_MSG];
};

void vm_init(struct vm *vm);
void vm_fini(struct vm *vm);

/* Records why the run ends (first caller wins) and stops every vCPU. */
void vm_request_end(struct vm *vm, enum vm_end why, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Make every vCPU but the caller leave KVM_RUN and look at shared state. */
void vm_kick_others(struct vm *vm);

/* The loader placed code for linear [lin, lin+len) at guest-physical gpa. */
int vm_image_add(struct vm *vm, uint64_t lin, uint64_t gpa, uint64_t len);
/* The guest-physical address the loader placed linear `lin` at: false if none. */
bool vm_image_gpa(const struct vm *vm, uint64_t lin, uint64_t *gpa);

/* A device reports power-off or reset: the machine's callback, or the run ends (0). */
void vm_guest_event(struct vm *vm, enum vm_guest_event ev, const char *how);

static inline bool vm_ending(struct vm *vm)
{
    return atomic_load_explicit(&vm->end, memory_order_relaxed) != VM_RUNNING;
}

#endif
