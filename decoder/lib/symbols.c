/* SPDX-License-Identifier: MIT */
#include "vbts/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

struct sym {
    uint64_t addr;
    uint64_t size;      /* 0: unknown (text maps), up to the next symbol */
    uint32_t name;      /* offset into names */
    uint32_t order;     /* file order, to keep the first of equal addresses */
};

struct vbts_symtab {
    struct sym *sym;
    size_t n, cap;
    char *names;
    size_t names_len, names_cap;
};

static int add(struct vbts_symtab *s, uint64_t addr, uint64_t size, const char *name, size_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        struct sym *p = realloc(s->sym, cap * sizeof(*p));
        if (!p)
            return -1;
        s->sym = p;
        s->cap = cap;
    }
    if (s->names_len + len + 1 > s->names_cap || s->names_len + len + 1 > UINT32_MAX) {
        size_t cap = s->names_cap ? s->names_cap * 2 : 65536;
        while (cap < s->names_len + len + 1)
            cap *= 2;
        if (cap > UINT32_MAX)
            return -1;
        char *p = realloc(s->names, cap);
        if (!p)
            return -1;
        s->names = p;
        s->names_cap = cap;
    }
    memcpy(s->names + s->names_len, name, len);
    s->names[s->names_len + len] = '\0';
    s->sym[s->n] = (struct sym){ addr, size, (uint32_t)s->names_len, (uint32_t)s->n };
    s->names_len += len + 1;
    s->n++;
    return 0;
}

static int by_addr(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * A Linux map lists per-CPU variables at their offsets in the per-CPU area
 * (__per_cpu_start 0 .. __per_cpu_end): not addresses.  Kept, the last of
 * them would name every user-mode address up to the kernel's text.
 */
static void drop_per_cpu(struct vbts_symtab *s)
{
    uint64_t start = 0, end = 0;
    bool have_end = false;
    for (size_t i = 0; i < s->n; i++) {
        const char *name = s->names + s->sym[i].name;
        if (!strcmp(name, "__per_cpu_start"))
            start = s->sym[i].addr;
        else if (!strcmp(name, "__per_cpu_end")) {
            end = s->sym[i].addr;
            have_end = true;
        }
    }
    if (!have_end || start > end)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->sym[i].addr < start || s->sym[i].addr > end)
            s->sym[kept++] = s->sym[i];
    s->n = kept;
}

/* "ffffffff81000000 T _stext" per line; absolute ('a') symbols name no code. */
static int load_text(struct vbts_symtab *s, FILE *f, const char *path, char *err, size_t errlen)
{
    char line[4096];
    unsigned long lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        size_t ll = strlen(line);
        if (ll == sizeof(line) - 1 && line[ll - 1] != '\n') {
            snprintf(err, errlen, "%s:%lu: line too long", path, lineno);
            return -1;
        }
        char *p = line, *end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0' || *p == '#')
            continue;
        errno = 0;
        uint64_t addr = strtoull(p, &end, 16);
        if (end == p || errno || (*end != ' ' && *end != '\t')) {
            snprintf(err, errlen, "%s:%lu: not a symbol line (expected \"ADDRESS TYPE NAME\")",
                     path, lineno);
            return -1;
        }
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        char type = *p;
        if (!type || (p[1] != ' ' && p[1] != '\t')) {
            snprintf(err, errlen, "%s:%lu: not a symbol line (expected \"ADDRESS TYPE NAME\")",
                     path, lineno);
            return -1;
        }
        p += 2;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, " \t\r\n");
        if (len == 0) {
            snprintf(err, errlen, "%s:%lu: symbol without a name", path, lineno);
            return -1;
        }
        if (type == 'a' || type == 'A' || addr == 0)
            continue;
        if (add(s, addr, 0, p, len) < 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    drop_per_cpu(s);
    return 0;
}

static int load_elf(struct vbts_symtab *s, int fd, const char *path, char *err, size_t errlen)
{
    if (elf_version(EV_CURRENT) == EV_NONE) {
        snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
        return -1;
    }
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        snprintf(err, errlen, "%s: %s", path, e ? "not an ELF object" : elf_errmsg(-1));
        if (e)
            elf_end(e);
        return -1;
    }
    int ret = 0;
    /* The full symbol table if there is one, else the dynamic one. */
    for (int want = SHT_SYMTAB; want && s->n == 0; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type != (unsigned)want || !sh.sh_entsize)
                continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            if (!d)
                continue;
            size_t count = sh.sh_size / sh.sh_entsize;
            for (size_t i = 0; i < count; i++) {
                GElf_Sym sym;
                if (!gelf_getsym(d, (int)i, &sym))
                    break;
                int t = GELF_ST_TYPE(sym.st_info);
                if (sym.st_value == 0 || sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
                    (t != STT_FUNC && t != STT_NOTYPE && t != STT_OBJECT))
                    continue;
                const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
                if (!name || !*name)
                    continue;
                if (add(s, sym.st_value, sym.st_size, name, strlen(name)) < 0) {
                    snprintf(err, errlen, "%s: out of memory", path);
                    ret = -1;
                    goto out;
                }
            }
        }
    }
