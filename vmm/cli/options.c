/* SPDX-License-Identifier: MIT */
#include "cli/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"

#define MIN_MEMORY (2ull << 20)      /* images load at 1 MiB */
#define MAX_CPUS    64               /* APIC IDs stay 8-bit; far beyond what this host runs */
#define MAX_MEMORY (1ull << 40)      /* 1 TiB: beyond any guest this host can back */

/* The index of `arg` among `names` (NULL-terminated), or -1. */
static int choice(const char *arg, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(arg, names[i]))
            return i;
    return -1;
}

enum { OPT_KVM = 256, OPT_VERSION_, OPT_NO_GUEST_BTS, OPT_SYMBOLS, OPT_TRACE_START,
       OPT_TRACE_STOP, OPT_MAX_BRANCHES, OPT_CPL, OPT_CR3, OPT_VERIFY_FLOW, OPT_STOP_AFTER,
       OPT_CPUS, OPT_INITRD, OPT_BUFFER_SIZE, OPT_BUFFER_LIMIT, OPT_OVERFLOW, OPT_LINGER, OPT_FORCE,
       OPT_USER, OPT_GROUP, OPT_SANDBOX, OPT_NO_SECCOMP, OPT_GDB, OPT_ENGINE, OPT_GDB_ARCH, OPT_STATS };

