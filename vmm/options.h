/* SPDX-License-Identifier: MIT */
/* Command-line options: parsed and validated before anything is created. */
#ifndef VBTS_OPTIONS_H
#define VBTS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vbts_options {
    uint64_t memory;
    const char *append;
    const char *trace;
    const char *kvm_path;
    const char *guest;
    bool quiet;
    bool guest_bts;
    /* Trace window and filters (trace_config.c resolves symbols). */
    const char *symbols;
    const char *trace_start, *trace_stop;
    uint64_t max_branches;
    int cpl;                    /* enum trace_cpl */
    bool have_cr3;
    uint64_t cr3;
    bool verify_flow;
};

enum opt_result { OPT_RUN, OPT_HELP, OPT_VERSION, OPT_ERROR };

enum opt_result options_parse(struct vbts_options *o, int argc, char **argv,
                              char *err, size_t errlen);

/* Decimal or 0x-hex, no sign: 0, or -1 if not a number. */
int parse_u64(const char *s, uint64_t *v);

/* "64M", "2G", "1048576": bytes, or -1 if not a size. */
int options_parse_size(const char *s, uint64_t *bytes);

#endif
