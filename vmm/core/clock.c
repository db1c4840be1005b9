/* SPDX-License-Identifier: MIT */
#include "core/clock.h"

#include <time.h>

static uint64_t ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t clock_monotonic_ns(void)
{
    return ns(CLOCK_MONOTONIC);
}

double clock_monotonic_s(void)
{
    return (double)clock_monotonic_ns() / 1e9;
}

uint64_t clock_realtime_ns(void)
{
    return ns(CLOCK_REALTIME);
}
