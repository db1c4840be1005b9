/* SPDX-License-Identifier: MIT */
/*
 * yield: an init (rdinit=/yield) for whole-system traces of Linux.  Two
 * processes take turns: each asks uname(2), the window's trigger
 * (__x64_sys_newuname), runs a little user code, and gives the CPU away
 * with sched_yield(2), so a window opened at the syscall holds the kernel
 * path, the return to user mode, user-mode branches and context switches
 * between two address spaces within a few thousand branches.  Then the
 * machine powers off.  Static, no shell needed.
 */
#include <stdio.h>
#include <sched.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 200

static unsigned turns(const char *who)
{
    unsigned sum = 0;
    for (int i = 0; i < ROUNDS; i++) {
        struct utsname u;
        if (uname(&u) == 0)
            sum += (unsigned)strlen(u.release) + (unsigned)i;
        sched_yield();
    }
    printf("VBTS-YIELD %s %u\n", who, sum);
    fflush(stdout);
    return sum;
}

int main(void)
{
    pid_t child = fork();
    if (child == 0) {
        turns("child");
        _exit(0);
    }
    turns("parent");
    int st = 0;
    if (child > 0)
        waitpid(child, &st, 0);
    printf("VBTS-YIELD-DONE %d\n", child > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
