/* SPDX-License-Identifier: MIT */
/* Host-compat's kernel options: only where the host needs them, with the user's last. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "x86/host.h"
#include "x86/hostcompat.h"

Test(hostcompat, cmdline_only_where_needed)
{
    const char *c = hostcompat_cmdline();
    if (host_is_pvm()) {
        cr_assert_not_null(c);
        cr_assert(strstr(c, "clearcpuid=cx16"), "%s", c);
        cr_assert(strstr(c, "noxsave"), "%s", c);
        cr_assert(strstr(c, "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F"), "%s", c);
    } else {
        cr_assert_null(c);
    }
}

Test(hostcompat, summary_says_nothing_when_nothing_fired)
{
    char buf[256] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    hostcompat_summary(f);
    fclose(f);
    cr_assert_str_eq(buf, "");
}
