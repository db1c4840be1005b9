/* SPDX-License-Identifier: MIT */
/* Numbers from the command line: what is accepted, and that nothing else is. */
#include <criterion/criterion.h>

#include "core/parse.h"

Test(parse, sizes)
{
    uint64_t b;
    cr_assert_eq(parse_size("64M", &b), 0);
    cr_assert_eq(b, 64ull << 20);
    cr_assert_eq(parse_size("2GiB", &b), 0);
    cr_assert_eq(b, 2ull << 30);
    cr_assert_eq(parse_size("1048576", &b), 0);
    cr_assert_eq(b, 1048576);
    cr_assert_eq(parse_size("3kb", &b), 0);
    cr_assert_eq(b, 3072);
    const char *bad[] = { "", "-1", "+1", " 1", "1X", "1MM", "16777216T", "1iB", "0x10" };
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(parse_size(bad[i], &b), -1, "'%s' accepted", bad[i]);
    cr_assert_eq(parse_size(NULL, &b), -1);
}

Test(parse, u64)
{
    uint64_t v;
    cr_assert_eq(parse_u64("0x10", &v), 0);
    cr_assert_eq(v, 16);
    cr_assert_eq(parse_u64("18446744073709551615", &v), 0);
    cr_assert_eq(v, UINT64_MAX);
    const char *bad[] = { "", "-5", "0x", "12a", "18446744073709551616", "1 " };
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(parse_u64(bad[i], &v), -1, "'%s' accepted", bad[i]);
}
