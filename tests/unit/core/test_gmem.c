/* SPDX-License-Identifier: MIT */
/* Guest memory bounds and the page-table walker the tracer reads code through. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/gmem.h"

static struct gmem mem;

static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 8u << 20), 0);
}

static void teardown(void)
{
    gmem_fini(&mem);
}

TestSuite(gmem, .init = setup, .fini = teardown);

Test(gmem, bounds)
{
    cr_assert_not_null(gmem_ptr(&mem, 0, 8u << 20));
    cr_assert_null(gmem_ptr(&mem, 1, 8u << 20));
    cr_assert_null(gmem_ptr(&mem, (8u << 20) - 1, 2));
    cr_assert_null(gmem_ptr(&mem, UINT64_MAX, 2));
    cr_assert_null(gmem_ptr(&mem, 16, UINT64_MAX));
    cr_assert_null(gmem_ptr(&mem, GMEM_HIGH_BASE, 1));
    cr_assert_null(gmem_ptr(&mem, 0, 0));
}

Test(gmem, high_ram_above_hole)
{
    struct gmem big;
    cr_assert_eq(gmem_init(&big, GMEM_LOW_LIMIT + 4096), 0);
    cr_assert_eq(gmem_high_size(&big), 4096);
    cr_assert_null(gmem_ptr(&big, GMEM_LOW_LIMIT, 1));
    cr_assert_eq((uint8_t *)gmem_ptr(&big, GMEM_HIGH_BASE, 4096), big.host + GMEM_LOW_LIMIT);
    cr_assert_null(gmem_ptr(&big, GMEM_HIGH_BASE + 1, 4096));
    gmem_fini(&big);
}

static void put64(uint64_t gpa, uint64_t v)
{
    memcpy(gmem_ptr(&mem, gpa, 8), &v, 8);
}

Test(gmem, four_level_walk)
{
    /* PML4 0x1000 -> PDPT 0x2000 -> PD 0x3000 -> 2 MiB page at 0x400000 and PT 0x4000 */
    put64(0x1000, 0x2000 | 3);
    put64(0x2000, 0x3000 | 3);
    put64(0x3000, 0x400000 | 0x83);
    put64(0x3008, 0x4000 | 3);
    put64(0x4000 + 5 * 8, 0x7000 | 3);
    struct gmem_paging pg = { .cr0 = 0x80000001, .cr3 = 0x1000, .cr4 = 0x20, .efer = 0x500 };
    uint64_t gpa;
    cr_assert_eq(gmem_translate(&mem, &pg, 0x12345, &gpa), GMEM_OK);
    cr_assert_eq(gpa, 0x412345);
    cr_assert_eq(gmem_translate(&mem, &pg, 0x205123, &gpa), GMEM_OK);
    cr_assert_eq(gpa, 0x7123);
    cr_assert_eq(gmem_translate(&mem, &pg, 0x206000, &gpa), GMEM_NOT_PRESENT);
    cr_assert_eq(gmem_translate(&mem, &pg, 0x800000000000ull, &gpa), GMEM_NON_CANONICAL);
    /* A table pointer outside RAM is refused, not followed. */
    put64(0x3010, 0x7fff000000ull | 3);
    cr_assert_eq(gmem_translate(&mem, &pg, 0x400000, &gpa), GMEM_NOT_RAM);
}

Test(gmem, read_linear_crosses_pages)
{
    put64(0x1000, 0x2000 | 3);
    put64(0x2000, 0x3000 | 3);
    put64(0x3000, 0x4000 | 3);
    put64(0x4000, 0x6000 | 3);          /* linear page 0 -> 0x6000 */
    put64(0x4008, 0x5000 | 3);          /* linear page 1 -> 0x5000 */
    memcpy(gmem_ptr(&mem, 0x6ffe, 2), "ab", 2);
    memcpy(gmem_ptr(&mem, 0x5000, 2), "cd", 2);
    struct gmem_paging pg = { .cr0 = 0x80000001, .cr3 = 0x1000, .cr4 = 0x20, .efer = 0x500 };
    char buf[5] = { 0 };
    cr_assert_eq(gmem_read_linear(&mem, &pg, 0xffe, buf, 4), GMEM_OK);
    cr_assert_str_eq(buf, "abcd");
    cr_assert_eq(gmem_read_linear(&mem, &pg, 0x1ffe, buf, 4), GMEM_NOT_PRESENT);
}

Test(gmem, legacy_32bit_and_pae)
{
    struct gmem_paging none = { .cr0 = 1 };
    uint64_t gpa;
    cr_assert_eq(gmem_translate(&mem, &none, 0x123456789ull, &gpa), GMEM_OK);
    cr_assert_eq(gpa, 0x23456789);
    /* 32-bit paging with a 4 MiB page */
    uint32_t pde = 0x400000 | 0x83;
    memcpy(gmem_ptr(&mem, 0x1000 + 4, 4), &pde, 4);
    struct gmem_paging p32 = { .cr0 = 0x80000001, .cr3 = 0x1000, .cr4 = 0x10 };
    cr_assert_eq(gmem_translate(&mem, &p32, 0x400123, &gpa), GMEM_OK);
    cr_assert_eq(gpa, 0x400123);
    /* PAE: PDPT at 0x2000 -> PD 0x3000 -> 2 MiB page 0x600000 */
    put64(0x2000, 0x3000 | 1);
    put64(0x3000, 0x600000 | 0x83);
    struct gmem_paging pae = { .cr0 = 0x80000001, .cr3 = 0x2000, .cr4 = 0x20 };
    cr_assert_eq(gmem_translate(&mem, &pae, 0x1234, &gpa), GMEM_OK);
    cr_assert_eq(gpa, 0x601234);
}
