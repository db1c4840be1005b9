/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <time.h>

#include "core/iobus.h"
#include "devices/cmos_rtc.h"

static int from_bcd(uint8_t b)
{
    return (b >> 4) * 10 + (b & 15);
}

Test(cmos_rtc, the_hosts_time_in_bcd)
{
    struct iobus bus = { 0 };
    cr_assert_eq(cmos_rtc_register(&bus), 0);
    uint8_t i = 0x09, v;
    iobus_access(&bus, NULL, 0x70, 1, &i, 1);
    iobus_access(&bus, NULL, 0x71, 0, &v, 1);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    cr_assert_eq(from_bcd(v), tm.tm_year % 100);
    i = 0x8b;                           /* NMI-mask bit set: the index is still 0x0b */
    iobus_access(&bus, NULL, 0x70, 1, &i, 1);
    iobus_access(&bus, NULL, 0x71, 0, &v, 1);
    cr_assert_eq(v, 0x02, "24-hour, BCD");
    i = 0x40;
    iobus_access(&bus, NULL, 0x70, 1, &i, 1);
    v = 0x99;
    iobus_access(&bus, NULL, 0x71, 1, &v, 1);
    v = 0;
    iobus_access(&bus, NULL, 0x71, 0, &v, 1);
    cr_assert_eq(v, 0x99, "CMOS RAM keeps what was written");
    iobus_destroy(&bus);
}
