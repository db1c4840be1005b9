/* SPDX-License-Identifier: MIT */
#include "guest_bts/guest_bts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "x86/arch.h"
#include "x86/cpu.h"
#include "x86/event.h"

struct guest_bts {
    void (*raise_pmi)(void *ctx, struct vcpu *cpu);     /* NULL: no PMI on this machine */
    void *pmi_ctx;
    int (*changed)(void *ctx, struct vcpu *cpu);
    void *changed_ctx;
    int ncpus;
    struct guest_bts_cpu cpu[];
};

/* DS save area: BTS fields, as 64-bit (IA-32e) or 32-bit quantities. */
enum { DS_BTS_BASE, DS_BTS_INDEX, DS_BTS_MAX, DS_BTS_THRESHOLD, DS_NFIELDS };

static int install_filter(struct vm *vm)
{
    if (!arch_vm(vm)->user_msr)
        return error_fail("this host's KVM lacks KVM_CAP_X86_USER_SPACE_MSR: guest BTS cannot be "
                          "virtualised (--no-guest-bts runs without it)");
    int vm_fd = vm->vm_fd;
    /* A clear bit in a range's bitmap denies the access: KVM exits to us. */
    static uint8_t deny = 0;
    struct kvm_msr_filter f = {
        .flags = KVM_MSR_FILTER_DEFAULT_ALLOW,
        .ranges = {
            { .flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, .nmsrs = 1,
              .base = MSR_IA32_MISC_ENABLE, .bitmap = &deny },
            { .flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, .nmsrs = 1,
              .base = MSR_IA32_DEBUGCTL, .bitmap = &deny },
            { .flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, .nmsrs = 1,
              .base = MSR_IA32_DS_AREA, .bitmap = &deny },
        },
    };
    if (ioctl(vm_fd, KVM_X86_SET_MSR_FILTER, &f) < 0)
        return error_fail_errno("KVM_X86_SET_MSR_FILTER");
    return 0;
}

