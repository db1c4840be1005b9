/* SPDX-License-Identifier: MIT */
/*
 * Guest symbols for addresses in a trace: System.map or /proc/kallsyms text
 * ("ADDR TYPE NAME [module]" lines), or an ELF file's symbol table (libelf).
 * Shared by the monitor (--trace-start SYMBOL) and vbts-decode (--symbols).
 */
#ifndef VBTS_SYMBOLS_H
#define VBTS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct vbts_symtab;

/*
 * Load symbols from `path`, ELF or text by content.  Returns NULL with a
 * one-line reason in err ("FILE: no symbols", "FILE:12: bad address", ...).
 */
struct vbts_symtab *vbts_symtab_load(const char *path, char *err, size_t errlen);
void vbts_symtab_free(struct vbts_symtab *s);
size_t vbts_symtab_count(const struct vbts_symtab *s);

/*
 * The symbol at or before `addr`, with *offset = addr - its address; NULL
 * if no symbol precedes addr.  ELF symbols with a size cover only that size.
 */
const char *vbts_symtab_lookup(const struct vbts_symtab *s, uint64_t addr, uint64_t *offset);

/*
 * vbts_symtab_lookup() of n addresses at once, for array code (python/vbts)
 * where a call per address would dominate: names[i] is the symbol at or
 * before addrs[i] (valid until vbts_symtab_free) and offsets[i] the offset
 * into it, or NULL and addrs[i] where no symbol covers the address.
 */
void vbts_symtab_lookup_many(const struct vbts_symtab *s, const uint64_t *addrs, size_t n,
                             const char **names, uint64_t *offsets);

/* Address of the first symbol called `name`; 0 if found, -1 if not. */
int vbts_symtab_find(const struct vbts_symtab *s, const char *name, uint64_t *addr);

/* Address of the lowest symbol; 0 if there is one, -1 if the table is empty. */
int vbts_symtab_lowest(const struct vbts_symtab *s, uint64_t *addr);

/* "name+0xoff" or "0xaddr" when no symbol covers it; returns buf. */
char *vbts_symtab_format(const struct vbts_symtab *s, uint64_t addr, char *buf, size_t len);

#endif
