/* SPDX-License-Identifier: MIT */
/*
 * Multiboot v1 (the 0.6.96 specification): find the header in the first
 * 8 KiB, load an a.out-kludge image (flags bit 16) or an ELF32 image, and
 * build the information structure with memory map, command line and
 * modules right above the image, where QEMU puts them too: the structure
 * on the next page, the strings behind it, each module on a page of its
 * own.  Images and all that go where the memory map says RAM is: below
 * 0x9fc00 or from 1 MiB up.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot/multiboot.h"

#include "core/error.h"

#define MB_MAGIC          0x1badb002u
#define MB_SEARCH         8192
#define MB_F_AOUT_KLUDGE  (1u << 16)
#define MB_F_REQ_KNOWN    0x7u       /* page-align modules, memory info, video */

#define MBI_F_MEM         (1u << 0)
#define MBI_F_CMDLINE     (1u << 2)
#define MBI_F_MODS        (1u << 3)
#define MBI_F_MMAP        (1u << 6)
#define MBI_F_LOADER_NAME (1u << 9)

/* RAM as the memory map gives it: conventional memory, then from 1 MiB up. */
#define LOW_RAM_END       0x9fc00u
#define HIGH_RAM_START    0x100000u
#define PAGE_UP(x)        (((x) + 4095) & ~4095ull)

struct mb_header {
    uint32_t magic, flags, checksum;
    uint32_t header_addr, load_addr, load_end_addr, bss_end_addr, entry_addr;
};

struct mb_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
    uint32_t syms[4];
    uint32_t mmap_length, mmap_addr, drives_length, drives_addr, config_table;
    uint32_t boot_loader_name, apm_table;
    uint32_t vbe[6];
};

struct __attribute__((packed)) mb_mmap_entry {
    uint32_t size;
    uint64_t addr, len;
    uint32_t type;
};

static const struct mb_header *find_header(const uint8_t *image, size_t size, size_t *offset)
{
    size_t limit = size < MB_SEARCH ? size : MB_SEARCH;
    for (size_t off = 0; off + 12 <= limit; off += 4) {
        struct mb_header h;
        memcpy(&h, image + off, 12);
        if (h.magic == MB_MAGIC && (uint32_t)(h.magic + h.flags + h.checksum) == 0) {
            *offset = off;
            return (const struct mb_header *)(image + off);
        }
    }
    return NULL;
}

int multiboot_detect(const uint8_t *image, size_t size)
{
    size_t off;
    return find_header(image, size, &off) != NULL;
}

/* [start, start+len) lies in one of the RAM ranges of the memory map, below 4 GiB. */
static bool in_ram(const struct gmem *mem, uint64_t start, uint64_t len)
{
    uint64_t end = start + len;
    if (end < start || end > UINT32_MAX + 1ull || !gmem_contains(mem, start, len))
        return false;
    return end <= LOW_RAM_END || start >= HIGH_RAM_START;
}

static int check_range(const struct gmem *mem, uint64_t start, uint64_t len, const char *what)
{
    if (!in_ram(mem, start, len))
        return error_fail("%s 0x%llx-0x%llx lies outside guest memory (RAM for images is "
                         "0x0-0x%x and 0x%x-0x%llx)", what, (unsigned long long)start,
                         (unsigned long long)(start + len), LOW_RAM_END, HIGH_RAM_START,
                         (unsigned long long)gmem_low_size(mem));
    return 0;
}

static int load_aout(struct gmem *mem, const uint8_t *image, size_t size, size_t hoff,
                     const struct mb_header *h, struct boot_info *bi)
{
    if (hoff + sizeof(*h) > size)
        return error_fail("multiboot header is truncated (a.out kludge needs 32 bytes)");
    if (h->load_addr > h->header_addr || h->header_addr - h->load_addr > hoff)
        return error_fail("multiboot header: load_addr 0x%x does not precede header_addr 0x%x "
                         "within the file", h->load_addr, h->header_addr);
    size_t file_off = hoff - (h->header_addr - h->load_addr);
    uint64_t load_len = h->load_end_addr ? (uint64_t)h->load_end_addr - h->load_addr
                                         : size - file_off;
    if (h->load_end_addr && h->load_end_addr < h->load_addr)
        return error_fail("multiboot header: load_end_addr 0x%x is below load_addr 0x%x",
                         h->load_end_addr, h->load_addr);
    if (load_len > size - file_off)
        return error_fail("multiboot header: load range 0x%x-0x%llx is larger than the file",
                         h->load_addr, (unsigned long long)h->load_addr + load_len);
    uint64_t end = h->load_addr + load_len;
    if (h->bss_end_addr) {
        if (h->bss_end_addr < end)
            return error_fail("multiboot header: bss_end_addr 0x%x is below the load end 0x%llx",
                             h->bss_end_addr, (unsigned long long)end);
        end = h->bss_end_addr;
    }
    if (check_range(mem, h->load_addr, end - h->load_addr, "image") < 0)
        return -1;
    if (h->entry_addr < h->load_addr || h->entry_addr >= end)
        return error_fail("multiboot header: entry_addr 0x%x is outside the image 0x%x-0x%llx",
                         h->entry_addr, h->load_addr, (unsigned long long)end);
    uint8_t *dst = gmem_ptr(mem, h->load_addr, end - h->load_addr);
    memcpy(dst, image + file_off, load_len);
    memset(dst + load_len, 0, end - h->load_addr - load_len);
    bi->entry = h->entry_addr;
    bi->load_start = h->load_addr;
    bi->load_end = end;
    return 0;
}

