/* SPDX-License-Identifier: MIT */
/*
 * The sandbox, tried in forked children (it cannot be taken off again):
 * the privilege drop, and the filter: what the run needs passes, the rest
 * dies by SIGSYS after one line on stderr.
 */
#include <criterion/criterion.h>

#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "cli/options.h"
#include "cli/sandbox.h"
#include "cli/user.h"
#include "core/error.h"

/* The drop and the filter, in children. */

struct child {
    int status;
    char err[512];
};

/* fn in a forked child whose stderr is captured; the child's exit status is fn's result. */
static struct child in_child(int (*fn)(void))
{
    struct child c = { 0 };
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(p[1], STDERR_FILENO);
        close(p[0]);
        close(p[1]);
        _exit(fn());        /* no exit handlers: the sanitizers' leak check is the parent's */
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof(c.err) - 1 && (r = read(p[0], c.err + n, sizeof(c.err) - 1 - n)) > 0)
        n += (size_t)r;
    close(p[0]);
    cr_assert_eq(waitpid(pid, &c.status, 0), pid);
    return c;
}

static void assert_killed(struct child c, const char *line)
{
    cr_assert(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGSYS,
              "want death by SIGSYS, got status 0x%x; stderr: %s", c.status, c.err);
    cr_assert_str_eq(c.err, line);
}

static int install(void)
{
    if (sandbox_install(false) < 0) {
        fprintf(stderr, "%s\n", error_last());
        return -1;
    }
    return 0;
}

static void *thread_noop(void *arg)
{
    return arg;
}

/* What every run does under the filter: threads, memory, writes, sleeps. */
static int allowed_calls(void)
{
    if (install() < 0)
        return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, thread_noop, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 3;
    void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, 4096, PROT_READ) < 0 || munmap(m, 1 << 20) < 0)
        return 4;
    free(malloc(8 << 20));
    char c = 'x';
    if (write(STDERR_FILENO, &c, 0) != 0)
        return 6;
    struct timespec ts = { 0, 1000 };
    nanosleep(&ts, NULL);
    return 0;
}

Test(sandbox, run_needs_pass)
{
    struct child c = in_child(allowed_calls);
    cr_assert(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "status 0x%x; stderr: %s",
              c.status, c.err);
}

static int forbidden(void)
{
    if (install() < 0)
        return 2;
    sandbox_forbidden_call();
    return 3;
}

Test(sandbox, forbidden_call_kills)
{
    assert_killed(in_child(forbidden), "vbts: sandbox: forbidden system call 59 (execve)\n");
}

/* A thread that runs before the filter is installed gets it too (TSYNC). */
static int ready[2], go[2];
static void *thread_forbidden(void *arg)
{
    char c;
    if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
        return arg;
    sandbox_forbidden_call();
    return arg;
}

static int forbidden_in_older_thread(void)
{
    pthread_t t;
    char c;
    if (pipe(ready) < 0 || pipe(go) < 0 || pthread_create(&t, NULL, thread_forbidden, NULL) != 0 ||
        read(ready[0], &c, 1) != 1)
        return 2;
    if (install() < 0)
        return 3;
    if (write(go[1], "g", 1) != 1)
        return 4;
    pthread_join(t, NULL);
    return 5;
}

Test(sandbox, threads_started_before_are_filtered)
{
    assert_killed(in_child(forbidden_in_older_thread),
                  "vbts: sandbox: forbidden system call 59 (execve)\n");
}

static int injects_keystrokes(void)
{
    if (install() < 0)
        return 2;
    char c = 'x';
    ioctl(STDIN_FILENO, TIOCSTI, &c);
    return 3;
}

Test(sandbox, tty_input_injection_dies)
{
    assert_killed(in_child(injects_keystrokes),
                  "vbts: sandbox: forbidden system call 16 (ioctl) with these arguments\n");
}

static int makes_code(void)
{
    if (install() < 0)
        return 2;
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 3;
    mprotect(m, 4096, PROT_READ | PROT_EXEC);
    return 4;
}

Test(sandbox, executable_memory_dies)
{
    assert_killed(in_child(makes_code),
                  "vbts: sandbox: forbidden system call 10 (mprotect) with these arguments\n");
}

static int forks(void)
{
    if (install() < 0)
        return 2;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    return 3;
}

Test(sandbox, new_process_dies)
{
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("the sanitizers' build lets clone make processes (LeakSanitizer's tracer)");
#endif
    assert_killed(in_child(forks),
                  "vbts: sandbox: forbidden system call 56 (clone) with these arguments\n");
}

static int drops(void)
{
    struct user_ids ids = { .drop = true, .uid = 54321, .gid = 43210 };
    if (user_drop(&ids) < 0) {
        fprintf(stderr, "%s\n", error_last());
        return 2;
    }
    if (getuid() != 54321 || geteuid() != 54321 || getgid() != 43210 || getegid() != 43210 ||
        getgroups(0, NULL) != 0)
        return 3;
    return setuid(0) == 0 ? 4 : 0;
}

Test(sandbox, drop_is_for_good)
{
    if (geteuid() != 0)
        cr_skip_test("needs root");
    struct child c = in_child(drops);
    cr_assert(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "status 0x%x; stderr: %s",
              c.status, c.err);
}

static int removes_a_file(void)
{
    if (install() < 0)
        return 2;
    unlink("/nonexistent/vbts-sandbox-test");
    return 3;
}

static int removes_a_socket(void)
{
    if (sandbox_install(true) < 0)
        return 2;
    return unlink("/nonexistent/vbts-sandbox-test") < 0 ? 0 : 3;
}

/* unlink takes a path, which the filter cannot check: allowed only for removing unix: sockets. */
Test(sandbox, unlink_only_with_sockets)
{
    assert_killed(in_child(removes_a_file), "vbts: sandbox: forbidden system call 87 (unlink)\n");
    struct child c = in_child(removes_a_socket);
    cr_assert(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "status 0x%x; stderr: %s",
              c.status, c.err);
}

/*
 * The socket server's allocations: a thread of its own, so a malloc arena
 * of its own, and 256 KiB a client.  glibc's first shrink of such an arena
 * opens /proc/sys/vm/overcommit_memory; under the filter that killed the
 * monitor when a few clients left together.
 */
static void *thread_clients(void *arg)
{
    enum { CLIENTS = 8, OUTQ = 256 * 1024 };
    for (int round = 0; round < 4; round++) {
        void *q[CLIENTS];
        for (int i = 0; i < CLIENTS; i++)
            if (!(q[i] = malloc(OUTQ)))
                return arg;
        for (int i = 0; i < CLIENTS; i++) {
            memset(q[i], i, OUTQ);
            free(q[i]);
        }
    }
    return NULL;
}

static int clients_come_and_go(void)
{
    if (install() < 0)
        return 2;
    static int failed;
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, thread_clients, &failed) != 0 || pthread_join(t, &r) != 0 || r)
        return 3;
    return 0;
}

Test(sandbox, server_thread_memory_passes)
{
    struct child c = in_child(clients_come_and_go);
    cr_assert(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0, "status 0x%x; stderr: %s",
              c.status, c.err);
}
