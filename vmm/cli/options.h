/* SPDX-License-Identifier: MIT */
/* Command-line options: parsed and validated before anything is created. */
#ifndef VBTS_CLI_OPTIONS_H
#define VBTS_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VBTS_MAX_TRACES 8
#define VBTS_DEFAULT_BUFFER (64ull * 1024 * 24)    /* 65536 records */
#define VBTS_DEFAULT_LINGER 10.0

struct vbts_options {
    uint64_t memory;
    const char *append;
    const char *trace;
    const char *kvm_path;
    const char *guest;
    bool quiet;
    bool guest_bts;
    int cpus;                   /* vCPUs */
    bool have_cpus;             /* --cpus given: a multiboot guest gets a PC (machine/multiboot_vm.h) */
    const char *initrd;         /* Linux initrd/initramfs, or a multiboot kernel's modules */
    /* Trace window and filters (trace/config.c resolves symbols). */
    const char *symbols;
    const char *trace_start, *trace_stop;
    uint64_t max_branches;
    int cpl;                    /* enum trace_cpl */
    bool have_cr3;
    bool cr3_start;             /* --cr3 start */
    uint64_t cr3;
    bool verify_flow;
    bool stats;                 /* --stats: the engine's exits by cause */
    int engine;                 /* --engine: enum trace_engine, or -1 for the host's best */
    bool stop_after_trace;      /* end the run when the trace window closes */
    /* Every --trace DEST in order (trace is the first): files, unix:, tcp:. */
    const char *traces[VBTS_MAX_TRACES];
    int ntraces;
    uint64_t buffer_size;       /* --buffer-size: bytes per vCPU */
    uint64_t buffer_limit;      /* --buffer-limit: bytes, all vCPUs; 0 = a quarter of RAM */
    int overflow;               /* --overflow: enum vbts_overflow (vbts/protocol.h) */
    double linger;              /* --linger: seconds */
    bool force;                 /* --force: replace existing trace files */
    /* The sandbox (cli/sandbox.h): whom to run as once the VM is built, and the filter. */
    const char *user, *group;   /* --user, --group: names or numbers */
    bool sandbox;               /* --sandbox: --user nobody */
    bool no_seccomp;            /* --no-seccomp: no system-call filter */
    /* The GDB remote stub (gdb/gdb.h). */
    const char *gdb;            /* --gdb [HOST:]PORT */
    bool gdb_wait;              /* -S */
    int gdb_arch;               /* --gdb-arch: -1 from the image, else enum gdb_arch */
};

enum opt_result { OPT_RUN, OPT_HELP, OPT_VERSION, OPT_ERROR };

enum opt_result options_parse(struct vbts_options *o, int argc, char **argv,
                              char *err, size_t errlen);

#endif
