/* SPDX-License-Identifier: MIT */
/*
 * Completing instructions the host could not emulate (see hostcompat_x86.h
 * and docs/host-compat.md).  Software interrupts are completed as the CPU
 * would: RIP moves past the instruction, then the vector is injected with
 * KVM_SET_VCPU_EVENTS, so the guest's own IDT handler runs and sees the
 * return address after the instruction (the kernel's int3 self-test checks
 * exactly that).  fwait, with no x87 exception pending, does nothing and
 * is skipped.  Anything else stays an emulation failure: the run ends there
 * with RIP and the instruction bytes.
 */
#include "hostcompat_x86.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvm.h"
#include "trace.h"

enum { HC_INT3, HC_INTN, HC_FWAIT, HC_RETRY, HC_COUNT };
static const char *const hc_name[HC_COUNT] = { "int3", "int n", "fwait", "patched-away retry" };
static const char *const hc_verb[HC_COUNT] = { "emulated", "emulated", "emulated", "done" };
static atomic_ulong hc_fired[HC_COUNT];

/* Per vCPU: the RIP last retried, so that a real failure is not retried forever. */
#define HC_MAX_VCPUS 64
static uint64_t retried_rip[HC_MAX_VCPUS];

const char *hostcompat_cmdline(void)
{
    /*
     * kvm_pvm (platform notes) fails on `lock cmpxchg16b` and on XRSTOR in
     * FPU init.  KVM_SET_CPUID2 cannot hide CX16/XSAVE there (the guest
     * sees host CPUID), so the kernel is told not to use them.
     */
    if (access("/sys/module/kvm_pvm", F_OK) == 0)
        return "clearcpuid=cx16,popcnt,smap,fsgsbase,invpcid,pcid,rdpid noxsave";
    return NULL;
}

/* The bytes at RIP, read through the guest's page tables. */
static size_t fetch(struct vcpu *cpu, const struct kvm_sregs *sr, uint64_t rip, uint8_t *buf)
{
    struct gmem_paging pg = { sr->cr0, sr->cr3, sr->cr4, sr->efer };
    uint64_t lin = rip + ((sr->efer & (1u << 10)) ? 0 : sr->cs.base);
    if (gmem_read_linear(&cpu->vm->mem, &pg, lin, buf, 2) == GMEM_OK)
        return 2;
    if (gmem_read_linear(&cpu->vm->mem, &pg, lin, buf, 1) == GMEM_OK)
        return 1;
    return 0;
}

static bool inject_soft_interrupt(struct vcpu *cpu, struct kvm_regs *regs, unsigned len,
                                  unsigned vector)
{
    struct kvm_vcpu_events ev;
    if (ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
        return false;
    /* Something is already being delivered: do not stack another event on it. */
    if (ev.exception.injected || ev.interrupt.injected || ev.nmi.injected)
        return false;
    regs->rip += len;
    if (ioctl(cpu->fd, KVM_SET_REGS, regs) < 0)
        return false;
    if (vector < 32) {
        ev.exception.injected = 1;
        ev.exception.nr = (uint8_t)vector;
        ev.exception.has_error_code = 0;
        ev.exception.error_code = 0;
    } else {
        ev.interrupt.injected = 1;
        ev.interrupt.nr = (uint8_t)vector;
        ev.interrupt.soft = 1;
    }
    ev.flags = 0;
    if (ioctl(cpu->fd, KVM_SET_VCPU_EVENTS, &ev) < 0) {
        regs->rip -= len;
        ioctl(cpu->fd, KVM_SET_REGS, regs);
        return false;
    }
    trace_note_event(cpu, (int)vector);
    return true;
}

bool hostcompat_complete(struct vcpu *cpu)
{
    struct kvm_regs regs;
    struct kvm_sregs sr;
    uint8_t b[2];
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &sr) < 0)
        return false;
    size_t n = fetch(cpu, &sr, regs.rip, b);
    uint64_t *last = cpu->index < HC_MAX_VCPUS ? &retried_rip[cpu->index] : NULL;
    bool retried = last && *last == regs.rip;
    if (last)
        *last = 0;
    if (n >= 1 && b[0] == 0xcc) {                   /* int3: #BP, a trap */
        if (!inject_soft_interrupt(cpu, &regs, 1, 3))
            return false;
        atomic_fetch_add(&hc_fired[HC_INT3], 1);
        return true;
    }
    if (n == 2 && b[0] == 0xcd) {                   /* int imm8 */
        if (!inject_soft_interrupt(cpu, &regs, 2, b[1]))
            return false;
        atomic_fetch_add(&hc_fired[HC_INTN], 1);
        return true;
    }
    if (n >= 1 && b[0] == 0x9b) {
        /*
         * fwait: raises #MF only for a pending unmasked x87 exception; the
         * kernel runs it (fpu__drop) with the x87 state freshly saved or
         * initialised, where none is pending, so it is a no-op there.
         */
        regs.rip += 1;
        if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
            return false;
        atomic_fetch_add(&hc_fired[HC_FWAIT], 1);
        return true;
    }
    /*
     * None of those is there (any more): another vCPU patched the code
     * (text_poke_bp replaces an int3 it planted) between the host's fetch
     * and ours.  Running it again fetches the new bytes, as a CPU could
     * have; a second failure at the same RIP is a real one.
     */
    if (n >= 1 && last && !retried) {
        *last = regs.rip;
        atomic_fetch_add(&hc_fired[HC_RETRY], 1);
        return true;
    }
    if (retried)
        atomic_fetch_sub(&hc_fired[HC_RETRY], 1);   /* it was not patched away after all */
    return false;
}

void hostcompat_summary(FILE *f)
{
    char line[160];
    size_t n = 0;
    for (int i = 0; i < HC_COUNT; i++) {
        unsigned long c = atomic_load(&hc_fired[i]);
        if (c && n < sizeof(line))
            n += snprintf(line + n, sizeof(line) - n, "%s%s %s %lu time%s", n ? ", " : "",
                          hc_name[i], hc_verb[i], c, c == 1 ? "" : "s");
    }
    if (n)
        fprintf(f, "vbts: host-compat: %s\n", line);
}
