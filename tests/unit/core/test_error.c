/* SPDX-License-Identifier: MIT */
/* One line per failure, per thread, with errno's text when asked. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"

Test(error, formats_and_keeps_errno)
{
    cr_assert_eq(error_fail("KVM_%s on vCPU %d", "RUN", 3), -1);
    cr_assert_str_eq(error_last(), "KVM_RUN on vCPU 3");
    errno = ENOENT;
    cr_assert_eq(error_fail_errno("cannot open %s", "x"), -1);
    cr_assert_eq(errno, ENOENT);
    cr_assert_str_eq(error_last(), "cannot open x: No such file or directory");
}

static void *other(void *arg)
{
    (void)arg;
    error_fail("the other thread's");
    return NULL;
}

Test(error, per_thread)
{
    error_fail("mine");
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    pthread_join(t, NULL);
    cr_assert_str_eq(error_last(), "mine");
}

Test(error, long_lines_are_cut)
{
    char big[2 * VBTS_MAX_MSG];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    error_fail("%s", big);
    cr_assert_eq(strlen(error_last()), VBTS_MAX_MSG - 1);
}
