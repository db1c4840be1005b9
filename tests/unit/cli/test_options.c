/* SPDX-License-Identifier: MIT */
/* Command-line parsing: values and the exact complaint for each bad one. */
#include <criterion/criterion.h>

#include "cli/options.h"
#include "core/parse.h"

static enum opt_result parse(struct vbts_options *o, char *err, int argc, char **argv)
{
    return options_parse(o, argc, argv, err, 256);
}

#define ARGV(...) ((char *[]){ "vbts", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "vbts", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(o, err, ...) parse(o, err, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

Test(options, defaults)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "g.bin"), OPT_RUN);
    cr_assert_eq(o.memory, 256ull << 20);
    cr_assert_str_eq(o.append, "");
    cr_assert_null(o.trace);
    cr_assert_str_eq(o.kvm_path, "/dev/kvm");
    cr_assert_str_eq(o.guest, "g.bin");
}

Test(options, values)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "--memory", "1G", "--append", "a b", "-t", "x.vbts", "g"), OPT_RUN);
    cr_assert_eq(o.memory, 1ull << 30);
    cr_assert_str_eq(o.append, "a b");
    cr_assert_str_eq(o.trace, "x.vbts");
}

Test(options, sizes)
{
    uint64_t v;
    cr_assert_eq(parse_size("64M", &v), 0);
    cr_assert_eq(v, 64ull << 20);
    cr_assert_eq(parse_size("2GiB", &v), 0);
    cr_assert_eq(v, 2ull << 30);
    cr_assert_eq(parse_size("4096", &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(parse_size("", &v), -1);
    cr_assert_eq(parse_size("-1M", &v), -1);
    cr_assert_eq(parse_size("12Q", &v), -1);
    cr_assert_eq(parse_size("99999999999999999999", &v), -1);
    cr_assert_eq(parse_size("17179869184G", &v), -1);
}

Test(options, errors)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "--memory", "lots", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--memory: invalid size 'lots' (use e.g. 64M or 2G)");
    cr_assert_eq(PARSE(&o, err, "--memory", "1M", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--memory: 1M is out of range (2M to 1T)");
    cr_assert_eq(PARSE(&o, err, "--bogus", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "unknown option '--bogus'");
    cr_assert_eq(PARSE(&o, err, "-z", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "unknown option '-z'");
    cr_assert_eq(PARSE(&o, err, "--trace"), OPT_ERROR);
    cr_assert_str_eq(err, "option '--trace' needs a value");
    cr_assert_eq(PARSE(&o, err, "--memory", "64M"), OPT_ERROR);
    cr_assert_str_eq(err, "no GUEST image given");
    cr_assert_eq(PARSE(&o, err, "a", "b"), OPT_ERROR);
    cr_assert_str_eq(err, "unexpected argument 'b' after GUEST");
    cr_assert_eq(PARSE(&o, err, "--help"), OPT_HELP);
    cr_assert_eq(PARSE(&o, err, "--version"), OPT_VERSION);
}

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

Test(options, gdb)
{
    struct vbts_options o;
    char err[256];
    cr_assert_eq(PARSE(&o, err, "g"), OPT_RUN);
    cr_assert_null(o.gdb);
    cr_assert_not(o.gdb_wait);
    cr_assert_eq(PARSE(&o, err, "-S", "--gdb", "1234", "g"), OPT_RUN);
    cr_assert_str_eq(o.gdb, "1234");
    cr_assert(o.gdb_wait);
    cr_assert_eq(PARSE(&o, err, "-S", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "-S waits for gdb: it needs --gdb [HOST:]PORT");
    cr_assert_eq(PARSE(&o, err, "--gdb", "", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--gdb: empty address (use [HOST:]PORT)");
    cr_assert_eq(PARSE(&o, err, "--gdb"), OPT_ERROR);
    cr_assert_str_eq(err, "option '--gdb' needs a value");
    cr_assert_eq(PARSE(&o, err, "--gdb", "1", "g"), OPT_RUN);
    cr_assert_eq(o.gdb_arch, -1, "from the image");
    cr_assert_eq(PARSE(&o, err, "--gdb", "1", "--gdb-arch", "x86-64", "g"), OPT_RUN);
    cr_assert_eq(o.gdb_arch, 1);
    cr_assert_eq(PARSE(&o, err, "--gdb", "1", "--gdb-arch", "i386", "g"), OPT_RUN);
    cr_assert_eq(o.gdb_arch, 0);
    cr_assert_eq(PARSE(&o, err, "--gdb", "1", "--gdb-arch", "amd64", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--gdb-arch: 'amd64' is not i386 or x86-64");
    cr_assert_eq(PARSE(&o, err, "--gdb-arch", "i386", "g"), OPT_ERROR);
    cr_assert_str_eq(err, "--gdb-arch is gdb's: it needs --gdb [HOST:]PORT");
}
