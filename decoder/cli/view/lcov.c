/* SPDX-License-Identifier: MIT */
/*
 * --format lcov: the source lines and functions a trace ran, as an lcov
 * tracefile that genhtml renders, from the DWARF of the --symbols ELF
 * (srclines.h).  A line ran once each time execution entered it: a run
 * (blocks.h) covered the start of one of its line-table rows.  Coming back
 * into the middle of a line, after a call, is not entering it again: so a
 * line that calls twice ran once, as gcov counts.  A function ran once
 * each time a branch led to its entry.  Every line and function is listed,
 * so what did not run shows too.
 */
#define _GNU_SOURCE     /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "view/blocks.h"
#include "view/srclines.h"
#include "view/view.h"

struct lcov {
    FILE *out;
    struct srclines *src;
    uint64_t *line_count, *line_stamp;  /* per line: times entered, the last run that counted it */
    uint64_t *func_count;
    struct blocks runs;
    uint64_t run;
};

static void lcov_free(void *p)
{
    struct lcov *v = p;
    if (!v)
        return;
    srclines_free(v->src);
    free(v->line_count);
    free(v->line_stamp);
    free(v->func_count);
    free(v);
}

static void *lcov_new(FILE *out, const struct vbts_symtab *symtab, const char *symfile, char *err,
                      size_t errlen)
{
    (void)symtab;
    if (!symfile) {
        snprintf(err, errlen, "--format lcov needs --symbols ELF, an ELF file with DWARF (built with -g)");
        return NULL;
    }
    struct lcov *v = calloc(1, sizeof(*v));
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    v->out = out;
    if (!(v->src = srclines_load(symfile, err, errlen))) {
        lcov_free(v);
        return NULL;
    }
    v->line_count = calloc(v->src->nlines + 1, sizeof(*v->line_count));
    v->line_stamp = calloc(v->src->nlines + 1, sizeof(*v->line_stamp));
    v->func_count = calloc(v->src->nfuncs + 1, sizeof(*v->func_count));
    if (!v->line_count || !v->line_stamp || !v->func_count) {
        snprintf(err, errlen, "out of memory");
        lcov_free(v);
        return NULL;
    }
    return v;
}

static void count(struct lcov *v, uint32_t line)
{
    if (v->line_stamp[line] != v->run) {
        v->line_stamp[line] = v->run;
        v->line_count[line]++;
    }
}

static int lcov_event(void *p, const struct vbts_event *ev)
{
    struct lcov *v = p;
    const struct srclines *s = v->src;
    struct blocks_run run;
    if (!blocks_next(&v->runs, ev, &run))
        return 0;
    v->run++;
    size_t i = srclines_range_at(s, run.start);
    if (!run.entered) {
        /* A vCPU's first branch: its line ran, however it was entered. */
        if (i < s->nranges)
            count(v, s->range[i].line);
        return 0;
    }
    size_t f = srclines_func_at(s, run.start);
    if (f < s->nfuncs)
        v->func_count[f]++;
    /*
     * Back from a call or an event into the line that made it: going on
     * with that line, not entering it again, unless the return lands
     * exactly where a row of another line ends and this one's begins.
     */
    bool back = run.kind == VBTS_KIND_RET || run.kind == VBTS_KIND_IRET || run.kind == VBTS_KIND_FAR ||
                run.kind == VBTS_KIND_SYSCALL;
    if (back && i < s->nranges) {
        const struct srclines_range *r = &s->range[i];
        bool enters = r->lo == run.start &&
                      !(i > 0 && s->range[i - 1].hi == r->lo && s->range[i - 1].line == r->line);
        if (!enters)
            v->line_stamp[r->line] = v->run;
    }
    uint64_t e = run.start + run.len;   /* no wrap: runs end at a branch's from + 1 at most */
    for (size_t j = srclines_range_from(s, run.start); j < s->nranges && s->range[j].lo < e; j++)
        count(v, s->range[j].line);
    return 0;
}

