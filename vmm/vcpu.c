/* SPDX-License-Identifier: MIT */
/* vCPU threads: KVM_RUN and the exits this monitor handles. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "hostcompat_x86.h"
#include "iobus.h"
#include "kvm.h"
#include "trace.h"
#include "vbts/symbols.h"

#define SIG_KICK SIGUSR1

void vm_request_end(struct vm *vm, enum vm_end why, int status, const char *fmt, ...)
{
    pthread_mutex_lock(&vm->end_lock);
    if (atomic_load(&vm->end) == VM_RUNNING) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(vm->end_msg, sizeof(vm->end_msg), fmt, ap);
        va_end(ap);
        vm->exit_status = status;
        atomic_store(&vm->end, why);
        /* Kick the others out of KVM_RUN; a thread may not have started yet. */
        for (int i = 0; i < vm->ncpus; i++) {
            vm->vcpus[i].run->immediate_exit = 1;
            if (vm->vcpus[i].thread && !pthread_equal(vm->vcpus[i].thread, pthread_self()))
                pthread_kill(vm->vcpus[i].thread, SIG_KICK);
        }
    }
    pthread_mutex_unlock(&vm->end_lock);
}

void vm_kick_others(struct vm *vm)
{
    for (int i = 0; i < vm->ncpus; i++) {
        if (!vm->vcpus[i].thread || pthread_equal(vm->vcpus[i].thread, pthread_self()))
            continue;
        vm->vcpus[i].run->immediate_exit = 1;
        pthread_kill(vm->vcpus[i].thread, SIG_KICK);
    }
}

static enum vbts_stop_reason stop_reason(enum vm_end e)
{
    switch (e) {
    case VM_END_HALT:
    case VM_END_DEBUG_EXIT: return VBTS_STOP_GUEST_EXIT;
    case VM_END_CRASH: return VBTS_STOP_GUEST_CRASH;
    case VM_END_SIGNAL: return VBTS_STOP_INTERRUPTED;
    case VM_END_TRACE_DONE: return VBTS_STOP_LIMIT;
    default: return VBTS_STOP_ERROR;
    }
}

static void crash(struct vcpu *cpu, const char *cause)
{
    struct kvm_regs regs;
    unsigned long long rip = 0;
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) == 0)
        rip = regs.rip;
    vm_request_end(cpu->vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                   "guest %s on vCPU %d at rip=0x%llx", cause, cpu->index, rip);
}

static void internal_error(struct vcpu *cpu)
{
    struct kvm_run *run = cpu->run;
    /* Linux guests: an instruction this host cannot emulate may be completed here. */
    if (cpu->vm->hostcompat && run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION &&
        hostcompat_complete(cpu))
        return;
    char bytes[128] = "";
    size_t n = 0;
    const char *what = run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION
                           ? "instruction the host cannot emulate"
                           : "KVM internal error";
    /* For emulation failures data[] holds the instruction bytes (platform notes). */
    if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION && run->internal.ndata >= 2) {
        unsigned len = run->internal.data[1] & 0xff;
        if (len > 15)
            len = 15;
        const uint8_t *ib = (const uint8_t *)&run->internal.data[2];
        for (unsigned i = 0; i < len && 2 + i / 8 < run->internal.ndata && n + 4 < sizeof(bytes); i++)
            n += snprintf(bytes + n, sizeof(bytes) - n, "%s%02x", i ? " " : " (bytes ", ib[i]);
        if (n)
            snprintf(bytes + n, sizeof(bytes) - n, ")");
    }
    struct kvm_regs regs;
    unsigned long long rip = 0;
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) == 0)
        rip = regs.rip;
    /* With --symbols, say where in the guest: " in func+0x12". */
    char sym[160] = "";
    uint64_t off;
    const char *name = cpu->vm->syms ? vbts_symtab_lookup(cpu->vm->syms, rip, &off) : NULL;
    if (name)
        snprintf(sym, sizeof(sym), " in %s+0x%llx", name, (unsigned long long)off);
    vm_request_end(cpu->vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                   "guest stopped: %s on vCPU %d at rip=0x%llx%s (suberror %u)%s", what,
                   cpu->index, rip, sym, run->internal.suberror, bytes);
}

