/* SPDX-License-Identifier: MIT */
#include "x86/kvm_x86.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>
#include <linux/kvm_para.h>

#include "core/error.h"
#include "core/kvm.h"
#include "core/vm.h"
#include "x86/arch.h"
#include "x86/vcpu_state.h"
#include "x86/cpu.h"
#include "x86/host.h"

/* Where KVM may put the real-mode TSS and identity map (VMX needs them). */
#define KVM_TSS_ADDR 0xfffbd000u

/* The guest sees what KVM supports; long mode, for one, needs CPUID to say so. */
static int set_cpuid(struct vm *vm, struct vcpu *cpu)
{
    const struct arch_vm *a = arch_vm(vm);
    int n = 128;
    for (;;) {
        struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->entries[0]));
        if (!c)
            return error_fail("out of memory");
        c->nent = (uint32_t)n;
        if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) < 0) {
            free(c);
            if (errno == E2BIG && n < 4096) {
                n *= 2;
                continue;
            }
            return error_fail_errno("KVM_GET_SUPPORTED_CPUID");
        }
        for (unsigned i = 0; i < c->nent; i++) {
            struct kvm_cpuid_entry2 *e = &c->entries[i];
            /* Leaf 1 EBX[31:24] is the initial APIC ID: one per vCPU. */
            if (e->function == 1) {
                e->ebx = (e->ebx & 0x00ffffffu) | ((uint32_t)cpu->index << 24);
                /*
                 * DS (EDX 21) and DTES64 (ECX 2) announce the guest BTS that
                 * guest_bts/ provides.  Some hosts (kvm_pvm) do not honour
                 * KVM_SET_CPUID2 fully; the MSRs work regardless.
                 */
                if (a->ds_cpuid) {
                    e->edx |= 1u << 21;
                    e->ecx |= 1u << 2;
                }
            }
            /*
             * KVM rewrites the steal-time record, version and all, when it
             * enters a vCPU that moved or whose TSC is unstable (kvm_pvm:
             * every KVM_RUN).  A guest stepped between its two reads of the
             * version sees it change every time: Linux's kvm_steal_clock
             * then loops for as long as it is traced.
             */
            if (a->no_steal_time && e->function == KVM_CPUID_FEATURES)
                e->eax &= ~(1u << KVM_FEATURE_STEAL_TIME);
            /*
             * A host that never completes a hypercall (host_hypercalls_complete)
             * would leave Linux's PV spinlock waiter halted with interrupts
             * off for good, its kick spinning in KVM_RUN: the guest gets
             * the native spinlocks, IPIs and no yield hypercall instead.
             */
            if (a->no_hypercalls && e->function == KVM_CPUID_FEATURES)
                e->eax &= ~(1u << KVM_FEATURE_PV_UNHALT | 1u << KVM_FEATURE_PV_SEND_IPI |
                            1u << KVM_FEATURE_PV_SCHED_YIELD | 1u << KVM_FEATURE_HC_MAP_GPA_RANGE);
            /* Topology leaves name the x2APIC ID, which must match the MADT's. */
            if (a->irqchip && (e->function == 0xb || e->function == 0x1f))
                e->edx = (uint32_t)cpu->index;
        }
        int r = ioctl(cpu->fd, KVM_SET_CPUID2, c);
        free(c);
        return r < 0 ? error_fail_errno("KVM_SET_CPUID2") : 0;
    }
}

/*
 * PIC, I/O APIC, local APICs and PIT in the kernel, for Linux guests: the
 * APs then start by INIT/SIPI from the BSP (KVM keeps non-boot vCPUs in
 * KVM_MP_STATE_UNINITIALIZED until then) and HLT waits in the kernel.
 */
static int create_irqchip(struct vm *vm)
{
    if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
        return error_fail_errno("KVM_CREATE_IRQCHIP");
    struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
    if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
        return error_fail_errno("KVM_CREATE_PIT2");
    return 0;
}

int kvm_x86_irq_line(struct vm *vm, int irq, int level)
{
    struct kvm_irq_level l = { .irq = (uint32_t)irq, .level = (uint32_t)level };
    if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &l) < 0)
        return error_fail_errno("KVM_IRQ_LINE %d", irq);
    return 0;
}

/*
 * MSR accesses KVM would answer with #GP come to the monitor, which gives
 * the same #GP: then a #GP from RDMSR or WRMSR is always seen before it is
 * delivered (trace/tf.c delivers it itself), and guest_bts can filter.
 */
