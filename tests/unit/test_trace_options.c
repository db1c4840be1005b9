/* SPDX-License-Identifier: MIT */
/* Options of the trace destinations and socket buffers: values and the
 * exact complaint for each bad one. */
#include <criterion/criterion.h>

#include "options.h"

#define ARGV(...) ((char *[]){ "vbts", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "vbts", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(o, err, ...) options_parse(o, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), err, 256)

Test(trace_options, defaults)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "g.bin"), OPT_RUN);
    cr_assert_eq(o.ntraces, 0);
    cr_assert_eq(o.buffer_size, 65536 * 24);
    cr_assert_eq(o.buffer_limit, 0, "0: a quarter of RAM, decided when the sink opens");
    cr_assert_eq(o.overflow, 0, "block: nothing lost unless asked");
    cr_assert_eq(o.linger, 10.0);
}

Test(trace_options, values)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "-t", "a.vbts", "--trace", "unix:/tmp/s", "--trace", "tcp:5000",
                       "--buffer-size", "24K", "--buffer-limit", "1G", "--overflow", "drop",
                       "--linger", "0.5", "g.bin"), OPT_RUN);
    cr_assert_eq(o.ntraces, 3);
    cr_assert_str_eq(o.trace, "a.vbts");
    cr_assert_str_eq(o.traces[1], "unix:/tmp/s");
    cr_assert_str_eq(o.traces[2], "tcp:5000");
    cr_assert_eq(o.buffer_size, 24576);
    cr_assert_eq(o.buffer_limit, 1ull << 30);
    cr_assert_eq(o.overflow, 2);
    cr_assert_eq(o.linger, 0.5);
    cr_assert_eq(PARSE(&o, err, "--overflow", "wrap", "g"), OPT_RUN);
    cr_assert_eq(o.overflow, 1);
}

Test(trace_options, errors)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "--buffer-size", "10", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--buffer-size: 10 is less than one record (24 bytes)");
    cr_assert_eq(PARSE(&o, err, "--buffer-limit", "lots", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--buffer-limit: invalid size 'lots' (use e.g. 1M or 4096)");
    cr_assert_eq(PARSE(&o, err, "--overflow", "Block", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--overflow: 'Block' is not wrap, block or drop");
    cr_assert_eq(PARSE(&o, err, "--linger", "-1", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--linger: '-1' is not a number of seconds (0 to 86400)");
    cr_assert_eq(PARSE(&o, err, "--linger", "1s", "g"), OPT_ERROR);
    cr_assert_eq(PARSE(&o, err, "-t", "1", "-t", "2", "-t", "3", "-t", "4", "-t", "5", "-t", "6",
                       "-t", "7", "-t", "8", "-t", "9", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--trace: at most 8 destinations");
}
