/* SPDX-License-Identifier: MIT */
/*
 * --format drcov: the code a trace ran (blocks.h), as drcov version 2
 * basic blocks (DynamoRIO's coverage format, which Lighthouse and others
 * read), each distinct block once.
 *
 * drcov offsets are 32 bits from a module's base.  The symbol file is one
 * module, named after it and based at _text, _stext, _start or start (the
 * first it has), else at its lowest symbol; other code goes into a module
 * per 4 GiB region, named by its base.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "view/blocks.h"
#include "view/view.h"

struct block {
    uint64_t start;
    uint32_t size;
};

struct drcov {
    FILE *out;
    const struct vbts_symtab *symtab;
    const char *symfile;
    struct block *b;            /* open-addressing set of distinct blocks */
    size_t n, cap;
    struct blocks runs;
    int oom;
};

static size_t hash(const struct block *k)
{
    uint64_t h = (k->start ^ ((uint64_t)k->size << 40)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 31));
}

static int grow(struct drcov *v)
{
    size_t cap = v->cap ? v->cap * 2 : 4096;
    struct block *b = calloc(cap, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < v->cap; i++) {
        if (!v->b[i].size)
            continue;
        size_t h = hash(&v->b[i]) & (cap - 1);
        while (b[h].size)
            h = (h + 1) & (cap - 1);
        b[h] = v->b[i];
    }
    free(v->b);
    v->b = b;
    v->cap = cap;
    return 0;
}

static void add(struct drcov *v, uint64_t start, uint64_t size)
{
    /* drcov sizes are 16 bits: a longer run is several blocks. */
    while (size) {
        struct block k = { start, (uint32_t)(size > 0xffff ? 0xffff : size) };
        if (2 * (v->n + 1) > v->cap && grow(v) < 0) {
            v->oom = 1;
            return;
        }
        size_t h = hash(&k) & (v->cap - 1);
        for (; v->b[h].size; h = (h + 1) & (v->cap - 1))
            if (v->b[h].start == k.start && v->b[h].size == k.size)
                break;
        if (!v->b[h].size) {
            v->b[h] = k;
            v->n++;
        }
        start += k.size;
        size -= k.size;
    }
}

static int drcov_event(void *p, const struct vbts_event *ev)
{
    struct drcov *v = p;
    struct blocks_run run;
    if (blocks_next(&v->runs, ev, &run))
        add(v, run.start, run.len);
    return v->oom ? -1 : 0;
}

static int by_start(const void *a, const void *b)
{
    const struct block *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : x->size < y->size ? -1 : x->size > y->size;
}

struct module {
    uint64_t base, end;
    const char *path;   /* NULL: named by its base */
};

/* A block's start is a 32-bit offset from its module's base. */
static bool in_module(const struct module *m, uint64_t s)
{
    return s >= m->base && s - m->base <= UINT32_MAX;
}

static int drcov_finish(void *p)
{
    struct drcov *v = p;
    /* The blocks in address order, packed at the start of the table. */
    size_t n = 0;
    for (size_t i = 0; i < v->cap; i++)
        if (v->b[i].size)
            v->b[n++] = v->b[i];
    if (n)
        qsort(v->b, n, sizeof(*v->b), by_start);     /* no blocks: no table either */

    uint64_t image = 0;
    bool has_image = false;
    static const char *const bases[] = { "_text", "_stext", "_start", "start" };
    for (size_t i = 0; v->symtab && !has_image && i < sizeof(bases) / sizeof(bases[0]); i++)
        has_image = vbts_symtab_find(v->symtab, bases[i], &image) == 0;
    if (v->symtab && !has_image)
        has_image = vbts_symtab_lowest(v->symtab, &image) == 0;
    const char *slash = v->symfile ? strrchr(v->symfile, '/') : NULL;
    const char *name = slash ? slash + 1 : v->symfile;

    /* Modules, in address order of their first block; each block's module id. */
    struct module *m = calloc(n + 1, sizeof(*m));
    uint16_t *id = calloc(n + 1, sizeof(*id));
    if (!m || !id) {
        free(m);
        free(id);
        return -1;
    }
    size_t nm = 0;
    if (has_image)
        m[nm++] = (struct module){ image, image, name };
    /* In address order, a block not in the image is in the newest region or a new one. */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = v->b[i].start;
        size_t j = has_image && in_module(&m[0], s) ? 0 : nm - 1;
        if (!nm || !in_module(&m[j], s)) {
            if (nm == UINT16_MAX) {
                v->b[i].size = 0;   /* more regions than drcov numbers: left out */
                continue;
            }
            j = nm++;
            m[j] = (struct module){ s & ~0xffffffffull, s & ~0xffffffffull, NULL };
        }
        id[i] = (uint16_t)j;
        kept++;
        if (s + v->b[i].size > m[j].end)
            m[j].end = s + v->b[i].size;
    }
    fprintf(v->out, "DRCOV VERSION: 2\nDRCOV FLAVOR: drcov\nModule Table: version 2, count %zu\n", nm);
    fputs("Columns: id, base, end, entry, checksum, timestamp, path\n", v->out);
    for (size_t j = 0; j < nm; j++) {
        fprintf(v->out, "%3zu, 0x%016llx, 0x%016llx, 0x0000000000000000, 0x00000000, 0x00000000, ", j,
                (unsigned long long)m[j].base, (unsigned long long)m[j].end);
        if (m[j].path)
            view_put_name(v->out, &(struct stack_frame){ .name = m[j].path }, NULL, false);
        else
            fprintf(v->out, "region-0x%llx", (unsigned long long)m[j].base);
        putc('\n', v->out);
    }
    fprintf(v->out, "BB Table: %zu bbs\n", kept);
    for (size_t i = 0; i < n; i++) {
        if (!v->b[i].size)
            continue;
        uint32_t off = (uint32_t)(v->b[i].start - m[id[i]].base);
        uint8_t e[8] = { (uint8_t)off, (uint8_t)(off >> 8), (uint8_t)(off >> 16), (uint8_t)(off >> 24),
                         (uint8_t)v->b[i].size, (uint8_t)(v->b[i].size >> 8), (uint8_t)id[i],
                         (uint8_t)(id[i] >> 8) };
        fwrite(e, 1, sizeof(e), v->out);
    }
    free(m);
    free(id);
    return 0;
}

static void *drcov_new(FILE *out, const struct vbts_symtab *symtab, const char *symfile, char *err,
                       size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    struct drcov *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->out = out;
    v->symtab = symtab;
    v->symfile = symfile;
    return v;
}

static void drcov_free(void *p)
{
    struct drcov *v = p;
    if (v)
        free(v->b);
    free(v);
}

const struct view_type drcov_view = { "drcov", false, drcov_new, drcov_event, drcov_finish, drcov_free };