static int user_space_msr(struct vm *vm)
{
    if (ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_USER_SPACE_MSR) <= 0)
        return 0;
    struct kvm_enable_cap cap = {
        .cap = KVM_CAP_X86_USER_SPACE_MSR,
        .args = { KVM_MSR_EXIT_REASON_FILTER | KVM_MSR_EXIT_REASON_UNKNOWN |
                  KVM_MSR_EXIT_REASON_INVAL },
    };
    if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
        return error_fail_errno("KVM_ENABLE_CAP(KVM_CAP_X86_USER_SPACE_MSR)");
    arch_vm(vm)->user_msr = true;
    return 0;
}

/*
 * A triple fault.  kvm_amd resets the vCPU before it reports the shutdown
 * (svm.c, shutdown_interception: the VMCB is undefined after it), so the
 * registers then tell where the CPU restarts, not where it failed.
 */
static enum vcpu_verdict on_shutdown(struct vcpu *cpu, void *ctx)
{
    (void)ctx;
    struct kvm_regs r;
    struct kvm_sregs s;
    if (ioctl(cpu->fd, KVM_GET_REGS, &r) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &s) < 0)
        return VCPU_EXIT_PASS;
    if (r.rip != 0xfff0 || s.cs.selector != 0xf000 || s.cs.base != 0xffff0000u)
        return VCPU_EXIT_PASS;
    vm_request_end(cpu->vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                   "guest triple fault (KVM_EXIT_SHUTDOWN) on vCPU %d; this host's KVM (%s) "
                   "resets a vCPU that shuts down, so where it failed is not known",
                   cpu->index, host_kvm_name());
    return VCPU_EXIT_DONE;
}

/* The instruction at RIP as the guest's page tables map it (vm->insn_at). */
static size_t insn_at(struct vcpu *cpu, uint8_t *buf, size_t len)
{
    struct kvm_regs regs;
    struct kvm_sregs sr;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &sr) < 0)
        return 0;
    struct cpu_view v = { &cpu->vm->mem, &regs, &sr };
    uint64_t lin = cpu_linear_ip(&regs, &sr);
    if (cpu_decode(&v, lin, &in, ops, &why) || in.length > len)
        return 0;
    return cpu_read_linear(&v, lin, buf, in.length) == 0 ? in.length : 0;
}

int kvm_x86_create(struct vm *vm, const char *kvm_path, uint64_t mem_size, int ncpus,
                   const struct kvm_x86_config *c)
{
    struct arch_vm *a = calloc(1, sizeof(*a));
    if (!a)
        return error_fail("out of memory");
    a->irqchip = c->irqchip;
    a->ds_cpuid = c->ds_cpuid;
    a->no_steal_time = c->no_steal_time;
    vm->arch = a;
    vm->insn_at = insn_at;
    if (kvm_open_vm(vm, kvm_path, mem_size) < 0)
        return -1;
    if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR) < 0)
        return error_fail_errno("KVM_SET_TSS_ADDR");
    if (user_space_msr(vm) < 0 || vcpu_on_exit(vm, KVM_EXIT_SHUTDOWN, on_shutdown, NULL) < 0 ||
        vcpu_state_install(vm) < 0)
        return -1;
    /* Before any vCPU exists: KVM then gives each one an in-kernel local APIC. */
    if (a->irqchip && create_irqchip(vm) < 0)
        return -1;
    /* Hypercalls matter to an SMP Linux guest (PV spinlock kicks, IPIs). */
    if (a->irqchip && ncpus > 1) {
        int h = host_hypercalls_complete(vm->kvm_fd);
        if (h < 0)
            return -1;
        a->no_hypercalls = !h;
    }
    if (kvm_create_vcpus(vm, ncpus) < 0)
        return -1;
    struct arch_vcpu *ac = calloc((size_t)ncpus, sizeof(*ac));
    if (!ac)
        return error_fail("out of memory");
    for (int i = 0; i < ncpus; i++) {
        vm->vcpus[i].arch = &ac[i];
        for (int s = 0; s < DEBUG_MAX_BP; s++)
            ac[i].dbg.slot_owner[s] = -1;
        if (set_cpuid(vm, &vm->vcpus[i]) < 0)
            return -1;
    }
    return 0;
}

bool kvm_x86_hypercalls_hidden(const struct vm *vm)
{
    return arch_vm(vm)->no_hypercalls;
}

void kvm_x86_destroy(struct vm *vm)
{
    void *vcpu_arch = vm->vcpus && vm->ncpus ? vm->vcpus[0].arch : NULL;
    kvm_close_vm(vm);
    free(vcpu_arch);
    free(vm->arch);
    vm->arch = NULL;
}

static void flat_segment(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
    *s = (struct kvm_segment){ .base = 0, .limit = 0xffffffff, .selector = sel,
                               .type = type, .present = 1, .dpl = 0, .db = 1,
                               .s = 1, .l = 0, .g = 1 };
}