static const struct option longopts[] = {
    { "memory", required_argument, NULL, 'm' },
    { "append", required_argument, NULL, 'a' },
    { "trace", required_argument, NULL, 't' },
    { "kvm", required_argument, NULL, OPT_KVM },
    { "no-guest-bts", no_argument, NULL, OPT_NO_GUEST_BTS },
    { "symbols", required_argument, NULL, OPT_SYMBOLS },
    { "trace-start", required_argument, NULL, OPT_TRACE_START },
    { "trace-stop", required_argument, NULL, OPT_TRACE_STOP },
    { "max-branches", required_argument, NULL, OPT_MAX_BRANCHES },
    { "cpl", required_argument, NULL, OPT_CPL },
    { "cr3", required_argument, NULL, OPT_CR3 },
    { "verify-flow", no_argument, NULL, OPT_VERIFY_FLOW },
    { "stats", no_argument, NULL, OPT_STATS },
    { "engine", required_argument, NULL, OPT_ENGINE },
    { "stop-after-trace", no_argument, NULL, OPT_STOP_AFTER },
    { "buffer-size", required_argument, NULL, OPT_BUFFER_SIZE },
    { "buffer-limit", required_argument, NULL, OPT_BUFFER_LIMIT },
    { "overflow", required_argument, NULL, OPT_OVERFLOW },
    { "linger", required_argument, NULL, OPT_LINGER },
    { "force", no_argument, NULL, OPT_FORCE },
    { "cpus", required_argument, NULL, OPT_CPUS },
    { "initrd", required_argument, NULL, OPT_INITRD },
    { "user", required_argument, NULL, OPT_USER },
    { "group", required_argument, NULL, OPT_GROUP },
    { "sandbox", no_argument, NULL, OPT_SANDBOX },
    { "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
    { "gdb", required_argument, NULL, OPT_GDB },
    { "gdb-arch", required_argument, NULL, OPT_GDB_ARCH },
    { "quiet", no_argument, NULL, 'q' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, OPT_VERSION_ },
    { 0 },
};

/* Options without a value, and those whose value is taken as it is: 1 if c is one. */
static int plain(struct vbts_options *o, int c, const char *arg)
{
    switch (c) {
    case 'a': o->append = arg; return 1;
    case OPT_KVM: o->kvm_path = arg; return 1;
    case OPT_FORCE: o->force = true; return 1;
    case OPT_NO_GUEST_BTS: o->guest_bts = false; return 1;
    case OPT_SYMBOLS: o->symbols = arg; return 1;
    case OPT_TRACE_START: o->trace_start = arg; return 1;
    case OPT_TRACE_STOP: o->trace_stop = arg; return 1;
    case OPT_VERIFY_FLOW: o->verify_flow = true; return 1;
    case OPT_STATS: o->stats = true; return 1;
    case OPT_STOP_AFTER: o->stop_after_trace = true; return 1;
    case OPT_USER: o->user = arg; return 1;
    case OPT_GROUP: o->group = arg; return 1;
    case OPT_SANDBOX: o->sandbox = true; return 1;
    case OPT_NO_SECCOMP: o->no_seccomp = true; return 1;
    case 'S': o->gdb_wait = true; return 1;
    case 'q': o->quiet = true; return 1;
    default: return 0;
    }
}

/* Names and choices among words: 0, -1 with err set, 1 if c is none of them. */
static int words(struct vbts_options *o, int c, const char *arg, char *err, size_t errlen)
{
    static const char *const cpls[] = { "all", "kernel", "user", NULL };
    static const char *const engines[] = { "step", "branch", NULL };     /* enum trace_engine's order */
    static const char *const modes[] = { "block", "wrap", "drop", NULL };
    static const char *const arches[] = { "i386", "x86-64", NULL };       /* enum gdb_arch's order */
    switch (c) {
    case 't':
        if (!*arg)
            return snprintf(err, errlen, "--trace: empty file name"), -1;
        if (o->ntraces == VBTS_MAX_TRACES)
            return snprintf(err, errlen, "--trace: at most %d destinations", VBTS_MAX_TRACES), -1;
        o->traces[o->ntraces++] = arg;
        if (!o->trace)
            o->trace = arg;
        return 0;
    case OPT_INITRD:
        if (!*arg)
            return snprintf(err, errlen, "--initrd: empty file name"), -1;
        o->initrd = arg;
        return 0;
    case OPT_GDB:
        if (!*arg)
            return snprintf(err, errlen, "--gdb: empty address (use [HOST:]PORT)"), -1;
        o->gdb = arg;
        return 0;
    case OPT_CPL:
        if ((o->cpl = choice(arg, cpls)) < 0)
            return snprintf(err, errlen, "--cpl: '%s' is not kernel, user or all", arg), -1;
        return 0;
    case OPT_ENGINE:
        if ((o->engine = choice(arg, engines)) < 0)
            return snprintf(err, errlen, "--engine: '%s' is not step or branch", arg), -1;
        return 0;
    case OPT_OVERFLOW:
        if ((o->overflow = choice(arg, modes)) < 0)
            return snprintf(err, errlen, "--overflow: '%s' is not wrap, block or drop", arg), -1;
        return 0;
    case OPT_GDB_ARCH:
        if ((o->gdb_arch = choice(arg, arches)) < 0)
            return snprintf(err, errlen, "--gdb-arch: '%s' is not i386 or x86-64", arg), -1;
        return 0;
    default:
        return 1;
    }
}

/* Sizes and counts: 0, -1 with err set, 1 if c is none of them. */
static int numbers(struct vbts_options *o, int c, const char *arg, char *err, size_t errlen)
{
    uint64_t v;
    switch (c) {
    case 'm':
        if (parse_size(arg, &o->memory) < 0)
            return snprintf(err, errlen, "--memory: invalid size '%s' (use e.g. 64M or 2G)", arg), -1;
        if (o->memory < MIN_MEMORY || o->memory > MAX_MEMORY)
            return snprintf(err, errlen, "--memory: %s is out of range (2M to 1T)", arg), -1;
        return 0;
    case OPT_MAX_BRANCHES:
        if (parse_u64(arg, &o->max_branches) < 0 || o->max_branches == 0)
            return snprintf(err, errlen, "--max-branches: '%s' is not a positive number", arg), -1;
        return 0;
    case OPT_CR3:
        if (!strcmp(arg, "start"))
            o->cr3_start = true;
        else if (parse_u64(arg, &o->cr3) < 0)
            return snprintf(err, errlen, "--cr3: '%s' is not a number or start", arg), -1;
        o->have_cr3 = true;
        return 0;
    case OPT_BUFFER_SIZE:
    case OPT_BUFFER_LIMIT: {
        const char *name = c == OPT_BUFFER_SIZE ? "--buffer-size" : "--buffer-limit";
        if (parse_size(arg, &v) < 0)
            return snprintf(err, errlen, "%s: invalid size '%s' (use e.g. 1M or 4096)", name, arg), -1;
        if (v < 24)
            return snprintf(err, errlen, "%s: %s is less than one record (24 bytes)", name, arg), -1;
        *(c == OPT_BUFFER_SIZE ? &o->buffer_size : &o->buffer_limit) = v;
        return 0;
    }
    case OPT_LINGER: {
        char *end;
        errno = 0;
        double d = strtod(arg, &end);
        if (!*arg || *end || errno || !(d >= 0 && d <= 86400))
            return snprintf(err, errlen, "--linger: '%s' is not a number of seconds (0 to 86400)", arg), -1;
        o->linger = d;
        return 0;
    }
    case OPT_CPUS:
        if (parse_u64(arg, &v) < 0 || v < 1 || v > MAX_CPUS)
            return snprintf(err, errlen, "--cpus: '%s' is not a number from 1 to %d", arg, MAX_CPUS), -1;
        o->cpus = (int)v;
        o->have_cpus = true;
        return 0;
    default:
        return 1;
    }
}

/* One option getopt_long returned: OPT_RUN to go on, or what to do instead. */
static enum opt_result one(struct vbts_options *o, int c, char **argv, char *err, size_t errlen)
{
    int r;
    if (plain(o, c, optarg))
        return OPT_RUN;
    if ((r = words(o, c, optarg, err, errlen)) != 1 || (r = numbers(o, c, optarg, err, errlen)) != 1)
        return r < 0 ? OPT_ERROR : OPT_RUN;
    switch (c) {
    case 'h':
        return OPT_HELP;
    case OPT_VERSION_:
        return OPT_VERSION;
    case ':':
        snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
        return OPT_ERROR;
    default:
        if (optopt)
            snprintf(err, errlen, "unknown option '-%c'", optopt);
        else
            snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
        return OPT_ERROR;
    }
}

enum opt_result options_parse(struct vbts_options *o, int argc, char **argv,
                              char *err, size_t errlen)
{
    *o = (struct vbts_options){ .memory = 256ull << 20, .append = "", .kvm_path = "/dev/kvm",
                                 .guest_bts = true, .cpus = 1, .engine = -1, .gdb_arch = -1,
                                 .buffer_size = VBTS_DEFAULT_BUFFER,
                                 .linger = VBTS_DEFAULT_LINGER };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:m:a:t:qhS", longopts, NULL)) != -1) {
        enum opt_result r = one(o, c, argv, err, errlen);
        if (r != OPT_RUN)
            return r;
    }
    if (optind >= argc) {
        snprintf(err, errlen, "no GUEST image given");
        return OPT_ERROR;
    }
    if (optind + 1 < argc) {
        snprintf(err, errlen, "unexpected argument '%s' after GUEST", argv[optind + 1]);
        return OPT_ERROR;
    }
    if (o->gdb_wait && !o->gdb) {
        snprintf(err, errlen, "-S waits for gdb: it needs --gdb [HOST:]PORT");
        return OPT_ERROR;
    }
    if (o->gdb_arch >= 0 && !o->gdb) {
        snprintf(err, errlen, "--gdb-arch is gdb's: it needs --gdb [HOST:]PORT");
        return OPT_ERROR;
    }
    o->guest = argv[optind];
    return OPT_RUN;
}
