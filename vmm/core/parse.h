/* SPDX-License-Identifier: MIT */
/* Numbers from the command line: strict, no sign, no trailing text. */
#ifndef VBTS_CORE_PARSE_H
#define VBTS_CORE_PARSE_H

#include <stdint.h>

/* "64M", "2G", "1048576" (k, M, G, T; an optional i and B): bytes, or -1. */
int parse_size(const char *s, uint64_t *bytes);
/* Decimal or 0x-hex: 0, or -1 if not a number. */
int parse_u64(const char *s, uint64_t *v);

#endif
