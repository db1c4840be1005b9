/* SPDX-License-Identifier: MIT */
/* Symbol tables: System.map/kallsyms text and ELF, lookups and messages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vbts/symbols.h"

static char path[64];

static void write_map(const char *text)
{
    strcpy(path, "/tmp/vbts-symtest.XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void cleanup(void)
{
    if (path[0])
        unlink(path);
}

TestSuite(symbols, .fini = cleanup);

Test(symbols, system_map_lookup)
{
    write_map("ffffffff81000000 T _stext\n"
              "ffffffff81000010 t helper\n"
              "0000000000000400 A absolute_ignored\n"
              "ffffffff81000020 T alias_a\n"
              "ffffffff81000020 T alias_b\n"
              "ffffffff81000040 d data [module]\n");
    char err[256];
    struct vbts_symtab *s = vbts_symtab_load(path, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(vbts_symtab_count(s), 5);
    uint64_t off;
    cr_assert_null(vbts_symtab_lookup(s, 0xffffffff80ffffffull, &off));
    cr_assert_str_eq(vbts_symtab_lookup(s, 0xffffffff81000000ull, &off), "_stext");
    cr_assert_eq(off, 0);
    cr_assert_str_eq(vbts_symtab_lookup(s, 0xffffffff8100001full, &off), "helper");
    cr_assert_eq(off, 0xf);
    /* equal addresses: the first in the file names the place */
    cr_assert_str_eq(vbts_symtab_lookup(s, 0xffffffff81000021ull, &off), "alias_a");
    uint64_t a;
    cr_assert_eq(vbts_symtab_find(s, "alias_b", &a), 0);
    cr_assert_eq(a, 0xffffffff81000020ull);
    cr_assert_eq(vbts_symtab_find(s, "absolute_ignored", &a), -1);
    char buf[64];
    cr_assert_str_eq(vbts_symtab_format(s, 0xffffffff81000045ull, buf, sizeof(buf)), "data+0x5");
    cr_assert_str_eq(vbts_symtab_format(s, 0x1000, buf, sizeof(buf)), "0x1000");
    cr_assert_eq(vbts_symtab_lowest(s, &a), 0);
    cr_assert_eq(a, 0xffffffff81000000ull);
    cr_assert_eq(vbts_symtab_lowest(NULL, &a), -1);
    vbts_symtab_free(s);
}