/*
 * Multiboot leaves GDTR undefined, but guests written against QEMU find
 * QEMU's loader GDT loaded (null, 0x08 flat code, 0x10 flat data) and far
 * jump or push selectors with it; give them the same, in low memory.
 */
#define ENTRY_GDT_ADDR 0x500

int kvm_x86_enter_protected32(struct vcpu *cpu, uint32_t eip, uint32_t eax, uint32_t ebx)
{
    static const uint64_t gdt[3] = { 0, 0x00cf9b000000ffffull, 0x00cf93000000ffffull };
    void *g = gmem_ptr(&cpu->vm->mem, ENTRY_GDT_ADDR, sizeof(gdt));
    if (!g)
        return error_fail("no guest RAM for the entry GDT");
    memcpy(g, gdt, sizeof(gdt));
    struct kvm_sregs sregs;
    if (ioctl(cpu->fd, KVM_GET_SREGS, &sregs) < 0)
        return error_fail_errno("KVM_GET_SREGS");
    flat_segment(&sregs.cs, 0x08, 0xb);      /* execute/read, accessed */
    flat_segment(&sregs.ds, 0x10, 0x3);      /* read/write, accessed */
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.gdt.base = ENTRY_GDT_ADDR;
    sregs.gdt.limit = sizeof(gdt) - 1;
    sregs.cr0 = 0x11;                        /* PE | ET; paging off */
    sregs.cr4 = 0;
    sregs.efer = 0;
    if (ioctl(cpu->fd, KVM_SET_SREGS, &sregs) < 0)
        return error_fail_errno("KVM_SET_SREGS");
    /*
     * Multiboot leaves ESP undefined; QEMU's firmware happens to leave a
     * usable stack below 0x7000, and guests written against QEMU rely on it.
     */
    struct kvm_regs regs = { .rip = eip, .rax = eax, .rbx = ebx, .rsp = 0x7000, .rflags = 0x2 };
    if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 0;
}

int kvm_x86_enter_long64(struct vcpu *cpu, const struct kvm_x86_long64 *e)
{
    struct kvm_sregs sregs;
    if (ioctl(cpu->fd, KVM_GET_SREGS, &sregs) < 0)
        return error_fail_errno("KVM_GET_SREGS");
    flat_segment(&sregs.cs, e->cs, 0xb);
    sregs.cs.l = 1;                          /* 64-bit code: L set, D clear */
    sregs.cs.db = 0;
    flat_segment(&sregs.ds, e->ds, 0x3);
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.gdt.base = e->gdt_base;
    sregs.gdt.limit = e->gdt_limit;
    sregs.idt.base = 0;
    sregs.idt.limit = 0;
    sregs.cr3 = e->cr3;
    sregs.cr4 = 1u << 5;                     /* PAE */
    sregs.cr0 = 0x80000011u;                 /* PG | ET | PE */
    sregs.efer = (1u << 8) | (1u << 10);     /* LME | LMA */
    if (ioctl(cpu->fd, KVM_SET_SREGS, &sregs) < 0)
        return error_fail_errno("KVM_SET_SREGS");
    struct kvm_regs regs = { .rip = e->rip, .rsi = e->rsi, .rflags = 0x2 };
    if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 0;
}

int kvm_x86_host_writes(struct vcpu *cpu, struct kvm_x86_area *a, int max)
{
    /* Each MSR: bit 0 enables it; the rest, masked, is the area's address. */
    static const struct { uint32_t msr; uint64_t mask, len; } pv[KVM_X86_MAX_AREAS] = {
        { MSR_KVM_SYSTEM_TIME_NEW, ~1ull, 32 }, { MSR_KVM_SYSTEM_TIME, ~1ull, 32 },
        { MSR_KVM_ASYNC_PF_EN, ~0x3full, 64 }, { MSR_KVM_STEAL_TIME, ~0x3full, 64 },
        { MSR_KVM_PV_EOI_EN, ~1ull, 4 },
    };
    int n = 0;
    for (int i = 0; i < KVM_X86_MAX_AREAS && n < max; i++) {
        struct {
            struct kvm_msrs h;
            struct kvm_msr_entry e;
        } g = { .h.nmsrs = 1, .e.index = pv[i].msr };
        int r = ioctl(cpu->fd, KVM_GET_MSRS, &g);
        if (r < 0)
            return error_fail_errno("KVM_GET_MSRS (KVM's PV area %#x) on vCPU %d", pv[i].msr, cpu->index);
        /* 0: a host without it, which writes nothing there.  The two kvmclock MSRs read as one. */
        if (r == 1 && (g.e.data & 1) && !(n && a[n - 1].gpa == (g.e.data & pv[i].mask)))
            a[n++] = (struct kvm_x86_area){ g.e.data & pv[i].mask, pv[i].len };
    }
    return n;
}
