/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm.h"
#include "loader_linux.h"

/* Where KVM may put the real-mode TSS and identity map (VMX needs them). */
#define KVM_TSS_ADDR 0xfffbd000u

static int set_memory(struct vm *vm)
{
    struct kvm_userspace_memory_region low = {
        .slot = 0, .guest_phys_addr = 0,
        .memory_size = gmem_low_size(&vm->mem),
        .userspace_addr = (uintptr_t)vm->mem.host,
    };
    if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &low) < 0)
        return vbts_fail_errno("KVM_SET_USER_MEMORY_REGION (low RAM)");
    if (gmem_high_size(&vm->mem)) {
        struct kvm_userspace_memory_region high = {
            .slot = 1, .guest_phys_addr = GMEM_HIGH_BASE,
            .memory_size = gmem_high_size(&vm->mem),
            .userspace_addr = (uintptr_t)vm->mem.host + low.memory_size,
        };
        if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &high) < 0)
            return vbts_fail_errno("KVM_SET_USER_MEMORY_REGION (high RAM)");
    }
    return 0;
}

/* The guest sees what KVM supports; long mode, for one, needs CPUID to say so. */
static int set_cpuid(struct vm *vm, struct vcpu *cpu)
{
    int n = 128;
    for (;;) {
        struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
        if (!c)
            return vbts_fail("out of memory");
        c->nent = n;
        if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) < 0) {
            free(c);
            if (errno == E2BIG && n < 4096) {
                n *= 2;
                continue;
            }
            return vbts_fail_errno("KVM_GET_SUPPORTED_CPUID");
        }
        for (unsigned i = 0; i < c->nent; i++) {
            /* Leaf 1 EBX[31:24] is the initial APIC ID: one per vCPU. */
            if (c->entries[i].function == 1) {
                c->entries[i].ebx = (c->entries[i].ebx & 0x00ffffffu) | ((uint32_t)cpu->index << 24);
                /*
                 * DS (EDX 21) and DTES64 (ECX 2) announce the guest BTS that
                 * guest_bts.c provides.  Some hosts (kvm_pvm) do not honour
                 * KVM_SET_CPUID2 fully; the MSRs work regardless.
                 */
                if (vm->guest_bts) {
                    c->entries[i].edx |= 1u << 21;
                    c->entries[i].ecx |= 1u << 2;
                }
            }
            /* Topology leaves name the x2APIC ID, which must match the MADT's. */
            if (vm->irqchip && (c->entries[i].function == 0xb || c->entries[i].function == 0x1f))
                c->entries[i].edx = (uint32_t)cpu->index;
        }
        int r = ioctl(cpu->fd, KVM_SET_CPUID2, c);
        free(c);
        if (r < 0)
            return vbts_fail_errno("KVM_SET_CPUID2");
        return 0;
    }
}

static int vcpu_create(struct vm *vm, struct vcpu *cpu, int index)
{
    cpu->vm = vm;
    cpu->index = index;
    cpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, index);
    if (cpu->fd < 0)
        return vbts_fail_errno("KVM_CREATE_VCPU %d", index);
    int sz = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (sz < (int)sizeof(struct kvm_run))
        return vbts_fail_errno("KVM_GET_VCPU_MMAP_SIZE");
    cpu->run_size = sz;
    cpu->run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, cpu->fd, 0);
    if (cpu->run == MAP_FAILED) {
        cpu->run = NULL;
        return vbts_fail_errno("mmap of vCPU %d kvm_run", index);
    }
    return set_cpuid(vm, cpu);
}

/*
 * PIC, I/O APIC, local APICs and PIT in the kernel, for Linux guests: the
 * APs then start by INIT/SIPI from the BSP (KVM keeps non-boot vCPUs in
 * KVM_MP_STATE_UNINITIALIZED until then) and HLT waits in the kernel.
 */
static int create_irqchip(struct vm *vm)
{
    if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
        return vbts_fail_errno("KVM_CREATE_IRQCHIP");
    struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
    if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
        return vbts_fail_errno("KVM_CREATE_PIT2");
    return 0;
}

int kvm_irq_line(struct vm *vm, int irq, int level)
{
    struct kvm_irq_level l = { .irq = (uint32_t)irq, .level = (uint32_t)level };
    if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &l) < 0)
        return vbts_fail_errno("KVM_IRQ_LINE %d", irq);
    return 0;
}

