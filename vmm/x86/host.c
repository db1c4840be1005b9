/* SPDX-License-Identifier: MIT */
#include "x86/host.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/error.h"

/* Asked before every KVM_RUN in places: looked up once. */
static int module_index(void)
{
    static atomic_int cached = -1;
    static const char *const mods[] = { "/sys/module/kvm_pvm", "/sys/module/kvm_amd",
                                        "/sys/module/kvm_intel" };
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = 3;
        for (int i = 0; i < 3; i++) {
            if (access(mods[i], F_OK) == 0) {
                v = i;
                break;
            }
        }
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

bool host_is_pvm(void)
{
    return module_index() == 0;
}

bool host_steps_user(void)
{
    /* kvm_pvm reflects the single-step #DB into a CPL3 guest. */
    return !host_is_pvm();
}

const char *host_kvm_name(void)
{
    static const char *const names[] = { "kvm_pvm", "kvm_amd", "kvm_intel", "kvm" };
    return names[module_index()];
}

/* Real mode at 0x1000: nop; nop; hlt, with DR0 on the second nop. */
static int probe_breakpoint(int vm, int cpu, struct kvm_run *run, uint8_t *ram)
{
    static const uint8_t code[] = { 0x90, 0x90, 0xf4 };
    memcpy(ram + 0x1000, code, sizeof(code));
    struct kvm_userspace_memory_region r = { .memory_size = 0x2000,
                                             .userspace_addr = (uintptr_t)ram };
    if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r) < 0)
        return error_fail_errno("breakpoint probe: KVM_SET_USER_MEMORY_REGION");
    struct kvm_sregs s;
    if (ioctl(cpu, KVM_GET_SREGS, &s) < 0)
        return error_fail_errno("breakpoint probe: KVM_GET_SREGS");
    s.cs.base = 0;
    s.cs.selector = 0;
    struct kvm_regs g = { .rip = 0x1000, .rflags = 2 };
    struct kvm_guest_debug d = { .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP };
    d.arch.debugreg[0] = 0x1001;
    d.arch.debugreg[7] = 1;             /* L0, on execution */
    if (ioctl(cpu, KVM_SET_SREGS, &s) < 0 || ioctl(cpu, KVM_SET_REGS, &g) < 0)
        return error_fail_errno("breakpoint probe: KVM_SET_SREGS/KVM_SET_REGS");
    if (ioctl(cpu, KVM_SET_GUEST_DEBUG, &d) < 0)
        return error_fail_errno("breakpoint probe: KVM_SET_GUEST_DEBUG");
    if (ioctl(cpu, KVM_RUN, 0) < 0)
        return error_fail_errno("breakpoint probe: KVM_RUN");
    return run->exit_reason == KVM_EXIT_DEBUG && (run->debug.arch.dr6 & 1) &&
           run->debug.arch.pc == 0x1001;
}

int host_breakpoints_fire(int kvm_fd)
{
    static atomic_int cached = -1;
    int v = atomic_load(&cached);
    if (v >= 0)
        return v;
    int kvm = kvm_fd, vm = -1, cpu = -1;
    struct kvm_run *run = MAP_FAILED;
    uint8_t *ram = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int sz = -1;
    if ((vm = ioctl(kvm, KVM_CREATE_VM, 0)) < 0)
        v = error_fail_errno("breakpoint probe: KVM_CREATE_VM");
    else if ((cpu = ioctl(vm, KVM_CREATE_VCPU, 0)) < 0)
        v = error_fail_errno("breakpoint probe: KVM_CREATE_VCPU");
    else if ((sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0 ||
             (run = mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED, cpu, 0)) == MAP_FAILED ||
             ram == MAP_FAILED)
        v = error_fail_errno("breakpoint probe: mmap");
    else
        v = probe_breakpoint(vm, cpu, run, ram);
    if (run != MAP_FAILED)
        munmap(run, (size_t)sz);
    if (ram != MAP_FAILED)
        munmap(ram, 0x2000);
    if (cpu >= 0)
        close(cpu);
    if (vm >= 0)
        close(vm);
    if (v >= 0)
        atomic_store(&cached, v);
    return v;
}

bool host_tdp(void)
{
    static atomic_int cached = -1;
    int v = atomic_load(&cached);
    if (v < 0) {
        static const char *const params[] = { "/sys/module/kvm_amd/parameters/npt",
                                              "/sys/module/kvm_intel/parameters/ept" };
        v = 0;
        for (int i = 0; i < 2 && !v; i++) {
            int fd = open(params[i], O_RDONLY | O_CLOEXEC);
            char c = 0;
            if (fd >= 0) {
                v = read(fd, &c, 1) == 1 && (c == 'Y' || c == '1');
                close(fd);
            }
        }
        atomic_store(&cached, v);
    }
    return v;
}