out:
    elf_end(e);
    return ret;
}

struct vbts_symtab *vbts_symtab_load(const char *path, char *err, size_t errlen)
{
    struct vbts_symtab *s = calloc(1, sizeof(*s));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!s || fd < 0) {
        snprintf(err, errlen, "%s: %s", path, s ? strerror(errno) : "out of memory");
        free(s);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    unsigned char magic[4] = { 0 };
    ssize_t got = pread(fd, magic, 4, 0);
    int r;
    if (got == 4 && !memcmp(magic, ELFMAG, SELFMAG)) {
        r = load_elf(s, fd, path, err, errlen);
        close(fd);
    } else {
        FILE *f = fdopen(fd, "r");
        if (!f) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            close(fd);
            r = -1;
        } else {
            r = load_text(s, f, path, err, errlen);
            fclose(f);
        }
    }
    if (r == 0 && s->n == 0) {
        snprintf(err, errlen, "%s: no symbols", path);
        r = -1;
    }
    if (r < 0) {
        vbts_symtab_free(s);
        return NULL;
    }
    qsort(s->sym, s->n, sizeof(*s->sym), by_addr);
    return s;
}

void vbts_symtab_free(struct vbts_symtab *s)
{
    if (!s)
        return;
    free(s->sym);
    free(s->names);
    free(s);
}

size_t vbts_symtab_count(const struct vbts_symtab *s)
{
    return s ? s->n : 0;
}

/*
 * The symbol that names addr (at or before it, the first of equal
 * addresses), or NULL; *end is where the same answer stops holding (the
 * next symbol's address, or the symbol's end if it has a size).
 */
static const struct sym *covering(const struct vbts_symtab *s, uint64_t addr, uint64_t *end)
{
    if (!s || s->n == 0 || addr < s->sym[0].addr)
        return NULL;
    /* Last symbol whose address is <= addr; the first of equals wins. */
    size_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->sym[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    /* The first of equal addresses (sorted by file order), in O(log n) too. */
    uint64_t at = s->sym[lo].addr;
    size_t first = 0;
    hi = lo;
    while (first < hi) {
        size_t mid = first + (hi - first) / 2;
        if (s->sym[mid].addr < at)
            first = mid + 1;
        else
            hi = mid;
    }
    const struct sym *sym = &s->sym[first];
    *end = lo + 1 < s->n ? s->sym[lo + 1].addr : UINT64_MAX;
    if (sym->size && sym->size < *end - at)
        *end = at + sym->size;
    if (sym->size && addr - sym->addr >= sym->size)
        return NULL;
    return sym;
}

const char *vbts_symtab_lookup(const struct vbts_symtab *s, uint64_t addr, uint64_t *offset)
{
    uint64_t end;
    const struct sym *sym = covering(s, addr, &end);
    if (!sym)
        return NULL;
    *offset = addr - sym->addr;
    return s->names + sym->name;
}

void vbts_symtab_lookup_many(const struct vbts_symtab *s, const uint64_t *addrs, size_t n,
                             const char **names, uint64_t *offsets)
{
    /* A trace goes back and forth within few functions: the last answer
     * holds for most addresses, and checking it costs less than a search. */
    const struct sym *last = NULL;
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = addrs[i];
        if (!last || a < last->addr || a >= end)
            last = covering(s, a, &end);
        names[i] = last ? s->names + last->name : NULL;
        offsets[i] = last ? a - last->addr : a;
    }
}

int vbts_symtab_find(const struct vbts_symtab *s, const char *name, uint64_t *addr)
{
    /* Linear, but done once per run (trigger symbols), not per record. */
    for (size_t i = 0; s && i < s->n; i++) {
        if (!strcmp(s->names + s->sym[i].name, name)) {
            uint32_t best = s->sym[i].order;
            *addr = s->sym[i].addr;
            for (size_t j = i + 1; j < s->n; j++)
                if (s->sym[j].order < best && !strcmp(s->names + s->sym[j].name, name)) {
                    best = s->sym[j].order;
                    *addr = s->sym[j].addr;
                }
            return 0;
        }
    }
    return -1;
}

char *vbts_symtab_format(const struct vbts_symtab *s, uint64_t addr, char *buf, size_t len)
{
    uint64_t off;
    const char *name = vbts_symtab_lookup(s, addr, &off);
    if (name)
        snprintf(buf, len, "%s+0x%llx", name, (unsigned long long)off);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)addr);
    return buf;
}

int vbts_symtab_lowest(const struct vbts_symtab *s, uint64_t *addr)
{
    if (!s || !s->n)
        return -1;
    *addr = s->sym[0].addr;
    return 0;
}
