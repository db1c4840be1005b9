/* SPDX-License-Identifier: MIT */
#include "view/srclines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int grow(void *pp, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    void *p = realloc(*(void **)pp, c * size);
    if (!p)
        return -1;
    *(void **)pp = p;
    *cap = c;
    return 0;
}

static size_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;    /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static size_t file_hash(const void *ctx, size_t i)
{
    return str_hash(((const struct srclines *)ctx)->file[i]);
}

/* A relative name is relative to the CU's directory: genhtml runs anywhere. */
static uint32_t file_id(struct srclines *v, const char *src, const char *dir)
{
    char *name;
    if (src[0] != '/' && dir && dir[0]) {
        size_t n = strlen(dir) + strlen(src) + 2;
        if (!(name = malloc(n)))
            return UINT32_MAX;
        snprintf(name, n, "%s/%s", dir, src);
    } else if (!(name = strdup(src))) {
        return UINT32_MAX;
    }
    if (slots_reserve(&v->file_slots, 0, v->nfiles, file_hash, v) < 0) {
        free(name);
        return UINT32_MAX;
    }
    size_t h = slots_first(&v->file_slots, str_hash(name));
    for (; v->file_slots.slot[h]; h = slots_next(&v->file_slots, h))
        if (!strcmp(v->file[v->file_slots.slot[h] - 1], name)) {
            free(name);
            return v->file_slots.slot[h] - 1;
        }
    if (v->nfiles >= UINT32_MAX - 1 || grow(&v->file, &v->files_cap, v->nfiles, sizeof(*v->file)) < 0) {
        free(name);
        return UINT32_MAX;
    }
    v->file[v->nfiles] = name;
    v->file_slots.slot[h] = (uint32_t)v->nfiles + 1;
    return (uint32_t)v->nfiles++;
}

static size_t line_hash(uint32_t file, uint32_t lineno)
{
    uint64_t h = ((uint64_t)file << 32 | lineno) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29));
}

static size_t line_hash_at(const void *ctx, size_t i)
{
    const struct srclines_line *l = &((const struct srclines *)ctx)->line[i];
    return line_hash(l->file, l->lineno);
}

static uint32_t line_id(struct srclines *v, uint32_t file, uint32_t lineno)
{
    if (slots_reserve(&v->line_slots, 0, v->nlines, line_hash_at, v) < 0)
        return UINT32_MAX;
    size_t h = slots_first(&v->line_slots, line_hash(file, lineno));
    for (; v->line_slots.slot[h]; h = slots_next(&v->line_slots, h)) {
        struct srclines_line *l = &v->line[v->line_slots.slot[h] - 1];
        if (l->file == file && l->lineno == lineno)
            return v->line_slots.slot[h] - 1;
    }
    if (v->nlines >= UINT32_MAX - 1 || grow(&v->line, &v->lines_cap, v->nlines, sizeof(*v->line)) < 0)
        return UINT32_MAX;
    v->line[v->nlines] = (struct srclines_line){ file, lineno };
    v->line_slots.slot[h] = (uint32_t)v->nlines + 1;
    return (uint32_t)v->nlines++;
}

