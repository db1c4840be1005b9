/* SPDX-License-Identifier: MIT */
/* QEMU's pc-testdev: the data register by width and offset, the flush port, the scratch memory. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/vm.h"
#include "devices/pc_testdev.h"

static struct vm vm;

static void setup(void)
{
    vm_init(&vm);
    cr_assert_eq(pc_testdev_register(&vm), 0);
}

static void teardown(void)
{
    iobus_destroy(&vm.io);
    vm_fini(&vm);
}

TestSuite(pc_testdev, .init = setup, .fini = teardown);

static uint32_t in(uint16_t port, int size)
{
    uint32_t v = 0;
    iobus_access(&vm.io, NULL, port, 0, (uint8_t *)&v, size);
    return v;
}

static void out(uint16_t port, uint32_t v, int size)
{
    iobus_access(&vm.io, NULL, port, 1, (uint8_t *)&v, size);
}

/* kvm-unit-tests' realmode and emulator I/O tests: what is written is read back, at any width. */
Test(pc_testdev, data_register)
{
    out(0xe0, 0x12345678, 4);
    cr_assert_eq(in(0xe0, 4), 0x12345678);
    cr_assert_eq(in(0xe0, 1), 0x78);
    cr_assert_eq(in(0xe2, 2), 0x1234);
    cr_assert_eq(in(0xe9, 1), 0x56, "the byte-wise window on the same register");
    out(0xe1, 0xab, 1);
    cr_assert_eq(in(0xe0, 4), 0x1234ab78);
    out(0xea, 0xcdef, 2);
    cr_assert_eq(in(0xe0, 4), 0xcdefab78);
    out(0xe4, 0x5000, 4);                   /* flush a page: nothing changes */
    cr_assert_eq(in(0xe4, 4), 0);
    cr_assert_eq(in(0xe0, 4), 0xcdefab78);
}

Test(pc_testdev, scratch_memory)
{
    uint8_t w[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, r[8] = { 0 };
    mmio_access(&vm.mmio, NULL, 0xff00fff8, w, 8, true);
    mmio_access(&vm.mmio, NULL, 0xff00fff8, r, 8, false);
    cr_assert_eq(memcmp(w, r, 8), 0);
    mmio_access(&vm.mmio, NULL, 0xff000000, r, 4, false);
    cr_assert_eq(memcmp(r, "\0\0\0\0", 4), 0);
}
