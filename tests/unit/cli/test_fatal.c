/* SPDX-License-Identifier: MIT */
/* The monitor's own fatal signals, said in one line before it dies by them (fatal.c). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/fatal.h"

/* A child that installs the handlers and then does `what`: its line, and the signal it died by. */
static int child(void (*what)(void), char *line, size_t len)
{
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        if (fatal_install() < 0)
            _exit(3);
        what();
        _exit(4);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], line, len - 1);
    line[n > 0 ? n : 0] = 0;
    close(fd[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

static void trap(void)
{
    __asm__ volatile("int3");
}

static volatile uintptr_t bad = 16;

static void segv(void)
{
    *(volatile int *)bad = 1;
}

Test(fatal, a_trap_and_a_fault_are_said_then_the_monitor_dies_by_them)
{
#ifdef __SANITIZE_ADDRESS__
    cr_skip_test("the sanitizers report these themselves");
#endif
    char line[512];
    cr_assert_eq(child(trap, line, sizeof(line)), SIGTRAP);
    cr_assert(strstr(line, "vbts: the monitor got SIGTRAP at address 0x") == line, "%s", line);
    cr_assert(strstr(line, "the host's kernel sent it"), "%s", line);
    cr_assert_eq(strchr(line, '\n'), line + strlen(line) - 1, "one line");
    cr_assert_eq(child(segv, line, sizeof(line)), SIGSEGV);
    cr_assert_str_eq(line, "vbts: the monitor got SIGSEGV at address 0x10: a bug in vbts; please report "
                           "it with the guest that ran; the trace is cut off here\n");
}
