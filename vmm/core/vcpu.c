/* SPDX-License-Identifier: MIT */
/* vCPU threads: KVM_RUN, the registered exit handlers, the core's defaults. */
#include "core/vcpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "vbts/symbols.h"

#define SIG_KICK SIGUSR1
/* Blocked in vCPU threads, let through KVM_RUN: pending, it makes KVM_RUN return early. */
#define SIG_PROBE SIGUSR2

int vcpu_on_exit(struct vm *vm, uint32_t reason, vcpu_exit_fn fn, void *ctx)
{
    struct vcpu_registry *r = &vm->reg;
    if (r->nexit == VCPU_MAX_HANDLERS)
        return error_fail("too many exit handlers (%d)", VCPU_MAX_HANDLERS);
    r->exit[r->nexit].reason = reason;
    r->exit[r->nexit].fn = fn;
    r->exit[r->nexit].ctx = ctx;
    r->nexit++;
    return 0;
}

int vcpu_on_hook(struct vm *vm, enum vcpu_hook when, vcpu_hook_fn fn, void *ctx)
{
    struct vcpu_registry *r = &vm->reg;
    if (r->nhook[when] == VCPU_MAX_HOOKS)
        return error_fail("too many vCPU hooks (%d)", VCPU_MAX_HOOKS);
    r->hook[when][r->nhook[when]].fn = fn;
    r->hook[when][r->nhook[when]].ctx = ctx;
    r->nhook[when]++;
    return 0;
}

static int run_hooks(struct vcpu *cpu, enum vcpu_hook when)
{
    const struct vcpu_registry *r = &cpu->vm->reg;
    for (int i = 0; i < r->nhook[when]; i++)
        if (r->hook[when][i].fn(cpu, r->hook[when][i].ctx) < 0)
            return -1;
    return 0;
}

static unsigned long long guest_rip(struct vcpu *cpu)
{
    struct kvm_regs regs;
    return ioctl(cpu->fd, KVM_GET_REGS, &regs) == 0 ? regs.rip : 0;
}

/* " in func+0x12" with --symbols, else nothing. */
static void name_rip(struct vcpu *cpu, unsigned long long rip, char *buf, size_t len)
{
    uint64_t off;
    const char *name = cpu->vm->syms ? vbts_symtab_lookup(cpu->vm->syms, rip, &off) : NULL;
    buf[0] = 0;
    if (name)
        snprintf(buf, len, " in %s+0x%llx", name, (unsigned long long)off);
}

static void internal_error(struct vcpu *cpu)
{
    struct kvm_run *run = cpu->run;
    char bytes[128] = "";
    size_t n = 0;
    bool emul = run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION;
    uint8_t insn[15];
    unsigned len = 0;
    const uint8_t *ib = insn;
    if (emul && cpu->vm->insn_at) {
        len = (unsigned)cpu->vm->insn_at(cpu, insn, sizeof(insn));
    } else if (emul && run->internal.ndata >= 2) {
        /* For emulation failures data[] holds the instruction's length and bytes. */
        len = run->internal.data[1] & 0xff;
        if (len > 15)
            len = 15;
        if (len > (run->internal.ndata - 2) * 8)
            len = (unsigned)(run->internal.ndata - 2) * 8;
        ib = (const uint8_t *)&run->internal.data[2];
    }
    for (unsigned i = 0; i < len && n + 4 < sizeof(bytes); i++)
        n += snprintf(bytes + n, sizeof(bytes) - n, "%s%02x", i ? " " : " (bytes ", ib[i]);
    if (n)
        snprintf(bytes + n, sizeof(bytes) - n, ")");
    unsigned long long rip = guest_rip(cpu);
    char sym[160];
    name_rip(cpu, rip, sym, sizeof(sym));
    /* The guest did not crash: the host failed it (a trace stops there, main.c). */
    vm_request_end(cpu->vm, emul ? VM_END_HOST : VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                   "guest stopped: %s on vCPU %d at rip=0x%llx%s (suberror %u)%s",
                   emul ? "instruction the host cannot emulate" : "KVM internal error",
                   cpu->index, rip, sym, run->internal.suberror, bytes);
}

