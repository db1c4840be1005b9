/* SPDX-License-Identifier: MIT */
/* The ACPI tables of a Linux guest: checksums, the MADT's CPUs and I/O APIC, \_S5. */
#define _GNU_SOURCE            /* memmem */
#include <criterion/criterion.h>
#include <string.h>

#include "core/gmem.h"
#include "vbts/le.h"
#include "x86/acpi.h"

static struct gmem mem;

static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 64u << 20), 0);
}

static void teardown(void)
{
    gmem_fini(&mem);
}

static uint8_t sum(const uint8_t *p, size_t n)
{
    uint8_t s = 0;
    while (n--)
        s += *p++;
    return s;
}

TestSuite(acpi, .init = setup, .fini = teardown);

Test(acpi, tables_are_consistent)
{
    uint64_t rsdp = acpi_build(&mem, 3);
    cr_assert_eq(rsdp, ACPI_TABLES_ADDR);
    const uint8_t *r = gmem_ptr(&mem, rsdp, 36);
    cr_assert_eq(memcmp(r, "RSD PTR ", 8), 0);
    cr_assert_eq(sum(r, 20), 0);
    cr_assert_eq(sum(r, 36), 0);
    const uint8_t *x = gmem_ptr(&mem, vbts_le64(r + 24), 52);
    cr_assert_eq(memcmp(x, "XSDT", 4), 0);
    cr_assert_eq(sum(x, vbts_le32(x + 4)), 0);
    int cpus = 0, ioapics = 0;
    bool have_s5 = false;
    for (int i = 0; i < 2; i++) {
        const uint8_t *t = gmem_ptr(&mem, vbts_le64(x + 36 + 8 * i), 36);
        uint32_t len = vbts_le32(t + 4);
        t = gmem_ptr(&mem, vbts_le64(x + 36 + 8 * i), len);
        cr_assert_eq(sum(t, len), 0, "%.4s checksum", (const char *)t);
        if (!memcmp(t, "APIC", 4)) {
            for (uint32_t o = 44; o < len; o += t[o + 1]) {
                cpus += t[o] == 0 && (vbts_le32(t + o + 4) & 1);
                ioapics += t[o] == 1;
            }
        } else if (!memcmp(t, "FACP", 4)) {
            cr_assert_eq(vbts_le32(t + 64), ACPI_PM1A_CNT_PORT);
            const uint8_t *d = gmem_ptr(&mem, vbts_le64(t + 140), 36);
            cr_assert_eq(memcmp(d, "DSDT", 4), 0);
            d = gmem_ptr(&mem, vbts_le64(t + 140), vbts_le32(d + 4));
            cr_assert_eq(sum(d, vbts_le32(d + 4)), 0);
            have_s5 = memmem(d, vbts_le32(d + 4), "_S5_", 4) != NULL;
        }
    }
    cr_assert_eq(cpus, 3);
    cr_assert_eq(ioapics, 1);
    cr_assert(have_s5);
}

