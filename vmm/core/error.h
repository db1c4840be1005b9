/* SPDX-License-Identifier: MIT */
/*
 * Errors are reported fail-fast with one line naming what failed (the
 * ioctl, the file, the option).  Library code records the line with
 * error_fail() and returns -1; the caller that decides the exit status
 * prints it.  The line is per thread.
 */
#ifndef VBTS_CORE_ERROR_H
#define VBTS_CORE_ERROR_H

#define VBTS_MAX_MSG 512

int error_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, with ": strerror(errno)" appended; errno is kept. */
int error_fail_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *error_last(void);

#endif
