/* SPDX-License-Identifier: MIT */
#include "core/kvm.h"

#include <fcntl.h>
#include <stdlib.h>
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