/* Lines and functions in file order (by name), then line order. */
static int by_place(uint32_t fa, uint32_t la, uint32_t fb, uint32_t lb, const struct srclines *s)
{
    if (fa != fb) {
        int c = strcmp(s->file[fa], s->file[fb]);
        return c ? c : fa < fb ? -1 : 1;
    }
    return la < lb ? -1 : la > lb;
}

static int by_line(const void *a, const void *b, void *arg)
{
    const struct srclines *s = arg;
    const struct srclines_line *x = &s->line[*(const uint32_t *)a], *y = &s->line[*(const uint32_t *)b];
    return by_place(x->file, x->lineno, y->file, y->lineno, s);
}

static int by_func(const void *a, const void *b, void *arg)
{
    const struct srclines *s = arg;
    const struct srclines_func *x = &s->func[*(const uint32_t *)a], *y = &s->func[*(const uint32_t *)b];
    return by_place(x->file, x->lineno, y->file, y->lineno, s);
}

/* A byte that would end or break a record's line is not printed as itself. */
static void put_text(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        putc(*c < 0x20 || *c == 0x7f ? '?' : *c, out);
}

/* One file's record: its functions, then its lines (fn and ln: its part of each order). */
static void put_file(struct lcov *v, uint32_t file, const uint32_t *fn, size_t nfn, const uint32_t *ln, size_t nln)
{
    const struct srclines *s = v->src;
    fputs("SF:", v->out);
    put_text(v->out, s->file[file]);
    putc('\n', v->out);
    size_t hit = 0;
    for (size_t i = 0; i < nfn; i++) {
        fprintf(v->out, "FN:%u,", s->func[fn[i]].lineno);
        put_text(v->out, s->func[fn[i]].name);
        putc('\n', v->out);
    }
    for (size_t i = 0; i < nfn; i++) {
        fprintf(v->out, "FNDA:%llu,", (unsigned long long)v->func_count[fn[i]]);
        put_text(v->out, s->func[fn[i]].name);
        putc('\n', v->out);
        hit += v->func_count[fn[i]] > 0;
    }
    fprintf(v->out, "FNF:%zu\nFNH:%zu\n", nfn, hit);
    hit = 0;
    for (size_t i = 0; i < nln; i++) {
        fprintf(v->out, "DA:%u,%llu\n", s->line[ln[i]].lineno, (unsigned long long)v->line_count[ln[i]]);
        hit += v->line_count[ln[i]] > 0;
    }
    fprintf(v->out, "LF:%zu\nLH:%zu\nend_of_record\n", nln, hit);
}

static int lcov_finish(void *p)
{
    struct lcov *v = p;
    const struct srclines *s = v->src;
    uint32_t *ln = malloc((s->nlines + 1) * sizeof(*ln)), *fn = malloc((s->nfuncs + 1) * sizeof(*fn));
    if (!ln || !fn) {
        free(ln);
        free(fn);
        return -1;
    }
    for (size_t i = 0; i < s->nlines; i++)
        ln[i] = (uint32_t)i;
    for (size_t i = 0; i < s->nfuncs; i++)
        fn[i] = (uint32_t)i;
    qsort_r(ln, s->nlines, sizeof(*ln), by_line, (void *)s);
    qsort_r(fn, s->nfuncs, sizeof(*fn), by_func, (void *)s);
    fputs("TN:\n", v->out);
    /* Files with lines, in name order; their functions alongside. */
    size_t i = 0, j = 0;
    while (i < s->nlines) {
        uint32_t file = s->line[ln[i]].file;
        size_t i0 = i, j0;
        while (i < s->nlines && s->line[ln[i]].file == file)
            i++;
        while (j < s->nfuncs && by_place(s->func[fn[j]].file, 0, file, 0, s) < 0)
            j++;    /* functions of files without lines: not in the report */
        j0 = j;
        while (j < s->nfuncs && s->func[fn[j]].file == file)
            j++;
        put_file(v, file, fn + j0, j - j0, ln + i0, i - i0);
    }
    free(ln);
    free(fn);
    return 0;
}

const struct view_type lcov_view = { "lcov", false, lcov_new, lcov_event, lcov_finish, lcov_free };
