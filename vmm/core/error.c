/* SPDX-License-Identifier: MIT */
#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Per thread: a vCPU thread's failure must not garble the main thread's. */
static __thread char last_error[VBTS_MAX_MSG];

int error_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return -1;
}

int error_fail_errno(const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(last_error))
        snprintf(last_error + n, sizeof(last_error) - n, ": %s", strerror(e));
    errno = e;
    return -1;
}

const char *error_last(void)
{
    return last_error;
}
