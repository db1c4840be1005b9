/* SPDX-License-Identifier: MIT */
#include "cli/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/kvm.h>
#include <linux/sched.h>

#include "cli/fatal.h"
#include "core/error.h"
#include "x86/host.h"

/*
 * Allowed with any arguments, grouped by who needs them: what the runs of
 * the end-to-end tests make after the filter is in place, under strace -f
 * (docs/security.md has the table).  ioctl, mmap, mprotect, clone and
 * unlink are allowed with some arguments only (below).
 */
static const int allowed[] = {
    /* every thread: glibc's malloc and thread stacks, futexes, a thread's start and end */
    SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(madvise), SCMP_SYS(mremap),
    SCMP_SYS(futex), SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
    SCMP_SYS(exit), SCMP_SYS(exit_group),
    /* signals: vCPU kicks (pthread_kill, the handler's return), the signal
     * thread's sigwait, and the SIGSYS handler's raise */
    SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigtimedwait), SCMP_SYS(restart_syscall),
    SCMP_SYS(tgkill), SCMP_SYS(getpid), SCMP_SYS(gettid),
    /* time: the server's and the TF engine's sleeps; the clocks where the
     * vDSO falls back to the kernel (clock sources of some VMs, the lab's) */
    SCMP_SYS(clock_nanosleep), SCMP_SYS(clock_gettime), SCMP_SYS(time),
    /* the run loop and the exporters, on fds opened before: COM1 out and in,
     * trace files, the server's eventfd and clients */
    SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(writev), SCMP_SYS(close), SCMP_SYS(poll),
    SCMP_SYS(accept4), SCMP_SYS(setsockopt), SCMP_SYS(recvfrom), SCMP_SYS(sendto),
    SCMP_SYS(shutdown),
};

#ifdef __SANITIZE_ADDRESS__
#define SANITIZER 1
#else
#define SANITIZER 0
#endif

/*
 * What only the sanitizers' runtime needs (make check): each thread's
 * start sets up an alternate signal stack and finds its own stack
 * (pthread_getattr_np asks the affinity); LeakSanitizer's check at exit
 * runs a tracer process that stops every thread (clone, prctl, getppid,
 * ptrace, wait4, /proc/self/task); an error report reads the binary to
 * name functions.  Not in a release build.
 */
static const int allowed_sanitizer[] = {
#if SANITIZER
    SCMP_SYS(sigaltstack), SCMP_SYS(sched_getaffinity),
    SCMP_SYS(prctl), SCMP_SYS(getppid), SCMP_SYS(ptrace), SCMP_SYS(wait4), SCMP_SYS(getdents),
    SCMP_SYS(sched_yield),
    SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(readlink), SCMP_SYS(fcntl), SCMP_SYS(lseek),
#endif
    -1,
};

/* Names for the kill message, resolved now: the SIGSYS handler may not allocate. */
#define NAMED_SYSCALLS 512
static const char *names[NAMED_SYSCALLS];
/* System calls allowed with some arguments: the message says so. */
static bool narrowed[NAMED_SYSCALLS];

/* The one line, then death by SIGSYS as without a handler (fatal_die). */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char line[160], *p = fatal_put(line, "vbts: sandbox: forbidden system call ");
    int nr = si->si_syscall;
    p = fatal_put_num(p, (unsigned long)(unsigned)nr, 10);
    if (si->si_arch != AUDIT_ARCH_X86_64) {
        p = fatal_put(p, " (not of the x86-64 ABI)");
    } else if (nr >= 0 && nr < NAMED_SYSCALLS && names[nr]) {
        p = fatal_put(fatal_put(fatal_put(p, " ("), names[nr]), ")");
        if (narrowed[nr])
            p = fatal_put(p, " with these arguments");
    }
    *p++ = '\n';
    fatal_die(sig, line, (size_t)(p - line));
}

static int add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n, const struct scmp_arg_cmp *cmp)
{
    int r = seccomp_rule_add_array(ctx, action, nr, n, cmp);
    if (r < 0) {
        char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        error_fail("sandbox: cannot add system call %s to the filter: %s", name ? name : "?",
                   strerror(-r));
        free(name);
        return -1;
    }
    if (n && nr >= 0 && nr < NAMED_SYSCALLS)
        narrowed[nr] = true;
    return 0;
}

/*
 * What is allowed only with some arguments: cheap to check, and each
 * closes a way out that the plain name would leave open.
 */
