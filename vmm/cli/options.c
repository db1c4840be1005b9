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

enum opt_result options_parse(struct vbts_options *o, int argc, char **argv,
                              char *err, size_t errlen)
{
    enum { OPT_KVM = 256, OPT_VERSION_, OPT_NO_GUEST_BTS, OPT_SYMBOLS, OPT_TRACE_START,
           OPT_TRACE_STOP, OPT_MAX_BRANCHES, OPT_CPL, OPT_CR3, OPT_VERIFY_FLOW, OPT_STOP_AFTER,
           OPT_CPUS, OPT_INITRD, OPT_BUFFER_SIZE, OPT_BUFFER_LIMIT, OPT_OVERFLOW, OPT_LINGER, OPT_FORCE };
    enum { OPT_USER = 512, OPT_GROUP, OPT_SANDBOX, OPT_NO_SECCOMP, OPT_GDB, OPT_ENGINE };
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
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, OPT_VERSION_ },
        { 0 },
    };
    *o = (struct vbts_options){ .memory = 256ull << 20, .append = "", .kvm_path = "/dev/kvm",
                                 .guest_bts = true, .cpus = 1, .engine = -1,
                                 .buffer_size = VBTS_DEFAULT_BUFFER,
                                 .linger = VBTS_DEFAULT_LINGER };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:m:a:t:qhS", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (parse_size(optarg, &o->memory) < 0) {
                snprintf(err, errlen, "--memory: invalid size '%s' (use e.g. 64M or 2G)", optarg);
                return OPT_ERROR;
            }
            if (o->memory < MIN_MEMORY || o->memory > MAX_MEMORY) {
                snprintf(err, errlen, "--memory: %s is out of range (2M to 1T)", optarg);
                return OPT_ERROR;
            }
            break;
        case 'a': o->append = optarg; break;
        case 't':
            if (!*optarg) {
                snprintf(err, errlen, "--trace: empty file name");
                return OPT_ERROR;
            }
            if (o->ntraces == VBTS_MAX_TRACES) {
                snprintf(err, errlen, "--trace: at most %d destinations", VBTS_MAX_TRACES);
                return OPT_ERROR;
            }
            o->traces[o->ntraces++] = optarg;
            if (!o->trace)
                o->trace = optarg;
            break;
        case OPT_KVM: o->kvm_path = optarg; break;
        case OPT_FORCE: o->force = true; break;
        case OPT_NO_GUEST_BTS: o->guest_bts = false; break;
        case OPT_SYMBOLS: o->symbols = optarg; break;
        case OPT_TRACE_START: o->trace_start = optarg; break;
        case OPT_TRACE_STOP: o->trace_stop = optarg; break;
        case OPT_MAX_BRANCHES:
            if (parse_u64(optarg, &o->max_branches) < 0 || o->max_branches == 0) {
                snprintf(err, errlen, "--max-branches: '%s' is not a positive number", optarg);
                return OPT_ERROR;
            }
            break;
        case OPT_CPL:
        {
            static const char *const cpls[] = { "all", "kernel", "user", NULL };
            if ((o->cpl = choice(optarg, cpls)) < 0) {
                snprintf(err, errlen, "--cpl: '%s' is not kernel, user or all", optarg);
                return OPT_ERROR;
            }
            break;
        }
        case OPT_CR3:
            if (!strcmp(optarg, "start")) {
                o->cr3_start = true;
            } else if (parse_u64(optarg, &o->cr3) < 0) {
                snprintf(err, errlen, "--cr3: '%s' is not a number or start", optarg);
                return OPT_ERROR;
            }
            o->have_cr3 = true;
            break;
        case OPT_VERIFY_FLOW: o->verify_flow = true; break;
        case OPT_ENGINE:
        {
            /* enum trace_engine's order */
            static const char *const engines[] = { "step", "branch", NULL };
            if ((o->engine = choice(optarg, engines)) < 0) {
                snprintf(err, errlen, "--engine: '%s' is not step or branch", optarg);
                return OPT_ERROR;
            }
            break;
        }
        case OPT_STOP_AFTER: o->stop_after_trace = true; break;
        case OPT_BUFFER_SIZE:
        case OPT_BUFFER_LIMIT:
        {
            const char *name = c == OPT_BUFFER_SIZE ? "--buffer-size" : "--buffer-limit";
            uint64_t v;
            if (parse_size(optarg, &v) < 0) {
                snprintf(err, errlen, "%s: invalid size '%s' (use e.g. 1M or 4096)", name, optarg);
                return OPT_ERROR;
            }
            if (v < 24) {
                snprintf(err, errlen, "%s: %s is less than one record (24 bytes)", name, optarg);
                return OPT_ERROR;
            }
            *(c == OPT_BUFFER_SIZE ? &o->buffer_size : &o->buffer_limit) = v;
            break;
        }
        case OPT_OVERFLOW:
        {
            static const char *const modes[] = { "block", "wrap", "drop", NULL };
            if ((o->overflow = choice(optarg, modes)) < 0) {
                snprintf(err, errlen, "--overflow: '%s' is not wrap, block or drop", optarg);
                return OPT_ERROR;
            }
            break;
        }
        case OPT_LINGER:
        {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            if (!*optarg || *end || errno || !(v >= 0 && v <= 86400)) {
                snprintf(err, errlen, "--linger: '%s' is not a number of seconds (0 to 86400)",
                         optarg);
                return OPT_ERROR;
            }
            o->linger = v;
            break;
        }
        case OPT_CPUS:
        {
            uint64_t n;
            if (parse_u64(optarg, &n) < 0 || n < 1 || n > MAX_CPUS) {
                snprintf(err, errlen, "--cpus: '%s' is not a number from 1 to %d", optarg, MAX_CPUS);
                return OPT_ERROR;
            }
            o->cpus = (int)n;
            break;
        }
        case OPT_INITRD:
            if (!*optarg) {
                snprintf(err, errlen, "--initrd: empty file name");
                return OPT_ERROR;
            }
            o->initrd = optarg;
            break;
        case OPT_USER: o->user = optarg; break;
        case OPT_GROUP: o->group = optarg; break;
        case OPT_SANDBOX: o->sandbox = true; break;
        case OPT_NO_SECCOMP: o->no_seccomp = true; break;
        case OPT_GDB:
            if (!*optarg) {
                snprintf(err, errlen, "--gdb: empty address (use [HOST:]PORT)");
                return OPT_ERROR;
            }
            o->gdb = optarg;
            break;
        case 'S': o->gdb_wait = true; break;
        case 'q': o->quiet = true; break;
        case 'h': return OPT_HELP;
        case OPT_VERSION_: return OPT_VERSION;
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
    o->guest = argv[optind];
    return OPT_RUN;
}
