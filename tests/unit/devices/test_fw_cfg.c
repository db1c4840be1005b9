/* SPDX-License-Identifier: MIT */
/* fw_cfg: every item byte for byte, the directory, and what a key without an item reads. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/error.h"
#include "core/iobus.h"
#include "devices/fw_cfg.h"

static struct iobus bus;

static void select_key(uint16_t key)
{
    uint8_t b[2] = { (uint8_t)key, (uint8_t)(key >> 8) };
    iobus_access(&bus, NULL, 0x510, 1, b, 2);
}

static void read_bytes(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        iobus_access(&bus, NULL, 0x511, 0, &out[i], 1);
}

/* The first n bytes of the item at key are want's. */
static void expect(uint16_t key, const char *want, size_t n)
{
    uint8_t b[16];
    select_key(key);
    read_bytes(b, n);
    cr_assert_eq(memcmp(b, want, n), 0, "key 0x%x", key);
}

static void setup(void)
{
    static const struct fw_cfg_file files[2] = {
        { "etc/zz", "abc", 3 },
        { "etc/e820", "\x01\x02", 2 },
    };
    struct fw_cfg_config c = { .ncpus = 3, .ram_size = 0x12345678abull, .files = files, .nfiles = 2 };
    memset(&bus, 0, sizeof(bus));
    cr_assert_eq(fw_cfg_register(&bus, &c), 0, "%s", error_last());
}

static void teardown(void)
{
    iobus_destroy(&bus);
}

TestSuite(fw_cfg, .init = setup, .fini = teardown);

Test(fw_cfg, signature_first_then_zeros)
{
    uint8_t b[6];
    read_bytes(b, 6);       /* selected at reset, as QEMU's */
    cr_assert_eq(memcmp(b, "QEMU\0\0", 6), 0);
    select_key(FW_CFG_SIGNATURE);
    uint8_t c;
    iobus_access(&bus, NULL, 0x510, 0, &c, 1);     /* 0x510 reads data too, byte-wide */
    cr_assert_eq(c, 'Q');
    read_bytes(b, 3);
    cr_assert_eq(memcmp(b, "EMU", 3), 0);
}

Test(fw_cfg, integers_little_endian)
{
    expect(FW_CFG_ID, "\x01\0\0\0", 4);                  /* the port interface, no DMA */
    expect(FW_CFG_NB_CPUS, "\x03\0\0", 3);
    expect(FW_CFG_MAX_CPUS, "\x03\0", 2);
    expect(FW_CFG_RAM_SIZE, "\xab\x78\x56\x34\x12\0\0\0", 8);
    expect(FW_CFG_NOGRAPHIC, "\x01\0", 2);
    expect(FW_CFG_UUID, "\0\0\0\0\0\0\0\0", 8);
}

Test(fw_cfg, file_directory_big_endian_by_name)
{
    uint8_t d[4 + 2 * 64 + 1];
    select_key(FW_CFG_FILE_DIR);
    read_bytes(d, sizeof(d));
    cr_assert_eq(memcmp(d, "\0\0\0\x02", 4), 0, "count");
    cr_assert_eq(memcmp(d + 4, "\0\0\0\x02\0\x20\0\0", 8), 0, "size, key, reserved");
    cr_assert_str_eq((char *)d + 12, "etc/e820");
    cr_assert_eq(memcmp(d + 68, "\0\0\0\x03\0\x21\0\0", 8), 0);
    cr_assert_str_eq((char *)d + 76, "etc/zz");
    cr_assert_eq(d[4 + 128], 0, "nothing after the last entry");
    expect(0x21, "abc\0", 4);
    expect(0x20 | 0x4000, "\x01\x02", 2);     /* the write channel bit: the same item */
}

/* QEMU answers a key it has no item for with zeros, arch-local ones included. */
Test(fw_cfg, unknown_keys_read_zero)
{
    static const uint16_t keys[] = { 0x11, 0x22, 0x3fff, 0x8000, 0x8002, 0xffff };
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        expect(keys[k], "\0\0\0\0", 4);
}

/* Byte writes (the dropped write interface) and wider accesses change nothing; wide reads give 0. */
Test(fw_cfg, other_accesses_do_nothing)
{
    select_key(FW_CFG_SIGNATURE);
    uint8_t w = 0x05, b[4] = { 1, 1, 1, 1 };
    iobus_access(&bus, NULL, 0x510, 1, &w, 1);
    iobus_access(&bus, NULL, 0x511, 1, &w, 1);
    uint8_t l[4] = { 0x05, 0, 0, 0 };
    iobus_access(&bus, NULL, 0x510, 1, l, 4);
    iobus_access(&bus, NULL, 0x511, 1, l, 2);
    iobus_access(&bus, NULL, 0x511, 0, b, 2);
    cr_assert_eq(memcmp(b, "\0\0\x01\x01", 4), 0);
    iobus_access(&bus, NULL, 0x510, 0, b, 4);
    cr_assert_eq(memcmp(b, "\0\0\0\0", 4), 0);
    read_bytes(b, 4);
    cr_assert_eq(memcmp(b, "QEMU", 4), 0, "still the signature, from its first byte");
}

Test(fw_cfg, bad_files_refused)
{
    struct iobus b2 = { 0 };
    struct fw_cfg_file f = { "", "x", 1 };
    struct fw_cfg_config c = { .ncpus = 1, .files = &f, .nfiles = 1 };
    cr_assert_eq(fw_cfg_register(&b2, &c), -1);
    cr_assert_str_eq(error_last(), "fw_cfg: file name '' is empty or too long");
    c.nfiles = FW_CFG_MAX_FILES + 1;
    cr_assert_eq(fw_cfg_register(&b2, &c), -1);
    cr_assert_str_eq(error_last(), "fw_cfg: 9 files (at most 8)");
    cr_assert_eq(b2.n, 0);
}
