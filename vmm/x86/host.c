/* SPDX-License-Identifier: MIT */
#include "x86/host.h"

#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
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

/* A throwaway vCPU: its VM, its fd, its kvm_run, 8 KiB of RAM at 0. */
struct probe_vm {
    int vm, cpu, run_size;
    struct kvm_run *run;
    uint8_t *ram;
};

static int probe_vm_open(int kvm, struct probe_vm *p, const char *what)
{
    *p = (struct probe_vm){ .vm = -1, .cpu = -1, .run = MAP_FAILED };
    p->ram = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((p->vm = ioctl(kvm, KVM_CREATE_VM, 0)) < 0)
        return error_fail_errno("%s probe: KVM_CREATE_VM", what);
    if ((p->cpu = ioctl(p->vm, KVM_CREATE_VCPU, 0)) < 0)
        return error_fail_errno("%s probe: KVM_CREATE_VCPU", what);
    if ((p->run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0 ||
        (p->run = mmap(NULL, (size_t)p->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, p->cpu, 0)) == MAP_FAILED ||
        p->ram == MAP_FAILED)
        return error_fail_errno("%s probe: mmap", what);
    return 0;
}

/* The probe's code at 0x1000 in real mode, RIP there. */
static int probe_vm_code(struct probe_vm *p, const uint8_t *code, size_t len, const char *what)
{
    memcpy(p->ram + 0x1000, code, len);
    struct kvm_userspace_memory_region r = { .memory_size = 0x2000, .userspace_addr = (uintptr_t)p->ram };
    struct kvm_sregs s;
    struct kvm_regs g = { .rip = 0x1000, .rflags = 2 };
    if (ioctl(p->vm, KVM_SET_USER_MEMORY_REGION, &r) < 0 || ioctl(p->cpu, KVM_GET_SREGS, &s) < 0)
        return error_fail_errno("%s probe: KVM_SET_USER_MEMORY_REGION/KVM_GET_SREGS", what);
    s.cs.base = 0;
    s.cs.selector = 0;
    if (ioctl(p->cpu, KVM_SET_SREGS, &s) < 0 || ioctl(p->cpu, KVM_SET_REGS, &g) < 0)
        return error_fail_errno("%s probe: KVM_SET_SREGS/KVM_SET_REGS", what);
    return 0;
}

static void probe_vm_close(struct probe_vm *p)
{
    if (p->run != MAP_FAILED)
        munmap(p->run, (size_t)p->run_size);
    if (p->ram != MAP_FAILED)
        munmap(p->ram, 0x2000);
    if (p->cpu >= 0)
        close(p->cpu);
    if (p->vm >= 0)
        close(p->vm);
}

/* Run `probe` on a throwaway vCPU once a process: 1 or 0 kept in *cached, -1 (error set) not. */
static int probe_once(atomic_int *cached, int kvm_fd, const char *what, int (*probe)(struct probe_vm *))
{
    int v = atomic_load(cached);
    if (v >= 0)
        return v;
    struct probe_vm p;
    v = probe_vm_open(kvm_fd, &p, what);
    if (v == 0)
        v = probe(&p);
    probe_vm_close(&p);
    if (v >= 0)
        atomic_store(cached, v);
    return v;
}

/* Real mode at 0x1000: nop; nop; hlt, with DR0 on the second nop. */
static int probe_breakpoint(struct probe_vm *p)
{
    static const uint8_t code[] = { 0x90, 0x90, 0xf4 };
    if (probe_vm_code(p, code, sizeof(code), "breakpoint") < 0)
        return -1;
    struct kvm_guest_debug d = { .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP };
    d.arch.debugreg[0] = 0x1001;
    d.arch.debugreg[7] = 1;             /* L0, on execution */
    if (ioctl(p->cpu, KVM_SET_GUEST_DEBUG, &d) < 0)
        return error_fail_errno("breakpoint probe: KVM_SET_GUEST_DEBUG");
    if (ioctl(p->cpu, KVM_RUN, 0) < 0)
        return error_fail_errno("breakpoint probe: KVM_RUN");
    return p->run->exit_reason == KVM_EXIT_DEBUG && (p->run->debug.arch.dr6 & 1) &&
           p->run->debug.arch.pc == 0x1001;
}

int host_breakpoints_fire(int kvm_fd)
{
    static atomic_int cached = -1;
    return probe_once(&cached, kvm_fd, "breakpoint", probe_breakpoint);
}

/* How long a hypercall may take before the probe says the host never completes it. */
#define HYPERCALL_PROBE_NS 2000000000ull

struct hypercall_run {
    struct probe_vm *p;
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    bool done;
    int r, err;
};

/*
 * KVM_RUN on a thread of its own, with SIGUSR2 blocked except inside
 * KVM_RUN (KVM_SET_SIGNAL_MASK): a SIGUSR2 sent to it ends a KVM_RUN that
 * would not return, and is taken off afterwards, never delivered.
 */
static void *hypercall_runner(void *arg)
{
    struct hypercall_run *h = arg;
    sigset_t block, during;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &block, &during);
    sigdelset(&during, SIGUSR2);
    struct {
        struct kvm_signal_mask m;
        uint8_t set[8];
    } km = { .m.len = 8 };
    memcpy(km.set, &during, 8);
    int r = ioctl(h->p->cpu, KVM_SET_SIGNAL_MASK, &km);
    if (r == 0)
        r = ioctl(h->p->cpu, KVM_RUN, 0);
    int err = errno;
    static const struct timespec now = { 0, 0 };
    while (sigtimedwait(&block, NULL, &now) >= 0)
        ;
    pthread_mutex_lock(&h->lock);
    h->r = r;
    h->err = err;
    h->done = true;
    pthread_cond_signal(&h->done_cond);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

bool host_is_amd(void)
{
    /* CPUID exits to the host's hypervisor where vbts itself runs in a VM: asked once. */
    static _Atomic int amd = -1;
    if (amd < 0) {
        unsigned a, b, c, d;
        __cpuid(0, a, b, c, d);
        amd = b == 0x68747541;          /* "AuthenticAMD" */
    }
    return amd;
}

/* Real mode at 0x1000: mov eax, 0xffff; the vendor's hypercall; hlt.  1 if it returned -KVM_ENOSYS. */
static int probe_hypercall(struct probe_vm *p)
{
    bool amd = host_is_amd();           /* VMMCALL, else VMCALL */
    const uint8_t code[] = { 0x66, 0xb8, 0xff, 0xff, 0x00, 0x00, 0x0f, 0x01, amd ? 0xd9 : 0xc1, 0xf4 };
    if (probe_vm_code(p, code, sizeof(code), "hypercall") < 0)
        return -1;
    struct hypercall_run h = { .p = p, .lock = PTHREAD_MUTEX_INITIALIZER, .done_cond = PTHREAD_COND_INITIALIZER };
    pthread_t t;
    if (pthread_create(&t, NULL, hypercall_runner, &h) != 0)
        return error_fail("hypercall probe: cannot start a thread");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(HYPERCALL_PROBE_NS / 1000000000ull);
    pthread_mutex_lock(&h.lock);
    while (!h.done && pthread_cond_timedwait(&h.done_cond, &h.lock, &until) == 0)
        ;
    while (!h.done) {
        /* It still runs the hypercall: end that KVM_RUN. */
        pthread_kill(t, SIGUSR2);
        struct timespec again;
        clock_gettime(CLOCK_REALTIME, &again);
        again.tv_nsec += 10000000;
        if (again.tv_nsec >= 1000000000) {
            again.tv_sec++;
            again.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&h.done_cond, &h.lock, &again);
    }
    pthread_mutex_unlock(&h.lock);
    pthread_join(t, NULL);
    if (h.r < 0 && h.err != EINTR) {
        errno = h.err;
        return error_fail_errno("hypercall probe: KVM_RUN");
    }
    struct kvm_regs out;
    if (ioctl(p->cpu, KVM_GET_REGS, &out) < 0)
        return error_fail_errno("hypercall probe: KVM_GET_REGS");
    return h.r == 0 && p->run->exit_reason == KVM_EXIT_HLT && (uint32_t)out.rax == (uint32_t)-1000;
}

int host_hypercalls_complete(int kvm_fd)
{
    static atomic_int cached = -1;
    return probe_once(&cached, kvm_fd, "hypercall", probe_hypercall);
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
