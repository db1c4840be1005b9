/* SPDX-License-Identifier: MIT */
/* The MMIO bus: claims, overlaps, dispatch, and what nobody claims. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/error.h"
#include "core/mmio.h"

static void access(struct mmio_device *d, struct vcpu *c, uint64_t off, uint8_t *data,
                   uint32_t len, bool is_write)
{
    (void)c;
    uint8_t *reg = d->opaque;
    if (is_write)
        memcpy(reg + off, data, len);
    else
        memcpy(data, reg + off, len);
}

Test(mmio, dispatch_and_unclaimed)
{
    static uint8_t regs[0x1000];
    struct mmio_bus bus = { 0 };
    struct mmio_device d = { .name = "page", .base = 0xfee00000, .len = 0x1000, .opaque = regs,
                             .access = access };
    cr_assert_eq(mmio_register(&bus, &d), 0);
    uint8_t v[8] = { 1, 2, 3, 4 };
    mmio_access(&bus, NULL, 0xfee00010, v, 4, true);
    cr_assert_eq(regs[0x10], 1);
    memset(v, 0, sizeof(v));
    mmio_access(&bus, NULL, 0xfee00010, v, 4, false);
    cr_assert_eq(v[3], 4);
    mmio_access(&bus, NULL, 0xfed00000, v, 8, false);
    cr_assert_eq(v[7], 0xff, "unclaimed addresses read all ones");
    mmio_access(&bus, NULL, 0xfed00000, v, 64, false);  /* longer than the exit's data: 8 */
}

Test(mmio, overlap_and_wrap)
{
    struct mmio_bus bus = { 0 };
    struct mmio_device a = { .name = "a", .base = 0x1000, .len = 0x1000, .access = access };
    struct mmio_device b = { .name = "b", .base = 0x1800, .len = 0x1000, .access = access };
    struct mmio_device w = { .name = "w", .base = UINT64_MAX - 1, .len = 8, .access = access };
    cr_assert_eq(mmio_register(&bus, &a), 0);
    cr_assert_eq(mmio_register(&bus, &b), -1);
    cr_assert_str_eq(error_last(), "MMIO 0x1800+0x1000 of b overlaps a");
    cr_assert_eq(mmio_register(&bus, &w), -1);
    cr_assert_str_eq(error_last(), "MMIO range of w is empty or wraps");
}
