/* SPDX-License-Identifier: MIT */
#include "core/kvm.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"

static int set_memory(struct vm *vm)
{
    struct kvm_userspace_memory_region low = {
        .slot = 0, .guest_phys_addr = 0,
        .memory_size = gmem_low_size(&vm->mem),
        .userspace_addr = (uintptr_t)vm->mem.host,
    };
    if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &low) < 0)
        return error_fail_errno("KVM_SET_USER_MEMORY_REGION (low RAM)");
    if (gmem_high_size(&vm->mem)) {
        struct kvm_userspace_memory_region high = {
            .slot = 1, .guest_phys_addr = GMEM_HIGH_BASE,
            .memory_size = gmem_high_size(&vm->mem),
            .userspace_addr = (uintptr_t)vm->mem.host + low.memory_size,
        };
        if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &high) < 0)
            return error_fail_errno("KVM_SET_USER_MEMORY_REGION (high RAM)");
    }
    return 0;
}

int kvm_open_vm(struct vm *vm, const char *kvm_path, uint64_t mem_size)
{
    vm->kvm_fd = open(kvm_path, O_RDWR | O_CLOEXEC);
    if (vm->kvm_fd < 0)
        return error_fail_errno("cannot open %s (KVM unavailable)", kvm_path);
    int api = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
    if (api != KVM_API_VERSION)
        return error_fail("%s: KVM API version %d, need %d", kvm_path, api, KVM_API_VERSION);
    if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS) <= 0)
        return error_fail("%s: KVM lacks KVM_CAP_SYNC_REGS", kvm_path);
    vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
    if (vm->vm_fd < 0)
        return error_fail_errno("KVM_CREATE_VM");
    if (gmem_init(&vm->mem, mem_size) < 0)
        return -1;
    return set_memory(vm);
}

static int create_vcpu(struct vm *vm, struct vcpu *cpu, int index)
{
    cpu->vm = vm;
    cpu->index = index;
    cpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, index);
    if (cpu->fd < 0)
        return error_fail_errno("KVM_CREATE_VCPU %d", index);
    int sz = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (sz < (int)sizeof(struct kvm_run))
        return error_fail_errno("KVM_GET_VCPU_MMAP_SIZE");
    cpu->run_size = (size_t)sz;
    cpu->run = mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED, cpu->fd, 0);
    if (cpu->run == MAP_FAILED) {
        cpu->run = NULL;
        return error_fail_errno("mmap of vCPU %d kvm_run", index);
    }
    return 0;
}

int kvm_create_vcpus(struct vm *vm, int ncpus)
{
    vm->vcpus = calloc((size_t)ncpus, sizeof(*vm->vcpus));
    if (!vm->vcpus)
        return error_fail("out of memory");
    vm->ncpus = ncpus;
    for (int i = 0; i < ncpus; i++)
        vm->vcpus[i].fd = -1;
    for (int i = 0; i < ncpus; i++)
        if (create_vcpu(vm, &vm->vcpus[i], i) < 0)
            return -1;
    return 0;
}

void kvm_close_vm(struct vm *vm)
{
    for (int i = 0; vm->vcpus && i < vm->ncpus; i++) {
        if (vm->vcpus[i].run)
            munmap(vm->vcpus[i].run, vm->vcpus[i].run_size);
        if (vm->vcpus[i].fd >= 0)
            close(vm->vcpus[i].fd);
    }
    free(vm->vcpus);
    vm->vcpus = NULL;
    vm->ncpus = 0;
    if (vm->vm_fd >= 0)
        close(vm->vm_fd);
    if (vm->kvm_fd >= 0)
        close(vm->kvm_fd);
    vm->vm_fd = vm->kvm_fd = -1;
    gmem_fini(&vm->mem);
}

int kvm_extension(const struct vm *vm, long cap)
{
    int r = ioctl(vm->vm_fd >= 0 ? vm->vm_fd : vm->kvm_fd, KVM_CHECK_EXTENSION, cap);
    return r < 0 ? 0 : r;
}

int kvm_exit_on_emulation_failure(struct vm *vm, bool on)
{
    struct kvm_enable_cap cap = { .cap = KVM_CAP_EXIT_ON_EMULATION_FAILURE, .args = { on } };
    if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
        return error_fail_errno("KVM_ENABLE_CAP(KVM_CAP_EXIT_ON_EMULATION_FAILURE)");
    return 0;
}

/* Memory slots: 0 low RAM, 1 high RAM; an isolated page is slot 2 and the rest of its slot 3. */
enum { SLOT_LOW, SLOT_HIGH, SLOT_PAGE, SLOT_REST };
#define PAGE 4096ull

static int set_slot(struct vm *vm, uint32_t slot, uint64_t gpa, uint64_t len)
{
    struct kvm_userspace_memory_region r = { .slot = slot, .guest_phys_addr = gpa,
                                             .memory_size = len };
    if (len) {
        uint8_t *host = gmem_ptr(&vm->mem, gpa, len);
        if (!host)
            abort();        /* the monitor chose gpa inside RAM */
        r.userspace_addr = (uintptr_t)host;
    }
    if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
        return error_fail_errno("KVM_SET_USER_MEMORY_REGION (slot %u, 0x%llx+0x%llx)", slot,
                                (unsigned long long)gpa, (unsigned long long)len);
    return 0;
}

/* The guest's accesses to the hidden page, served from RAM. */
static void hidden_access(struct mmio_device *dev, struct vcpu *cpu, uint64_t off, uint8_t *data,
                          uint32_t len, bool is_write)
{
    if (off >= PAGE || len > PAGE - off)
        len = off >= PAGE ? 0 : (uint32_t)(PAGE - off);     /* KVM splits at pages */
    uint8_t *p = gmem_ptr(&cpu->vm->mem, dev->base + off, len);
    if (!p)
        return;
    if (is_write)
        memcpy(p, data, len);
    else
        memcpy(data, p, len);
}

int kvm_mem_isolate(struct vm *vm, uint64_t gpa)
{
    gpa &= ~(PAGE - 1);
    uint64_t low = gmem_low_size(&vm->mem);
    bool in_low = gpa < low;
    uint64_t base = in_low ? 0 : GMEM_HIGH_BASE;
    uint64_t end = in_low ? low : GMEM_HIGH_BASE + gmem_high_size(&vm->mem);
    if (vm->hide.on || gpa < base || gpa + PAGE > end)
        return error_fail("cannot isolate page 0x%llx: %s", (unsigned long long)gpa,
                          vm->hide.on ? "one is already" : "not RAM");
    uint32_t slot = in_low ? SLOT_LOW : SLOT_HIGH;
    if (set_slot(vm, slot, base, 0) < 0 || (gpa > base && set_slot(vm, slot, base, gpa - base) < 0) ||
        set_slot(vm, SLOT_PAGE, gpa, PAGE) < 0 ||
        (gpa + PAGE < end && set_slot(vm, SLOT_REST, gpa + PAGE, end - gpa - PAGE) < 0))
        return -1;
    vm->hide = (struct vm_hideable){
        .on = true, .gpa = gpa,
        .dev = { .name = "hidden page", .base = gpa, .len = PAGE, .access = hidden_access },
    };
    return mmio_register(&vm->mmio, &vm->hide.dev);
}

int kvm_mem_hide(struct vm *vm, bool hide)
{
    if (!vm->hide.on)
        abort();
    if (vm->hide.hidden == hide)
        return 0;
    if (set_slot(vm, SLOT_PAGE, vm->hide.gpa, hide ? 0 : PAGE) < 0)
        return -1;
    vm->hide.hidden = hide;
    return 0;
}