static int load_elf(struct gmem *mem, const uint8_t *image, size_t size, struct boot_info *bi)
{
    if (elf_version(EV_CURRENT) == EV_NONE)
        return error_fail("libelf: %s", elf_errmsg(-1));
    Elf *e = elf_memory((char *)image, size);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        if (e)
            elf_end(e);
        return error_fail("not an ELF file and no a.out kludge in the multiboot header");
    }
    int ret = -1;
    GElf_Ehdr eh;
    size_t phnum;
    if (!gelf_getehdr(e, &eh)) {
        error_fail("bad ELF header: %s", elf_errmsg(-1));
        goto out;
    }
    if (gelf_getclass(e) != ELFCLASS32 || eh.e_machine != EM_386) {
        error_fail("ELF image is not ELF32 for i386 (multiboot v1 loads 32-bit ELF only)");
        goto out;
    }
    if (eh.e_type != ET_EXEC) {
        error_fail("ELF image is not an executable (e_type %u)", eh.e_type);
        goto out;
    }
    if (elf_getphdrnum(e, &phnum) < 0) {
        error_fail("bad ELF program headers: %s", elf_errmsg(-1));
        goto out;
    }
    uint64_t lo = UINT64_MAX, hi = 0, entry = eh.e_entry;
    bool entry_ok = false;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, i, &ph)) {
            error_fail("bad ELF program header %zu: %s", i, elf_errmsg(-1));
            goto out;
        }
        if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
            continue;
        if (ph.p_filesz > ph.p_memsz || ph.p_offset > size || ph.p_filesz > size - ph.p_offset) {
            error_fail("ELF segment %zu: file range 0x%llx+0x%llx is outside the file", i,
                      (unsigned long long)ph.p_offset, (unsigned long long)ph.p_filesz);
            goto out;
        }
        if (check_range(mem, ph.p_paddr, ph.p_memsz, "ELF segment") < 0)
            goto out;
        uint8_t *dst = gmem_ptr(mem, ph.p_paddr, ph.p_memsz);
        memcpy(dst, image + ph.p_offset, ph.p_filesz);
        memset(dst + ph.p_filesz, 0, ph.p_memsz - ph.p_filesz);
        /* A virtual entry point is converted through its segment, as QEMU does. */
        if (eh.e_entry >= ph.p_vaddr && eh.e_entry - ph.p_vaddr < ph.p_memsz) {
            entry = ph.p_paddr + (eh.e_entry - ph.p_vaddr);
            entry_ok = true;
        }
        if (ph.p_paddr < lo)
            lo = ph.p_paddr;
        if (ph.p_paddr + ph.p_memsz > hi)
            hi = ph.p_paddr + ph.p_memsz;
    }
    if (hi == 0) {
        error_fail("ELF image has no loadable segment");
        goto out;
    }
    if (!entry_ok) {
        error_fail("ELF entry point 0x%llx is not inside a loadable segment",
                  (unsigned long long)eh.e_entry);
        goto out;
    }
    bi->entry = (uint32_t)entry;
    bi->load_start = lo;
    bi->load_end = hi;
    ret = 0;
out:
    elf_end(e);
    return ret;
}

/* Where each part of the information goes, above the image. */
struct info_layout {
    uint64_t info, mmap, name, cmd, mods, mod_cmds, end;
    uint64_t mod_at[MULTIBOOT_MAX_MODULES];
};

static int lay_out(const struct gmem *mem, const struct multiboot_load_args *a, int nmap,
                   struct boot_info *bi, struct info_layout *l)
{
    l->info = PAGE_UP(bi->load_end);
    l->mmap = l->info + sizeof(struct mb_info);
    l->name = l->mmap + (uint64_t)nmap * sizeof(struct mb_mmap_entry);
    l->cmd = l->name + sizeof("vbts");
    l->mods = (l->cmd + strlen(a->cmdline) + 1 + 3) & ~3ull;
    l->mod_cmds = l->mods + 16ull * (uint64_t)a->nmods;
    uint64_t end = l->mod_cmds;
    for (int i = 0; i < a->nmods; i++)
        end += strlen(a->mods[i].cmdline) + 1;
    for (int i = 0; i < a->nmods; i++) {
        l->mod_at[i] = PAGE_UP(end);
        end = l->mod_at[i] + a->mods[i].size;
    }
    l->end = end;
    /* The image's own range of RAM (below 640 KiB or above 1 MiB) holds it all. */
    if (!in_ram(mem, l->info, end - l->info))
        return error_fail("no room for the multiboot information%s above the image "
                         "(needs 0x%llx-0x%llx; use a larger --memory)",
                         a->nmods ? " and modules" : "", (unsigned long long)l->info,
                         (unsigned long long)end);
    return 0;
}

