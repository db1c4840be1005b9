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
};

enum opt_result { OPT_RUN, OPT_HELP, OPT_VERSION, OPT_ERROR };

enum opt_result options_parse(struct vbts_options *o, int argc, char **argv,
                              char *err, size_t errlen);

/* "64M", "2G", "1048576": bytes, or -1 if not a size. */
int options_parse_size(const char *s, uint64_t *bytes);

#endif
