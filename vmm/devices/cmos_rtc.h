/* SPDX-License-Identifier: MIT */
/* The CMOS real-time clock at ports 0x70/0x71, from the host's clock. */
#ifndef VBTS_DEVICES_CMOS_RTC_H
#define VBTS_DEVICES_CMOS_RTC_H

#include "core/iobus.h"

int cmos_rtc_register(struct iobus *bus);

#endif
