/* SPDX-License-Identifier: MIT */
/* The port bus: claims, overlaps, dispatch, and what nobody claims. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/error.h"
#include "core/iobus.h"

static uint16_t last_off;
static uint8_t last_out;

static void dev_in(struct io_device *d, struct vcpu *c, uint16_t off, uint8_t *data, int size)
{
    (void)d;
    (void)c;
    memset(data, 0x40 + off, (size_t)size);
}

static void dev_out(struct io_device *d, struct vcpu *c, uint16_t off, const uint8_t *data, int size)
{
    (void)d;
    (void)c;
    (void)size;
    last_off = off;
    last_out = data[0];
}

Test(iobus, dispatch_and_unclaimed)
{
    struct iobus bus = { 0 };
    struct io_device d = { .name = "dev", .base = 0x100, .len = 4, .in = dev_in, .out = dev_out };
    cr_assert_eq(iobus_register(&bus, &d), 0);
    uint8_t v[4] = { 0 };
    iobus_access(&bus, NULL, 0x102, 0, v, 1);
    cr_assert_eq(v[0], 0x42);
    v[0] = 7;
    iobus_access(&bus, NULL, 0x103, 1, v, 1);
    cr_assert_eq(last_off, 3);
    cr_assert_eq(last_out, 7);
    iobus_access(&bus, NULL, 0x104, 0, v, 2);
    cr_assert_eq(v[0], 0xff, "unclaimed ports read all ones");
    cr_assert_eq(v[1], 0xff);
}

Test(iobus, overlap_and_full)
{
    struct iobus bus = { 0 };
    static struct io_device d[IOBUS_MAX_DEVICES + 1];
    d[0] = (struct io_device){ .name = "a", .base = 0x10, .len = 8 };
    cr_assert_eq(iobus_register(&bus, &d[0]), 0);
    struct io_device o = { .name = "b", .base = 0x17, .len = 2 };
    cr_assert_eq(iobus_register(&bus, &o), -1);
    cr_assert_str_eq(error_last(), "I/O ports 0x17-0x18 of b overlap a");
    for (int i = 1; i < IOBUS_MAX_DEVICES; i++) {
        d[i] = (struct io_device){ .name = "x", .base = (uint16_t)(0x100 + i), .len = 1 };
        cr_assert_eq(iobus_register(&bus, &d[i]), 0);
    }
    d[IOBUS_MAX_DEVICES] = (struct io_device){ .name = "last", .base = 0x400, .len = 1 };
    cr_assert_eq(iobus_register(&bus, &d[IOBUS_MAX_DEVICES]), -1);
    cr_assert_str_eq(error_last(), "I/O bus full registering last");
}