static void handle_io(struct vcpu *cpu)
{
    struct kvm_run *run = cpu->run;
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    int size = run->io.size;
    /* KVM owns these values, but a bogus offset must not send us off the page. */
    if (run->io.data_offset + (uint64_t)size * run->io.count > cpu->run_size || size > 4)
        return;
    for (uint32_t i = 0; i < run->io.count; i++, data += size)
        iobus_access(cpu->vm->io, cpu, run->io.port, run->io.direction == KVM_EXIT_IO_OUT,
                     data, size);
}

static void *vcpu_thread(void *arg)
{
    struct vcpu *cpu = arg;
    struct vm *vm = cpu->vm;
    struct kvm_run *run = cpu->run;

    while (!vm_ending(vm)) {
        if (trace_poll(cpu->trace) < 0) {
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", vbts_last_error());
            break;
        }
        lapic_inject_pending(cpu);
        if (vm->hostcompat)
            hostcompat_before_run(cpu);
        if (ioctl(cpu->fd, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                run->immediate_exit = 0;
                continue;
            }
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "KVM_RUN on vCPU %d: %s",
                           cpu->index, strerror(errno));
            break;
        }
        switch (run->exit_reason) {
        case KVM_EXIT_IO:
            handle_io(cpu);
            trace_note_completion(cpu->trace);
            break;
        case KVM_EXIT_MMIO:
            trace_note_completion(cpu->trace);
            if (lapic_mmio(cpu, run->mmio.phys_addr, run->mmio.data,
                           run->mmio.len > 8 ? 8 : run->mmio.len, run->mmio.is_write))
                break;
            /* Nothing else there: reads see all ones, writes vanish, as on an empty bus. */
            if (!run->mmio.is_write)
                memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
            break;
        case KVM_EXIT_DEBUG:
            if (vm->hostcompat && hostcompat_debug(cpu))
                break;
            trace_on_debug(cpu->trace);
            break;
        case KVM_EXIT_X86_RDMSR:
        {
            uint64_t v = 0;
            run->msr.error = !guest_bts_rdmsr(cpu, run->msr.index, &v);
            run->msr.data = v;
            break;
        }
        case KVM_EXIT_X86_WRMSR:
            run->msr.error = !guest_bts_wrmsr(cpu, run->msr.index, run->msr.data);
            if (trace_update_stepping(cpu->trace) < 0)
                vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", vbts_last_error());
            break;
        case KVM_EXIT_IRQ_WINDOW_OPEN:
            break;
        case KVM_EXIT_HLT:
            vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest halted");
            break;
        case KVM_EXIT_SHUTDOWN:
            crash(cpu, "triple fault (KVM_EXIT_SHUTDOWN)");
            break;
        case KVM_EXIT_SYSTEM_EVENT:
            vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest powered off or reset");
            break;
        case KVM_EXIT_INTERNAL_ERROR:
            internal_error(cpu);
            break;
        case KVM_EXIT_FAIL_ENTRY:
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                           "KVM_RUN failed to enter vCPU %d (hardware reason 0x%llx)", cpu->index,
                           (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
            break;
        default:
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                           "unhandled KVM exit %u on vCPU %d", run->exit_reason, cpu->index);
            break;
        }
    }
    trace_finish(cpu->trace, stop_reason(atomic_load(&vm->end)));
    return NULL;
}

static void kick(int sig)
{
    (void)sig;
}

int vcpu_run_all(struct vm *vm)
{
    struct sigaction sa = { .sa_handler = kick };
    sigemptyset(&sa.sa_mask);
    sigaction(SIG_KICK, &sa, NULL);  /* no SA_RESTART: KVM_RUN returns EINTR */

    for (int i = 0; i < vm->ncpus; i++) {
        struct vcpu *cpu = &vm->vcpus[i];
        if (trace_vcpu_start(cpu->trace) < 0) {
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", vbts_last_error());
            return VBTS_EXIT_MONITOR;
        }
    }
    for (int i = 0; i < vm->ncpus; i++) {
        int e = pthread_create(&vm->vcpus[i].thread, NULL, vcpu_thread, &vm->vcpus[i]);
        if (e) {
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "cannot start vCPU thread: %s",
                           strerror(e));
            for (int j = 0; j < i; j++)
                pthread_join(vm->vcpus[j].thread, NULL);
            return VBTS_EXIT_MONITOR;
        }
    }
    for (int i = 0; i < vm->ncpus; i++)
        pthread_join(vm->vcpus[i].thread, NULL);
    return vm->exit_status;
}
