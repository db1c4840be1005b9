/* SPDX-License-Identifier: MIT */
/* The trace window from options: triggers by address or symbol, and what needs --trace. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "core/error.h"
#include "trace/trace.h"

Test(config, window_and_filters)
{
    struct trace_config c;
    struct trace_options o = { .trace = true };
    cr_assert_eq(trace_config_build(&c, &o), 0);
    cr_assert_eq(atomic_load(&c.window), WINDOW_OPEN, "no start trigger: open from the start");
    o.start = "0x100088";
    o.max_branches = 5;
    o.cpl = TRACE_CPL_KERNEL;
    cr_assert_eq(trace_config_build(&c, &o), 0);
    cr_assert_eq(atomic_load(&c.window), WINDOW_WAITING);
    cr_assert_eq(c.start, 0x100088);
    cr_assert_eq(c.max_branches, 5);
    cr_assert_eq(c.cpl, TRACE_CPL_KERNEL);
}

Test(config, symbols_and_errors)
{
    char path[] = "/tmp/vbts-test-map.XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "ffffffff81000000 T startup_64\nffffffff81234560 T start_kernel\n");
    fclose(f);
    struct trace_config c;
    struct trace_options o = { .trace = true, .symbols = path, .start = "start_kernel",
                               .stop = "0x10" };
    cr_assert_eq(trace_config_build(&c, &o), 0, "%s", error_last());
    cr_assert_eq(c.start, 0xffffffff81234560ull);
    cr_assert_eq(c.stop, 0x10);
    o.start = "no_such";
    cr_assert_eq(trace_config_build(&c, &o), -1);
    char want[256];
    snprintf(want, sizeof(want), "--trace-start: symbol 'no_such' not found in %s", path);
    cr_assert_str_eq(error_last(), want);
    unlink(path);
    o = (struct trace_options){ .trace = true, .start = "main64" };
    cr_assert_eq(trace_config_build(&c, &o), -1);
    cr_assert_str_eq(error_last(), "--trace-start: 'main64' is not an address and no --symbols file was given");
    o = (struct trace_options){ .verify_flow = true };
    cr_assert_eq(trace_config_build(&c, &o), -1);
    cr_assert_str_eq(error_last(), "--trace-start, --trace-stop, --max-branches, --cpl, --cr3, --verify-flow and --stop-after-trace need --trace");
    o = (struct trace_options){ .trace = true, .stop_after = true };
    cr_assert_eq(trace_config_build(&c, &o), -1);
    cr_assert_str_eq(error_last(), "--stop-after-trace needs --trace-stop or --max-branches");
}
