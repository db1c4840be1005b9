/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile symbol file (decoder/lib/symbols.c): the
 * input is the file, System.map or /proc/kallsyms text, or ELF (the loader
 * tells them by the magic).  Then lookups at addresses taken from the
 * input: a name found by address must be found by name, and formatting
 * into any buffer must stay inside it, NUL-terminated.
 */
#include "fuzz.h"

#include <string.h>
#include <vbts/le.h>
#include <vbts/symbols.h>

static void probe(const struct vbts_symtab *s, uint64_t addr)
{
    uint64_t off = 0, at;
    const char *name = vbts_symtab_lookup(s, addr, &off);
    if (name) {
        fuzz_check(off <= addr, "offset 0x%llx past address 0x%llx", (unsigned long long)off,
                   (unsigned long long)addr);
        fuzz_check(vbts_symtab_find(s, name, &at) == 0, "'%s' found by address, not by name", name);
    }
    static const size_t lens[] = { 1, 2, 7, 32, 512 };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        char *buf = malloc(lens[i]);
        if (!buf)
            abort();
        fuzz_check(vbts_symtab_format(s, addr, buf, lens[i]) == buf, "format returns buf");
        fuzz_check(strnlen(buf, lens[i]) < lens[i], "not NUL-terminated in %zu bytes", lens[i]);
        free(buf);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_file(data, size, path, sizeof(path));
    if (fd < 0)
        return 0;
    err[0] = 0;
    struct vbts_symtab *s = vbts_symtab_load(path, err, sizeof(err));
    close(fd);
    if (!s) {
        fuzz_check(strnlen(err, sizeof(err)) < sizeof(err) && err[0], "no error message");
        return 0;
    }
    fuzz_check(vbts_symtab_count(s) > 0, "a table without symbols");
    probe(s, 0);
    probe(s, UINT64_MAX);
    /* Addresses as the input spells them: hex text or little-endian words. */
    for (size_t i = 0, k = 0; i < size && k < 32; i++) {
        if (i + 8 <= size && i % 8 == 0) {
            probe(s, vbts_le64(data + i));
            probe(s, vbts_le64(data + i) + 1);
            k++;
        }
        if ((i == 0 || data[i - 1] == '\n') && size - i >= 8) {
            char hex[17] = { 0 };
            memcpy(hex, data + i, size - i < 16 ? size - i : 16);
            uint64_t a = strtoull(hex, NULL, 16);
            probe(s, a);
            probe(s, a + 5);
            probe(s, a - 1);
            k++;
        }
    }
    uint64_t at;
    vbts_symtab_find(s, "_stext", &at);
    vbts_symtab_free(s);
    return 0;
}
