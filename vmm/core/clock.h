/* SPDX-License-Identifier: MIT */
/* The monitor's one clock: monotonic for durations, realtime for markers. */
#ifndef VBTS_CORE_CLOCK_H
#define VBTS_CORE_CLOCK_H

#include <stdint.h>

uint64_t clock_monotonic_ns(void);
double clock_monotonic_s(void);
uint64_t clock_realtime_ns(void);

#endif