Test(symbols, linux_per_cpu_offsets_name_nothing)
{
    /* __per_cpu_start is at 0, which a map line cannot name (skipped). */
    write_map("0000000000000000 D __per_cpu_start\n"
              "0000000000001000 D fixed_percpu_data\n"
              "0000000000034000 D __per_cpu_end\n"
              "ffffffff81000000 T _stext\n");
    char err[256];
    struct vbts_symtab *s = vbts_symtab_load(path, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(vbts_symtab_count(s), 1);
    uint64_t off;
    cr_assert_null(vbts_symtab_lookup(s, 0x460997, &off), "a user-mode address");
    cr_assert_str_eq(vbts_symtab_lookup(s, 0xffffffff81000010ull, &off), "_stext");
    vbts_symtab_free(s);
}

Test(symbols, bad_text)
{
    char err[256];
    write_map("ffffffff81000000 T ok\nnot a symbol\n");
    cr_assert_null(vbts_symtab_load(path, err, sizeof(err)));
    char want[128];
    snprintf(want, sizeof(want), "%s:2: not a symbol line (expected \"ADDRESS TYPE NAME\")", path);
    cr_assert_str_eq(err, want);
    cleanup();
    write_map("# nothing\n");
    cr_assert_null(vbts_symtab_load(path, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s: no symbols", path);
    cr_assert_str_eq(err, want);
    cr_assert_null(vbts_symtab_load("/nonexistent/map", err, sizeof(err)));
    cr_assert_str_eq(err, "/nonexistent/map: No such file or directory");
}

/* A function of this test binary, found through its own ELF symbol table. */
__attribute__((noinline)) int vbts_symtab_probe(int x)
{
    return x * 3 + 1;
}

Test(symbols, elf_symbols_of_this_binary)
{
    char err[256];
    struct vbts_symtab *s = vbts_symtab_load("/proc/self/exe", err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    uint64_t a, off;
    cr_assert_eq(vbts_symtab_find(s, "vbts_symtab_probe", &a), 0);
    cr_assert_str_eq(vbts_symtab_lookup(s, a + 1, &off), "vbts_symtab_probe");
    cr_assert_eq(off, 1);
    cr_assert_eq(vbts_symtab_probe(1), 4);
    vbts_symtab_free(s);
}

/*
 * 200,000 names at one address: each lookup finds the first of them by
 * binary search.  Walking back over the equals took 12 s for these 20,000
 * lookups; the timeout fails that.
 */
Test(symbols, duplicate_addresses_in_log_time, .timeout = 5)
{
    FILE *f = fdopen(mkstemp(strcpy(path, "/tmp/vbts-sym-XXXXXX")), "w");
    cr_assert_not_null(f);
    fprintf(f, "ffffffff80000000 t before\n");
    for (int i = 0; i < 200000; i++)
        fprintf(f, "ffffffff81000000 t dup%d\n", i);
    fprintf(f, "ffffffff82000000 t after\n");
    fclose(f);
    char err[256];
    struct vbts_symtab *s = vbts_symtab_load(path, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    uint64_t off;
    for (int i = 0; i < 20000; i++) {
        const char *n = vbts_symtab_lookup(s, 0xffffffff81000000ull + (uint64_t)i, &off);
        cr_assert(n && !strcmp(n, "dup0") && off == (uint64_t)i);
    }
    cr_assert_str_eq(vbts_symtab_lookup(s, 0xffffffff80000010ull, &off), "before");
    cr_assert_str_eq(vbts_symtab_lookup(s, 0xffffffff82000010ull, &off), "after");
    vbts_symtab_free(s);
}

/*
 * In bulk, the answers of one lookup per address: text maps (a symbol runs
 * to the next) and ELF (a sized symbol ends at its size), addresses in
 * order, out of order and repeated, below the first symbol and past the
 * last.
 */
static void assert_many_is_lookup(const struct vbts_symtab *s, const uint64_t *addrs, size_t n)
{
    const char *names[64];
    uint64_t offs[64];
    cr_assert_leq(n, 64);
    vbts_symtab_lookup_many(s, addrs, n, names, offs);
    for (size_t i = 0; i < n; i++) {
        uint64_t off = 0;
        const char *want = vbts_symtab_lookup(s, addrs[i], &off);
        cr_assert_eq(names[i], want, "address %zu: %s, want %s", i, names[i] ? names[i] : "NULL",
                     want ? want : "NULL");
        cr_assert_eq(offs[i], want ? off : addrs[i], "address %zu", i);
    }
}

Test(symbols, lookup_many_is_lookup)
{
    write_map("ffffffff81000000 T _stext\n"
              "ffffffff81000010 t helper\n"
              "ffffffff81000020 T alias_a\n"
              "ffffffff81000020 T alias_b\n"
              "ffffffff81000040 d data\n");
    char err[256];
    struct vbts_symtab *s = vbts_symtab_load(path, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    const uint64_t a[] = { 0xffffffff81000000ull, 0xffffffff81000001ull, 0xffffffff8100000full,
                           0xffffffff81000010ull, 0xffffffff81000005ull, 0xffffffff80ffffffull,
                           0xffffffff81000021ull, 0xffffffff81000020ull, 0xffffffff81000040ull,
                           ~0ull, ~0ull, 0, 0xffffffff8100003full, 0xffffffff81000041ull };
    assert_many_is_lookup(s, a, sizeof(a) / sizeof(a[0]));
    const char *name = "x";
    uint64_t off = 1;
    vbts_symtab_lookup_many(s, a, 0, &name, &off);
    cr_assert(name && !strcmp(name, "x") && off == 1, "n = 0 stores nothing");
    vbts_symtab_lookup_many(NULL, a, 1, &name, &off);
    cr_assert(name == NULL && off == a[0], "no table: no names");
    vbts_symtab_free(s);

    s = vbts_symtab_load("/proc/self/exe", err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    uint64_t probe;
    cr_assert_eq(vbts_symtab_find(s, "vbts_symtab_probe", &probe), 0);
    uint64_t b[64];
    for (size_t i = 0; i < 64; i++)     /* the probe, its neighbours, and back again */
        b[i] = probe - 200 + (i < 32 ? i * 13 : (63 - i) * 29);
    assert_many_is_lookup(s, b, 64);
    vbts_symtab_free(s);
}
