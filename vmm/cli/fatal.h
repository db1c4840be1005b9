/* SPDX-License-Identifier: MIT */
/*
 * The monitor's own fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
 * SIGTRAP), said in one line before the monitor dies by them as it would
 * have: which signal, at what address, and whose it likely is.  A guest
 * may fault; the monitor's process should never get these, and when the
 * host's kernel sends one (a debug trap the monitor never armed), the user
 * learns it from the line rather than from a bare status.
 */
#ifndef VBTS_CLI_FATAL_H
#define VBTS_CLI_FATAL_H

#include <stddef.h>

/* 0, or -1 with the error set. */
int fatal_install(void);

/*
 * For a signal handler's one line: text and numbers into a buffer, and
 * the line written before death by `sig` as without a handler.  Only
 * async-signal-safe calls (write(2), signal, sigprocmask, raise, _exit).
 */
char *fatal_put(char *p, const char *s);
char *fatal_put_num(char *p, unsigned long v, unsigned base);
void fatal_die(int sig, const char *line, size_t len) __attribute__((noreturn));

#endif