static void put(struct gmem *mem, uint64_t gpa, const void *src, size_t len)
{
    memcpy(gmem_ptr(mem, gpa, len), src, len);
}

/* Lay out the information structure, memory map, name, command lines and modules. */
static int build_info(struct gmem *mem, const struct multiboot_load_args *a, struct boot_info *bi)
{
    struct mb_mmap_entry mmap[3];
    int nmap = 0;
    uint64_t low = gmem_low_size(mem);

    mmap[nmap++] = (struct mb_mmap_entry){ 20, 0, LOW_RAM_END, 1 };
    mmap[nmap++] = (struct mb_mmap_entry){ 20, HIGH_RAM_START, low - HIGH_RAM_START, 1 };
    if (gmem_high_size(mem))
        mmap[nmap++] = (struct mb_mmap_entry){ 20, GMEM_HIGH_BASE, gmem_high_size(mem), 1 };

    struct info_layout l;
    if (lay_out(mem, a, nmap, bi, &l) < 0)
        return -1;
    struct mb_info info = {
        .flags = MBI_F_MEM | MBI_F_CMDLINE | MBI_F_MMAP | MBI_F_LOADER_NAME,
        .mem_lower = LOW_RAM_END / 1024,
        .mem_upper = (uint32_t)((low - HIGH_RAM_START) / 1024),
        .cmdline = (uint32_t)l.cmd,
        .mmap_length = (uint32_t)(nmap * sizeof(mmap[0])),
        .mmap_addr = (uint32_t)l.mmap,
        .boot_loader_name = (uint32_t)l.name,
    };
    if (a->nmods) {
        info.flags |= MBI_F_MODS;
        info.mods_count = (uint32_t)a->nmods;
        info.mods_addr = (uint32_t)l.mods;
    }
    put(mem, l.info, &info, sizeof(info));
    put(mem, l.mmap, mmap, info.mmap_length);
    put(mem, l.name, "vbts", sizeof("vbts"));
    put(mem, l.cmd, a->cmdline, strlen(a->cmdline) + 1);
    uint64_t cmd_at = l.mod_cmds;
    for (int i = 0; i < a->nmods; i++) {
        const struct multiboot_module *m = &a->mods[i];
        uint32_t entry[4] = { (uint32_t)l.mod_at[i], (uint32_t)(l.mod_at[i] + m->size),
                              (uint32_t)cmd_at, 0 };
        put(mem, l.mods + 16ull * (uint64_t)i, entry, sizeof(entry));
        put(mem, cmd_at, m->cmdline, strlen(m->cmdline) + 1);
        cmd_at += strlen(m->cmdline) + 1;
        if (m->size)
            put(mem, l.mod_at[i], m->data, m->size);
    }
    bi->mbi = (uint32_t)l.info;
    bi->info_end = l.end;
    return 0;
}

int multiboot_load(struct gmem *mem, const uint8_t *image, size_t size,
                   const struct multiboot_load_args *a, struct boot_info *bi)
{
    size_t hoff;
    const struct mb_header *h = find_header(image, size, &hoff);
    if (!h)
        return error_fail("not a multiboot image (no multiboot header in the first %d bytes)",
                         MB_SEARCH);
    if (a->nmods < 0 || a->nmods > MULTIBOOT_MAX_MODULES)
        return error_fail("%d multiboot modules (at most %d)", a->nmods, MULTIBOOT_MAX_MODULES);
    struct mb_header hdr = { 0 };
    memcpy(&hdr, h, size - hoff < sizeof(hdr) ? size - hoff : sizeof(hdr));
    uint32_t unknown = hdr.flags & 0xffffu & ~MB_F_REQ_KNOWN;
    if (unknown)
        return error_fail("multiboot header requires unsupported features (flags 0x%x)", unknown);
    memset(bi, 0, sizeof(*bi));
    int r = (hdr.flags & MB_F_AOUT_KLUDGE) ? load_aout(mem, image, size, hoff, &hdr, bi)
                                          : load_elf(mem, image, size, bi);
    if (r < 0)
        return r;
    return build_info(mem, a, bi);
}

/*
 * QEMU's -initrd for a multiboot kernel: items split at commas, ",," a
 * comma within one; the whole item is the module's command line and its
 * first word the file.
 */
int multiboot_split_modules(const char *spec, char **items, int max)
{
    int n = 0;
    const char *p = spec;
    for (;;) {
        char *item = malloc(strlen(p) + 1), *o = item;
        if (!item)
            goto fail_oom;
        while (*p && !(p[0] == ',' && p[1] != ',')) {
            if (p[0] == ',')
                p++;            /* ",," */
            *o++ = *p++;
        }
        *o = 0;
        if (n == max) {
            free(item);
            error_fail("more than %d modules in '%s'", max, spec);
            goto fail;
        }
        items[n++] = item;
        if (!item[0] || item[0] == ' ') {
            error_fail("a module without a file name in '%s'", spec);
            goto fail;
        }
        if (!*p++)
            return n;
    }
fail_oom:
    error_fail("out of memory");
fail:
    while (n)
        free(items[--n]);
    return -1;
}