static void port_io(struct vcpu *cpu)
{
    struct kvm_run *run = cpu->run;
    uint8_t *data = (uint8_t *)run + run->io.data_offset;
    int size = run->io.size;
    /* KVM owns these values, but a bogus offset must not send us off the page. */
    if (run->io.data_offset + (uint64_t)size * run->io.count > cpu->run_size || size > 4)
        return;
    for (uint32_t i = 0; i < run->io.count; i++, data += size)
        iobus_access(&cpu->vm->io, cpu, run->io.port, run->io.direction == KVM_EXIT_IO_OUT,
                     data, size);
}

/* What the core does with an exit no registered handler took. */
static void default_exit(struct vcpu *cpu)
{
    struct vm *vm = cpu->vm;
    struct kvm_run *run = cpu->run;
    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        port_io(cpu);
        break;
    case KVM_EXIT_MMIO:
        mmio_access(&vm->mmio, cpu, run->mmio.phys_addr, run->mmio.data, run->mmio.len,
                    run->mmio.is_write);
        break;
    case KVM_EXIT_X86_RDMSR:
    case KVM_EXIT_X86_WRMSR:
        run->msr.error = 1;     /* nobody models it: #GP, as for an MSR the CPU lacks */
        break;
    case KVM_EXIT_DEBUG:
    case KVM_EXIT_IRQ_WINDOW_OPEN:
    case KVM_EXIT_INTR:
        break;
    case KVM_EXIT_HLT:
        vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest halted");
        break;
    case KVM_EXIT_SHUTDOWN:
        vm_request_end(vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                       "guest triple fault (KVM_EXIT_SHUTDOWN) on vCPU %d at rip=0x%llx",
                       cpu->index, guest_rip(cpu));
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

void vcpu_dispatch_exit(struct vcpu *cpu)
{
    const struct vcpu_registry *r = &cpu->vm->reg;
    uint32_t reason = cpu->run->exit_reason;
    if (run_hooks(cpu, VCPU_HOOK_EXIT) < 0) {
        vm_request_end(cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
        return;
    }
    for (int i = 0; i < r->nexit; i++)
        if (r->exit[i].reason == reason && r->exit[i].fn(cpu, r->exit[i].ctx) == VCPU_EXIT_DONE)
            return;
    default_exit(cpu);
}

static bool owes(uint32_t reason)
{
    return reason == KVM_EXIT_IO || reason == KVM_EXIT_MMIO || reason == KVM_EXIT_X86_RDMSR ||
           reason == KVM_EXIT_X86_WRMSR;
}

static void *vcpu_thread(void *arg)
{
    struct vcpu *cpu = arg;
    struct vm *vm = cpu->vm;
    struct kvm_run *run = cpu->run;

    while (!vm_ending(vm)) {
        if (run_hooks(cpu, VCPU_HOOK_PRE_RUN) < 0) {
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
            break;
        }
        if (ioctl(cpu->fd, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                run->immediate_exit = 0;
                continue;
            }
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "KVM_RUN on vCPU %d: %s",
                           cpu->index, strerror(errno));
            break;
        }
        cpu->owes = owes(run->exit_reason);
        vcpu_dispatch_exit(cpu);
    }
    if (run_hooks(cpu, VCPU_HOOK_THREAD_END) < 0)
        vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
    struct kvm_regs regs;
    struct kvm_mp_state mp;
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) == 0) {
        cpu->end_rip = regs.rip;
        cpu->end_halted = ioctl(cpu->fd, KVM_GET_MP_STATE, &mp) == 0 && mp.mp_state == KVM_MP_STATE_HALTED;
        cpu->end_known = true;
    }
    return NULL;
}

void vcpu_where(const struct vm *vm, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < vm->ncpus && n < len; i++) {
        struct vcpu *cpu = &vm->vcpus[i];
        if (!cpu->end_known)
            continue;
        char sym[160];
        name_rip(cpu, cpu->end_rip, sym, sizeof(sym));
        n += (size_t)snprintf(buf + n, len - n, "%svCPU %d %sat rip=0x%llx%s", n ? ", " : "", i,
                              cpu->end_halted ? "halted " : "", cpu->end_rip, sym);
    }
}