static int add_narrowed(scmp_filter_ctx ctx)
{
    const uint32_t ok = SCMP_ACT_ALLOW;
    /* KVM's own ioctls (type 0xAE), and the terminal's settings for the console;
     * not TIOCSTI, which would type commands into the shell that started vbts. */
    static const unsigned long tty[] = { TCGETS, TCSETS, TCSETSW, TCSETSF };
    struct scmp_arg_cmp kvm = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, KVMIO << 8);
    if (add(ctx, ok, SCMP_SYS(ioctl), 1, &kvm) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(tty) / sizeof(tty[0]); i++) {
        struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_EQ, tty[i]);
        if (add(ctx, ok, SCMP_SYS(ioctl), 1, &c) < 0)
            return -1;
    }
    /* Memory is never made executable: no code comes in after the start. */
    struct scmp_arg_cmp noexec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
    if (add(ctx, ok, SCMP_SYS(mmap), 1, &noexec) < 0 ||
        add(ctx, ok, SCMP_SYS(mprotect), 1, &noexec) < 0)
        return -1;
    /* Threads, never processes.  clone3's flags are in memory, out of a
     * filter's reach: ENOSYS sends glibc to clone, whose flags are not.
     * LeakSanitizer's exit check clones a tracer process. */
    struct scmp_arg_cmp thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
    if (add(ctx, ok, SCMP_SYS(clone), SANITIZER ? 0 : 1, &thread) < 0 ||
        add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, NULL) < 0)
        return -1;
    return 0;
}

static int build(scmp_filter_ctx ctx, bool remove_sockets)
{
    /* A path, which a filter cannot check: only when it is needed. */
    if (remove_sockets && add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unlink), 0, NULL) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        if (add(ctx, SCMP_ACT_ALLOW, allowed[i], 0, NULL) < 0)
            return -1;
    for (size_t i = 0; allowed_sanitizer[i] >= 0; i++)
        if (add(ctx, SCMP_ACT_ALLOW, allowed_sanitizer[i], 0, NULL) < 0)
            return -1;
    /* The sanitizers' report spawns llvm-symbolizer through a pipe: failing
     * pipe2 makes it name functions itself, with no process to start. */
    if (SANITIZER && add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pipe2), 0, NULL) < 0)
        return -1;
    /*
     * TSYNC: the socket server's and the console's threads already run (the
     * sockets listen before the guest starts), and a filter installed before
     * they start would have to allow everything building needs.  The load
     * fails unless every thread takes the filter; later threads inherit it.
     */
    int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
    if (r < 0)
        return error_fail("sandbox: seccomp cannot filter every thread (TSYNC): %s", strerror(-r));
    return add_narrowed(ctx);
}

int sandbox_install(bool remove_sockets)
{
    /* Files read on first use, read now while open is allowed: the host
     * probes' /sys files, and /etc/localtime (glibc's gmtime_r loads it
     * for the guest's RTC). */
    host_is_pvm();
    host_tdp();
    tzset();
    /* glibc's first shrink of a thread's malloc arena opens
     * /proc/sys/vm/overcommit_memory: the socket server's arena shrank
     * when clients left.  Freed memory stays with the process instead.
     * (The sanitizers' allocator has no arenas, and no mallopt.) */
    if (!SANITIZER && mallopt(M_TRIM_THRESHOLD, INT_MAX) != 1)
        return error_fail("sandbox: mallopt(M_TRIM_THRESHOLD) failed");
    for (int nr = 0; nr < NAMED_SYSCALLS; nr++)
        names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
    sigfillset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) < 0)
        return error_fail_errno("sandbox: sigaction(SIGSYS)");
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
    if (!ctx)
        return error_fail("sandbox: seccomp_init failed");
    /* A system call of another ABI (int 0x80, x32) gets the same line. */
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP) < 0) {
        seccomp_release(ctx);
        return error_fail("sandbox: seccomp cannot trap other ABIs");
    }
    int r = build(ctx, remove_sockets);
    if (r == 0 && (r = seccomp_load(ctx)) < 0)
        r = error_fail("sandbox: cannot install the seccomp filter: %s (--no-seccomp runs without it)",
                       strerror(-r));
    seccomp_release(ctx);
    return r;
}

void sandbox_forbidden_call(void)
{
    /* execve(NULL, ...): never needed at run time, and harmless (EFAULT) if let through. */
    syscall(SYS_execve, NULL, NULL, NULL);
}