int kvm_vm_create(struct vm *vm, const char *kvm_path, uint64_t mem_size, int ncpus)
{
    vm->kvm_fd = vm->vm_fd = -1;
    vm->kvm_fd = open(kvm_path, O_RDWR | O_CLOEXEC);
    if (vm->kvm_fd < 0)
        return vbts_fail_errno("cannot open %s (KVM unavailable)", kvm_path);
    int api = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
    if (api != KVM_API_VERSION)
        return vbts_fail("%s: KVM API version %d, need %d", kvm_path, api, KVM_API_VERSION);
    if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS) <= 0)
        return vbts_fail("%s: KVM lacks KVM_CAP_SYNC_REGS", kvm_path);
    vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
    if (vm->vm_fd < 0)
        return vbts_fail_errno("KVM_CREATE_VM");
    if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR) < 0)
        return vbts_fail_errno("KVM_SET_TSS_ADDR");
    if (gmem_init(&vm->mem, mem_size) < 0)
        return -1;
    if (set_memory(vm) < 0)
        return -1;
    /* Before any vCPU exists: KVM then gives each one an in-kernel local APIC. */
    if (vm->irqchip && create_irqchip(vm) < 0)
        return -1;
    vm->ncpus = ncpus;
    vm->vcpus = calloc(ncpus, sizeof(*vm->vcpus));
    if (!vm->vcpus)
        return vbts_fail("out of memory");
    for (int i = 0; i < ncpus; i++) {
        vm->vcpus[i].fd = -1;
        if (vcpu_create(vm, &vm->vcpus[i], i) < 0)
            return -1;
    }
    return 0;
}

void kvm_vm_destroy(struct vm *vm)
{
    for (int i = 0; vm->vcpus && i < vm->ncpus; i++) {
        if (vm->vcpus[i].run)
            munmap(vm->vcpus[i].run, vm->vcpus[i].run_size);
        if (vm->vcpus[i].fd >= 0)
            close(vm->vcpus[i].fd);
    }
    free(vm->vcpus);
    vm->vcpus = NULL;
    if (vm->vm_fd >= 0)
        close(vm->vm_fd);
    if (vm->kvm_fd >= 0)
        close(vm->kvm_fd);
    gmem_fini(&vm->mem);
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
        return vbts_fail("no guest RAM for the entry GDT");
    memcpy(g, gdt, sizeof(gdt));
    struct kvm_sregs sregs;
    if (ioctl(cpu->fd, KVM_GET_SREGS, &sregs) < 0)
        return vbts_fail_errno("KVM_GET_SREGS");
    flat_segment(&sregs.cs, 0x08, 0xb);      /* execute/read, accessed */
    flat_segment(&sregs.ds, 0x10, 0x3);      /* read/write, accessed */
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.gdt.base = ENTRY_GDT_ADDR;
    sregs.gdt.limit = sizeof(gdt) - 1;
    sregs.cr0 = 0x11;                        /* PE | ET; paging off */
    sregs.cr4 = 0;
    sregs.efer = 0;
    if (ioctl(cpu->fd, KVM_SET_SREGS, &sregs) < 0)
        return vbts_fail_errno("KVM_SET_SREGS");
    /*
     * Multiboot leaves ESP undefined; QEMU's firmware happens to leave a
     * usable stack below 0x7000, and guests written against QEMU rely on it.
     */
    struct kvm_regs regs = { .rip = eip, .rax = eax, .rbx = ebx, .rsp = 0x7000, .rflags = 0x2 };
    if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
        return vbts_fail_errno("KVM_SET_REGS");
    return 0;
}

int kvm_x86_enter_long64(struct vcpu *cpu, const struct linux_boot *lb)
{
    struct kvm_sregs sregs;
    if (ioctl(cpu->fd, KVM_GET_SREGS, &sregs) < 0)
        return vbts_fail_errno("KVM_GET_SREGS");
    flat_segment(&sregs.cs, LINUX_BOOT_CS, 0xb);
    sregs.cs.l = 1;                          /* 64-bit code: L set, D clear */
    sregs.cs.db = 0;
    flat_segment(&sregs.ds, LINUX_BOOT_DS, 0x3);
    sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
    sregs.gdt.base = lb->gdt_base;
    sregs.gdt.limit = lb->gdt_limit;
    sregs.idt.base = 0;
    sregs.idt.limit = 0;
    sregs.cr3 = lb->cr3;
    sregs.cr4 = 1u << 5;                     /* PAE */
    sregs.cr0 = 0x80000011u;                 /* PG | ET | PE */
    sregs.efer = (1u << 8) | (1u << 10);     /* LME | LMA */
    if (ioctl(cpu->fd, KVM_SET_SREGS, &sregs) < 0)
        return vbts_fail_errno("KVM_SET_SREGS");
    struct kvm_regs regs = { .rip = lb->entry, .rsi = lb->zero_page, .rflags = 0x2 };
    if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
        return vbts_fail_errno("KVM_SET_REGS");
    return 0;
}

bool kvm_host_cannot_step_user(void)
{
    /* kvm_pvm reflects the single-step #DB into a CPL3 guest (platform notes). */
    return access("/sys/module/kvm_pvm", F_OK) == 0;
}