/* One CU's line table as address ranges. */
static int add_cu(struct srclines *v, Dwarf_Die *cu, const char *dir)
{
    Dwarf_Lines *lines;
    size_t n;
    if (dwarf_getsrclines(cu, &lines, &n) != 0)
        return 0;       /* a CU without a line table */
    bool open = false;
    struct srclines_range r = { 0 };
    for (size_t i = 0; i < n; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a;
        int lineno;
        bool end;
        if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &lineno) || dwarf_lineendsequence(l, &end))
            continue;
        if (open && a > r.lo && r.line != UINT32_MAX) {
            if (grow(&v->range, &v->ranges_cap, v->nranges, sizeof(*v->range)) < 0)
                return -1;
            r.hi = a;
            v->range[v->nranges++] = r;
        }
        open = !end;
        if (end)
            continue;
        r.lo = a;
        r.line = UINT32_MAX;    /* line 0: code of no line */
        const char *src = dwarf_linesrc(l, NULL, NULL);
        if (lineno > 0 && src) {
            uint32_t f = file_id(v, src, dir);
            if (f == UINT32_MAX || (r.line = line_id(v, f, (uint32_t)lineno)) == UINT32_MAX)
                return -1;
        }
    }
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const struct srclines_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The CU's functions with code: their entries, names and declarations. */
static int add_funcs(struct srclines *v, Dwarf_Die *cu, const char *dir)
{
    Dwarf_Die d;
    if (dwarf_child(cu, &d) != 0)
        return 0;
    do {
        Dwarf_Addr entry;
        int line;
        const char *name = dwarf_diename(&d), *file = dwarf_decl_file(&d);
        if (dwarf_tag(&d) != DW_TAG_subprogram || !name || !file || dwarf_lowpc(&d, &entry) != 0 ||
            dwarf_decl_line(&d, &line) != 0 || line <= 0)
            continue;
        uint32_t f = file_id(v, file, dir);
        char *n = strdup(name);
        if (f == UINT32_MAX || !n || grow(&v->func, &v->funcs_cap, v->nfuncs, sizeof(*v->func)) < 0) {
            free(n);
            return -1;
        }
        v->func[v->nfuncs++] = (struct srclines_func){ entry, n, f, (uint32_t)line };
    } while (dwarf_siblingof(&d, &d) == 0);
    return 0;
}

static int by_entry(const void *a, const void *b)
{
    const struct srclines_func *x = a, *y = b;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

void srclines_free(struct srclines *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nfiles; i++)
        free(s->file[i]);
    for (size_t i = 0; i < s->nfuncs; i++)
        free(s->func[i].name);
    free(s->file);
    slots_free(&s->file_slots);
    free(s->line);
    slots_free(&s->line_slots);
    free(s->range);
    free(s->func);
    free(s);
}

struct srclines *srclines_load(const char *path, char *err, size_t errlen)
{
    struct srclines *v = calloc(1, sizeof(*v));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
    if (!v || !dw) {
        if (v)
            snprintf(err, errlen, "%s: no DWARF debug information (--format lcov needs an ELF built with -g)",
                     path);
        else
            snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* An object file's DWARF is not relocated: its names and addresses would be wrong. */
    GElf_Ehdr eh;
    Elf *elf = dwarf_getelf(dw);
    if (elf && gelf_getehdr(elf, &eh) && eh.e_type == ET_REL) {
        snprintf(err, errlen, "%s: a relocatable object; --format lcov needs the linked ELF", path);
        goto fail;
    }
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        Dwarf_Attribute at;
        if (dwarf_offdie(dw, off + hsize, &cu)) {
            const char *dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at));
            if (add_cu(v, &cu, dir) < 0 || add_funcs(v, &cu, dir) < 0) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
        }
        off = next;
    }
    if (!v->nranges) {
        snprintf(err, errlen, "%s: its DWARF has no line table (--format lcov needs an ELF built with -g)", path);
        goto fail;
    }
    qsort(v->range, v->nranges, sizeof(*v->range), by_lo);
    if (v->nfuncs)
        qsort(v->func, v->nfuncs, sizeof(*v->func), by_entry);
    dwarf_end(dw);
    close(fd);
    return v;
fail:
    if (dw)
        dwarf_end(dw);
    if (fd >= 0)
        close(fd);
    srclines_free(v);
    return NULL;
}

size_t srclines_range_at(const struct srclines *s, uint64_t addr)
{
    size_t i = srclines_range_from(s, addr);
    if (i < s->nranges && s->range[i].lo == addr)
        return i;
    return i && addr < s->range[i - 1].hi ? i - 1 : s->nranges;
}

size_t srclines_range_from(const struct srclines *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->range[mid].lo < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t srclines_func_at(const struct srclines *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nfuncs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->func[mid].entry < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nfuncs && s->func[lo].entry == addr ? lo : s->nfuncs;
}
