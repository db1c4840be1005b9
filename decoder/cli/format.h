/* SPDX-License-Identifier: MIT */
/*
 * What vbts-decode prints for one record: a text line (like perf script) or
 * a JSON object, with from/to named by a symbol table if there is one.
 * Apart from main() so that fuzz/fuzz_decode.c can check every line.
 */
#ifndef VBTS_DECODER_CLI_FORMAT_H
#define VBTS_DECODER_CLI_FORMAT_H

#include <stddef.h>
#include <vbts/decode.h>
#include <vbts/symbols.h>

/* A line is never longer, newline included, whatever the record or names. */
#define FORMAT_LINE_MAX 1024
/* Bytes a symbol takes in a line at most: names are cut, not wrapped. */
#define FORMAT_SYM_MAX  400

enum format_kind { FORMAT_TEXT, FORMAT_JSON };

/*
 * Write ev's line, newline included, to p, which has room for
 * FORMAT_LINE_MAX bytes; returns its length.  Symbols (symtab may be NULL)
 * print only printable ASCII: other bytes become '?'.
 */
size_t format_event(char *p, const struct vbts_event *ev, enum format_kind kind,
                    const struct vbts_symtab *symtab);

#endif
