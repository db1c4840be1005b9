/* SPDX-License-Identifier: MIT */
#include "cli/fatal.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

static char *put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_hex(char *p, unsigned long v)
{
    char d[16];
    int n = 0;
    do {
        d[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    p = put(p, "0x");
    while (n)
        *p++ = d[--n];
    return p;
}

/*
 * The line, then death by the signal as without a handler.  Only
 * async-signal-safe calls: write(2), signal, sigprocmask, raise, _exit.
 */
static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char line[320], *p = put(line, "vbts: the monitor got ");
    p = put(p, sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
               : sig == SIGFPE ? "SIGFPE" : "SIGTRAP");
    p = put(put_hex(put(p, " at address "), (unsigned long)si->si_addr), ": ");
    if (sig == SIGTRAP)
        p = put(p, "a debug trap in its own code, which it never arms: the host's kernel sent it "
                   "(docs/host-compat.md)");
    else if (si->si_code <= 0)
        p = put(p, "sent by a process");
    else
        p = put(p, "a bug in vbts; please report it with the guest that ran");
    p = put(p, "; the trace is cut off here\n");
    ssize_t w = write(STDERR_FILENO, line, (size_t)(p - line));
    (void)w;
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
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
