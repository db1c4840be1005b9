/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <time.h>

#include "core/clock.h"

Test(clock, monotonic_and_realtime)
{
    uint64_t a = clock_monotonic_ns(), b = clock_monotonic_ns();
    cr_assert_geq(b, a);
    double s = clock_monotonic_s();
    cr_assert_geq(s * 1e9 + 1e6, (double)b, "seconds and nanoseconds are the same clock");
    uint64_t r = clock_realtime_ns();
    cr_assert_gt(r / 1000000000ull, 1600000000ull, "realtime is wall-clock time");
    cr_assert_leq(r / 1000000000ull, (uint64_t)time(NULL) + 1);
}
