/* SPDX-License-Identifier: MIT */
/* The window's filters: --cpl and --cr3. */
#include <criterion/criterion.h>

#include "trace/step.h"
#include "trace/window.h"

Test(window, cpl_and_cr3_filters)
{
    struct trace_config c = { .cpl = TRACE_CPL_ALL };
    cr_assert(window_passes(&c, 0, 0x1000));
    cr_assert(window_passes(&c, 3, 0x1000));
    c.cpl = TRACE_CPL_KERNEL;
    cr_assert(window_passes(&c, 0, 0x1000));
    cr_assert_not(window_passes(&c, 3, 0x1000));
    c.cpl = TRACE_CPL_USER;
    cr_assert_not(window_passes(&c, 0, 0x1000));
    cr_assert(window_passes(&c, 1, 0x1000), "CPL1 is not the kernel");
    c = (struct trace_config){ .have_cr3 = true, .cr3 = 0x107000 };
    cr_assert(window_passes(&c, 0, 0x107018), "PCID and flag bits do not count");
    cr_assert_not(window_passes(&c, 0, 0x108000));
}
