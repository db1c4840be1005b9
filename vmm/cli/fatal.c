/* SPDX-License-Identifier: MIT */
#include "cli/fatal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "core/error.h"

char *fatal_put(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

char *fatal_put_num(char *p, unsigned long v, unsigned base)
{
    char d[24];
    int n = 0;
    do
        d[n++] = "0123456789abcdef"[v % base];
    while ((v /= base) && n < (int)sizeof(d));
    while (n)
        *p++ = d[--n];
    return p;
}

void fatal_die(int sig, const char *line, size_t len)
{
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char line[320], *p = fatal_put(line, "vbts: the monitor got ");
    p = fatal_put(p, sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
                     : sig == SIGFPE ? "SIGFPE" : "SIGTRAP");
    p = fatal_put_num(fatal_put(p, " at address 0x"), (unsigned long)si->si_addr, 16);
    if (sig == SIGTRAP)
        p = fatal_put(p, ": a debug trap in its own code, which it never arms: the host's kernel "
                         "sent it (docs/host-compat.md)");
    else if (si->si_code <= 0)
        p = fatal_put(p, ": sent by a process");
    else
        p = fatal_put(p, ": a bug in vbts; please report it with the guest that ran");
    p = fatal_put(p, "; the trace is cut off here\n");
    fatal_die(sig, line, (size_t)(p - line));
}

int fatal_install(void)
{
#ifdef __SANITIZE_ADDRESS__
    return 0;       /* the sanitizers report these themselves, better */
#endif
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP };
    struct sigaction sa = { .sa_sigaction = on_fatal, .sa_flags = SA_SIGINFO | SA_RESETHAND };
    sigfillset(&sa.sa_mask);
    for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (sigaction(sigs[i], &sa, NULL) < 0)
            return error_fail_errno("sigaction(%d)", sigs[i]);
    return 0;
}