static int probe_setup(struct vcpu *cpu)
{
    sigset_t block, during;
    sigemptyset(&block);
    sigaddset(&block, SIG_PROBE);
    if (pthread_sigmask(SIG_BLOCK, &block, &during) != 0)
        return error_fail("cannot block the probe signal");
    sigdelset(&during, SIG_PROBE);
    /* The kernel's sigset is 8 bytes on x86-64, not glibc's 128. */
    struct {
        struct kvm_signal_mask m;
        uint8_t set[8];
    } km = { .m.len = 8 };
    memcpy(km.set, &during, 8);
    if (ioctl(cpu->fd, KVM_SET_SIGNAL_MASK, &km) < 0)
        return error_fail_errno("KVM_SET_SIGNAL_MASK");
    cpu->probe_ready = true;
    return 0;
}

/* KVM_RUN with SIG_PROBE pending: KVM_RUN's result, errno in *err. */
static int probe_run(struct vcpu *cpu, int *err)
{
    pthread_kill(pthread_self(), SIG_PROBE);
    int r = ioctl(cpu->fd, KVM_RUN, 0);
    *err = errno;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIG_PROBE);
    static const struct timespec now = { 0, 0 };
    while (sigtimedwait(&set, NULL, &now) < 0 && errno == EINTR)
        ;
    return r;
}

int vcpu_probe(struct vcpu *cpu)
{
    if (!cpu->probe_ready && probe_setup(cpu) < 0)
        return -1;
    int e;
    int r = probe_run(cpu, &e);
    /* immediate_exit stays as it is: a kick to end the run must still end it. */
    if (r == 0)
        return error_fail("KVM_RUN probe on vCPU %d ran the guest (exit %u)", cpu->index,
                          cpu->run->exit_reason);
    if (e != EINTR && e != EAGAIN) {
        errno = e;
        return error_fail_errno("KVM_RUN probe on vCPU %d", cpu->index);
    }
    return 0;
}

int vcpu_complete(struct vcpu *cpu)
{
    if (!cpu->owes)
        return 0;
    if (!cpu->probe_ready && probe_setup(cpu) < 0)
        return -1;
    /* A kick's immediate_exit would return before KVM completes anything. */
    uint8_t ie = cpu->run->immediate_exit;
    cpu->run->immediate_exit = 0;
    int e;
    int r = probe_run(cpu, &e);
    cpu->run->immediate_exit |= ie;
    if (r == 0) {
        /* KVM needed another exit to finish (a split MMIO access): serve it. */
        cpu->owes = owes(cpu->run->exit_reason);
        vcpu_dispatch_exit(cpu);
        return 0;
    }
    if (e != EINTR && e != EAGAIN) {
        errno = e;
        return error_fail_errno("KVM_RUN (completing an exit) on vCPU %d", cpu->index);
    }
    cpu->owes = false;
    return 0;
}

static void on_kick(int sig)
{
    (void)sig;
}

int vcpu_run_all(struct vm *vm)
{
    struct sigaction sa = { .sa_handler = on_kick };
    sigemptyset(&sa.sa_mask);
    sigaction(SIG_KICK, &sa, NULL);  /* no SA_RESTART: KVM_RUN returns EINTR */

    for (int i = 0; i < vm->ncpus; i++) {
        if (run_hooks(&vm->vcpus[i], VCPU_HOOK_START) < 0) {
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
            return VBTS_EXIT_MONITOR;
        }
    }
    for (int i = 0; i < vm->ncpus; i++) {
        struct vcpu *cpu = &vm->vcpus[i];
        int e = pthread_create(&cpu->thread, NULL, vcpu_thread, cpu);
        if (e) {
            vm_request_end(vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "cannot start vCPU thread: %s",
                           strerror(e));
            for (int j = 0; j < i; j++)
                pthread_join(vm->vcpus[j].thread, NULL);
            return VBTS_EXIT_MONITOR;
        }
        atomic_store(&cpu->thread_started, true);
    }
    for (int i = 0; i < vm->ncpus; i++)
        pthread_join(vm->vcpus[i].thread, NULL);
    return vm->exit_status;
}