static bool canonical(uint64_t a)
{
    return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

bool guest_bts_rdmsr(struct guest_bts *gb, const struct vcpu *cpu, uint32_t index, uint64_t *value)
{
    const struct guest_bts_cpu *g = &gb->cpu[cpu->index];
    switch (index) {
    case MSR_IA32_DEBUGCTL: *value = g->debugctl; return true;
    case MSR_IA32_DS_AREA: *value = g->ds_area; return true;
    case MSR_IA32_MISC_ENABLE: *value = g->misc_enable; return true;
    default: return false;
    }
}

bool guest_bts_wrmsr(struct guest_bts *gb, const struct vcpu *cpu, uint32_t index, uint64_t value)
{
    struct guest_bts_cpu *g = &gb->cpu[cpu->index];
    switch (index) {
    case MSR_IA32_DEBUGCTL:
        if (value & ~DEBUGCTL_VALID)
            return false;
        g->debugctl = value;
        return true;
    case MSR_IA32_DS_AREA:
        if (!canonical(value))
            return false;
        g->ds_area = value;
        return true;
    case MSR_IA32_MISC_ENABLE:
        /* The availability bits are read-only; the rest reads back. */
        g->misc_enable = (value & ~(MISC_ENABLE_BTS_UNAVAIL | MISC_ENABLE_PEBS_UNAVAIL)) |
                         MISC_ENABLE_PEBS_UNAVAIL;
        return true;
    default:
        return false;
    }
}

static void inject_fault(struct vcpu *cpu, unsigned vector, uint32_t error, uint64_t cr2)
{
    struct event ev = { .kind = EVENT_EXCEPTION, .vector = (uint8_t)vector, .has_error = true,
                        .error = error, .cr2 = cr2 };
    event_raise(cpu, &ev);  /* a refused event leaves the store lost, as before */
}

/*
 * The DS area or the buffer cannot be written.  A non-present page or a
 * non-canonical address faults as the store would on hardware; an address
 * that is not RAM loses the store, as a write to nothing does.  Either way
 * guest BTS is switched off so that a guest which does not handle the fault
 * is not caught in a loop of faulting branch records.
 */
static void ds_fault(struct guest_bts_cpu *g, struct vcpu *cpu, enum gmem_xlate why,
                     uint64_t addr, bool write)
{
    const char *what;
    g->debugctl &= ~(DEBUGCTL_TR | DEBUGCTL_BTS);
    switch (why) {
    case GMEM_NOT_PRESENT:
        inject_fault(cpu, 14, write ? 2 : 0, addr);
        what = "is not mapped: injected #PF";
        break;
    case GMEM_NON_CANONICAL:
        inject_fault(cpu, 13, 0, 0);
        what = "is not canonical: injected #GP";
        break;
    default:
        what = "is not guest RAM: records dropped";
        break;
    }
    if (!(g->warned & (1u << why)))
        fprintf(stderr, "vbts: vCPU %d: guest DS area or BTS buffer at 0x%llx %s, guest BTS off\n",
                cpu->index, (unsigned long long)addr, what);
    g->warned |= 1u << why;
}

static bool on(const struct guest_bts_cpu *g)
{
    return (g->debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) == (DEBUGCTL_TR | DEBUGCTL_BTS);
}

bool guest_bts_on(const struct guest_bts *gb, const struct vcpu *cpu)
{
    return gb && on(&gb->cpu[cpu->index]);
}

void guest_bts_store(struct guest_bts *gb, struct vcpu *cpu, const struct vbts_record *r, int cpl)
{
    struct guest_bts_cpu *g = &gb->cpu[cpu->index];
    if (!on(g))
        return;
    if ((cpl == 0 && (g->debugctl & DEBUGCTL_BTS_OFF_OS)) ||
        (cpl > 0 && (g->debugctl & DEBUGCTL_BTS_OFF_USR)))
        return;

    struct kvm_sregs *sregs = &cpu->run->s.regs.sregs;
    struct gmem_paging pg;
    cpu_paging(sregs, &pg);
    /*
     * CPUID advertises DTES64, so the 64-bit DS format applies in every
     * mode (SDM: "When DTES64 = 1 ... the structure of the DS save area is
     * shown in Figure 17-8").  Legacy-mode guests see 32-bit linear
     * addresses in 64-bit fields.
     */
    bool wide = sregs->efer & (1ull << 10);
    const unsigned fsz = 8, rsz = 24;
    uint64_t f[DS_NFIELDS] = { 0 }, fault = g->ds_area;
    enum gmem_xlate x;

    for (int i = 0; i < DS_NFIELDS; i++) {
        x = gmem_read_linear(&cpu->vm->mem, &pg, g->ds_area + i * fsz, &f[i], fsz);
        if (x != GMEM_OK) {
            ds_fault(g, cpu, x, g->ds_area + i * fsz, false);
            return;
        }
    }
    if (!wide)
        for (int i = 0; i < DS_NFIELDS; i++)
            f[i] = (uint32_t)f[i];
    uint64_t base = f[DS_BTS_BASE], index = f[DS_BTS_INDEX], max = f[DS_BTS_MAX];
    if (max < base || max - base < rsz)
        return;         /* no room for a single record: nothing to store */
    if (index < base || index > max - rsz) {
        if (g->debugctl & DEBUGCTL_BTINT)
            return;     /* linear buffer full: the record is lost until the guest drains */
        index = base;   /* circular buffer wraps */
    }
    /* Hardware's only defined flag, "predicted", is not modelled: 0. */
    uint64_t rec[3] = { r->from, r->to, 0 };
    x = gmem_write_linear(&cpu->vm->mem, &pg, index, rec, rsz, &fault);
    if (x != GMEM_OK) {
        ds_fault(g, cpu, x, fault, true);
        return;
    }
    index += rsz;
    if (!(g->debugctl & DEBUGCTL_BTINT) && index > max - rsz)
        index = base;
    x = gmem_write_linear(&cpu->vm->mem, &pg, g->ds_area + DS_BTS_INDEX * fsz, &index, fsz, &fault);
    if (x != GMEM_OK) {
        ds_fault(g, cpu, x, fault, true);
        return;
    }
    if ((g->debugctl & DEBUGCTL_BTINT) && index >= f[DS_BTS_THRESHOLD]) {
        if (!g->above_threshold && gb->raise_pmi)
            gb->raise_pmi(gb->pmi_ctx, cpu);
        g->above_threshold = true;
    } else {
        g->above_threshold = false;
    }
}

static enum vcpu_verdict on_rdmsr(struct vcpu *cpu, void *ctx)
{
    struct guest_bts *gb = ctx;
    uint64_t v = 0;
    struct kvm_run *run = cpu->run;
    run->msr.error = !guest_bts_rdmsr(gb, cpu, run->msr.index, &v);
    run->msr.data = v;
    return VCPU_EXIT_DONE;
}

static enum vcpu_verdict on_wrmsr(struct vcpu *cpu, void *ctx)
{
    struct guest_bts *gb = ctx;
    struct kvm_run *run = cpu->run;
    run->msr.error = !guest_bts_wrmsr(gb, cpu, run->msr.index, run->msr.data);
    if (gb->changed && gb->changed(gb->changed_ctx, cpu) < 0)
        vm_request_end(cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
    return VCPU_EXIT_DONE;
}

struct guest_bts *guest_bts_new(int ncpus)
{
    struct guest_bts *gb = calloc(1, sizeof(*gb) + (size_t)ncpus * sizeof(gb->cpu[0]));
    if (!gb) {
        error_fail("out of memory");
        return NULL;
    }
    gb->ncpus = ncpus;
    /* BTS available (bit 11 clear), PEBS not: what a BTS-only CPU reports. */
    for (int i = 0; i < ncpus; i++)
        gb->cpu[i].misc_enable = MISC_ENABLE_FAST_STRINGS | MISC_ENABLE_PERFMON |
                                 MISC_ENABLE_PEBS_UNAVAIL;
    return gb;
}

struct guest_bts *guest_bts_install(struct vm *vm)
{
    struct guest_bts *gb = guest_bts_new(vm->ncpus);
    if (!gb)
        return NULL;
    if (install_filter(vm) < 0 ||
        vcpu_on_exit(vm, KVM_EXIT_X86_RDMSR, on_rdmsr, gb) < 0 ||
        vcpu_on_exit(vm, KVM_EXIT_X86_WRMSR, on_wrmsr, gb) < 0) {
        free(gb);
        return NULL;
    }
    return gb;
}

void guest_bts_free(struct guest_bts *gb)
{
    free(gb);
}

void guest_bts_set_pmi(struct guest_bts *gb, void (*raise_pmi)(void *ctx, struct vcpu *cpu),
                       void *ctx)
{
    gb->raise_pmi = raise_pmi;
    gb->pmi_ctx = ctx;
}

void guest_bts_on_change(struct guest_bts *gb, int (*fn)(void *ctx, struct vcpu *cpu), void *ctx)
{
    gb->changed = fn;
    gb->changed_ctx = ctx;
}
