/* SPDX-License-Identifier: MIT */
/*
 * vbts-decode's views of a whole trace, for tools people already use:
 * calls (an indented call history, like gdb's record
 * function-call-history /c), folded (stacks for flamegraph.pl), chrome
 * (Chrome trace / Perfetto JSON), drcov (coverage for Lighthouse) and
 * lcov (lines run, from an ELF's DWARF, for genhtml).
 * Unlike the text and JSON lines, a view may print only at the end.
 */
#ifndef VBTS_DECODER_VIEW_VIEW_H
#define VBTS_DECODER_VIEW_VIEW_H

#include <stdbool.h>
#include <stdio.h>
#include <vbts/decode.h>
#include <vbts/symbols.h>

#include "view/stack.h"

/* Bytes of a function's name a view prints at most: longer ones are cut. */
#define VIEW_NAME_MAX 400

struct view_type {
    const char *name;
    bool needs_kinds;   /* the trace must have VBTS_FILE_F_KIND */
    /* NULL with a one-line reason in err */
    void *(*new)(FILE *out, const struct vbts_symtab *symtab, const char *symfile, char *err, size_t errlen);
    int (*event)(void *v, const struct vbts_event *ev);   /* -1: out of memory */
    int (*finish)(void *v);                               /* -1: out of memory */
    void (*free)(void *v);
};

/* The view called name; NULL if there is none. */
const struct view_type *view_find(const char *name);
/* "calls, folded, chrome, drcov or lcov" */
const char *view_names(void);

/*
 * f's name: its symbol, else 0x and its entry address, else "??".  Bytes
 * that are not printable ASCII, and those in `bad`, print as '?'; JSON
 * escapes quotes and backslashes.
 */
void view_put_name(FILE *out, const struct stack_frame *f, const char *bad, bool json);

/*
 * The views over call stacks (calls, folded, chrome) begin with this, and
 * share their making, feeding and freeing.
 */
struct view_stacked {
    FILE *out;
    struct stack *stack;
};

/* A zeroed view of size bytes whose stack calls ops with the view; NULL with err. */
void *view_stacked_new(size_t size, FILE *out, const struct vbts_symtab *symtab, const struct stack_ops *ops,
                       char *err, size_t errlen);
int view_stacked_event(void *v, const struct vbts_event *ev);
void view_stacked_free(void *v);

extern const struct view_type calls_view, folded_view, chrome_view, drcov_view, lcov_view;

#endif
