/* SPDX-License-Identifier: MIT */
/* Command-line parsing: values and the exact complaint for each bad one. */
#include <criterion/criterion.h>

#include "options.h"

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
    cr_assert_eq(options_parse_size("64M", &v), 0);
    cr_assert_eq(v, 64ull << 20);
    cr_assert_eq(options_parse_size("2GiB", &v), 0);
    cr_assert_eq(v, 2ull << 30);
    cr_assert_eq(options_parse_size("4096", &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(options_parse_size("", &v), -1);
    cr_assert_eq(options_parse_size("-1M", &v), -1);
    cr_assert_eq(options_parse_size("12Q", &v), -1);
    cr_assert_eq(options_parse_size("99999999999999999999", &v), -1);
    cr_assert_eq(options_parse_size("17179869184G", &v), -1);
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
