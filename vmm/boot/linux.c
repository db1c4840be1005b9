/* SPDX-License-Identifier: MIT */
/*
 * Linux x86 boot protocol, 64-bit entry.  The kernel's own decompressor
 * runs from 1 MiB (startup_64 = load address + 0x200) with RSI pointing at
 * the zero page; it needs 64-bit mode, paging with an identity map covering
 * itself, the zero page, the command line and the initrd, and the boot GDT
 * selectors __BOOT_CS/__BOOT_DS.  Field offsets are those of
 * struct boot_params (arch/x86/include/uapi/asm/bootparam.h).
 *
 * Shortcut: vbts unpacks the payload on the host, whatever its compression
 * (boot/unpack.c), and enters the kernel proper (vmlinux's startup_64) in the same
 * state the decompressor would leave: 64-bit mode, identity map, RSI = zero
 * page, kernel at its link-time physical address, so no relocation is
 * needed (and no KASLR: that is the decompressor's choice).  Why: where
 * CPL0 code is emulated (kvm_pvm, about 4 M instructions/s) the
 * decompressor alone takes about two minutes.  A payload that does not
 * unpack boots through the decompressor as the protocol describes.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "boot/linux.h"

#include "boot/unpack.h"
#include "core/error.h"
#include "vbts/le.h"

/* Setup header, at the same offsets in the image and in boot_params. */
#define HDR_SETUP_SECTS     0x1f1
#define HDR_BOOT_FLAG       0x1fe
#define HDR_JUMP            0x200   /* its second byte ends the header: 0x202 + it */
#define HDR_MAGIC           0x202
#define HDR_VERSION         0x206
#define HDR_TYPE_OF_LOADER  0x210
#define HDR_LOADFLAGS       0x211
#define HDR_RAMDISK_IMAGE   0x218
#define HDR_RAMDISK_SIZE    0x21c
#define HDR_CMD_LINE_PTR    0x228
#define HDR_INITRD_ADDR_MAX 0x22c
#define HDR_XLOADFLAGS      0x236
#define HDR_CMDLINE_SIZE    0x238
#define HDR_PAYLOAD_OFFSET  0x248
#define HDR_PAYLOAD_LENGTH  0x24c
#define HDR_PREF_ADDRESS    0x258
#define HDR_INIT_SIZE       0x260

/* Elsewhere in boot_params. */
#define BP_ACPI_RSDP_ADDR   0x070
#define BP_E820_ENTRIES     0x1e8
#define BP_E820_TABLE       0x2d0
#define BP_E820_MAX         128

#define XLF_KERNEL_64       (1u << 0)
#define LOADED_HIGH         (1u << 0)
#define E820_RAM            1
#define E820_RESERVED       2

/* Protocol 2.12 introduced xloadflags, which says whether the 64-bit entry exists. */
#define MIN_PROTOCOL        0x020c


int linux_detect(const uint8_t *image, size_t size)
{
    return size >= 0x264 && vbts_le16(image + HDR_BOOT_FLAG) == 0xaa55 &&
           memcmp(image + HDR_MAGIC, "HdrS", 4) == 0;
}

static void e820_add(uint8_t *bp, uint64_t addr, uint64_t len, uint32_t type)
{
    uint8_t n = bp[BP_E820_ENTRIES];
    if (!len || n >= BP_E820_MAX)
        return;
    uint8_t *e = bp + BP_E820_TABLE + 20u * n;
    vbts_put64(e + 0, addr);
    vbts_put64(e + 8, len);
    vbts_put32(e + 16, type);
    bp[BP_E820_ENTRIES] = n + 1;
}

/* Identity map of the low 4 GiB with 2 MiB pages: all the kernel's entry needs. */
static void build_page_tables(struct gmem *mem)
{
    uint64_t *pml4 = gmem_ptr(mem, LINUX_PML4_ADDR, 4096);
    uint64_t *pdpt = gmem_ptr(mem, LINUX_PML4_ADDR + 0x1000, 4096);
    uint64_t *pd = gmem_ptr(mem, LINUX_PML4_ADDR + 0x2000, 4 * 4096);
    memset(pml4, 0, 6 * 4096);
    pml4[0] = (LINUX_PML4_ADDR + 0x1000) | 0x3;                 /* present, writable */
    for (int i = 0; i < 4; i++)
        pdpt[i] = (LINUX_PML4_ADDR + 0x2000 + i * 0x1000ull) | 0x3;
    for (uint64_t i = 0; i < 4 * 512; i++)
        pd[i] = (i << 21) | 0x83;                                /* present, writable, 2 MiB */
}

static void build_gdt(struct gmem *mem, struct linux_boot *lb)
{
    static const uint64_t gdt[4] = {
        0, 0,
        0x00af9b000000ffffull,      /* 0x10: 64-bit code, accessed */
        0x00cf93000000ffffull,      /* 0x18: flat data, accessed */
    };
    memcpy(gmem_ptr(mem, LINUX_GDT_ADDR, sizeof(gdt)), gdt, sizeof(gdt));
    lb->gdt_base = LINUX_GDT_ADDR;
    lb->gdt_limit = sizeof(gdt) - 1;
}

/*
 * Place vmlinux's PT_LOAD segments at their physical addresses; entry and
 * end out.  -1: not a vmlinux we can enter; -2: it does not fit (error set).
 */
static int load_vmlinux(struct gmem *mem, const uint8_t *elf, size_t len, uint64_t *entry,
                        uint64_t *end, struct linux_boot *lb)
{
    Elf64_Ehdr eh;
    if (len < sizeof(eh))
        return -1;
    memcpy(&eh, elf, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
        eh.e_phoff > len || eh.e_phnum > (len - eh.e_phoff) / sizeof(Elf64_Phdr))
        return -1;
    bool found = false;
    *end = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, elf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_LOAD || !ph.p_memsz)
            continue;
        if (ph.p_filesz > ph.p_memsz || ph.p_offset > len || ph.p_filesz > len - ph.p_offset ||
            ph.p_paddr < LINUX_KERNEL_ADDR)
            return -1;
        if (ph.p_memsz > UINT64_MAX - ph.p_paddr) {
            error_fail("vmlinux segment %u: physical range 0x%llx+0x%llx wraps around the "
                       "address space", i, (unsigned long long)ph.p_paddr,
                       (unsigned long long)ph.p_memsz);
            return -2;
        }
        uint8_t *dst = gmem_ptr(mem, ph.p_paddr, ph.p_memsz);
        if (!dst) {
            error_fail("the kernel needs RAM up to 0x%llx; use a larger --memory",
                      (unsigned long long)(ph.p_paddr + ph.p_memsz));
            return -2;
        }
        memcpy(dst, elf + ph.p_offset, ph.p_filesz);
        memset(dst + ph.p_filesz, 0, ph.p_memsz - ph.p_filesz);
        if ((ph.p_flags & PF_X) && lb->ncode < LINUX_MAX_CODE &&
            ph.p_vaddr + ph.p_memsz >= ph.p_vaddr)
            lb->code[lb->ncode++] = (struct linux_code){ ph.p_vaddr, ph.p_paddr, ph.p_memsz };
        if (ph.p_paddr + ph.p_memsz > *end)
            *end = ph.p_paddr + ph.p_memsz;
        /* e_entry is startup_64's physical address (ENTRY(phys_startup_64)). */
        if (eh.e_entry >= ph.p_paddr && eh.e_entry - ph.p_paddr < ph.p_filesz) {
            *entry = eh.e_entry;
            found = true;
        }
    }
    return found ? 0 : -1;
}

/*
 * 1: the payload was unpacked and loaded (entry, end set); 0: use the
 * kernel's decompressor (a format we do not know, a payload that does not
 * unpack or is no vmlinux: lb->payload says which); -1: an error worth
 * stopping for.
 */
static int unpack_on_host(struct gmem *mem, const uint8_t *image, size_t size, size_t kernel_off,
                          uint64_t *entry, uint64_t *end, struct linux_boot *lb)
{
    uint32_t poff = vbts_le32(image + HDR_PAYLOAD_OFFSET), plen = vbts_le32(image + HDR_PAYLOAD_LENGTH);
    uint32_t init_size = vbts_le32(image + HDR_INIT_SIZE);
    if (plen < 8 || poff > size - kernel_off || plen > size - kernel_off - poff)
        return 0;
    const uint8_t *payload = image + kernel_off + poff;
    lb->payload = unpack_detect(payload, plen);
    if (lb->payload == UNPACK_UNKNOWN)
        return 0;
    if (lb->payload == UNPACK_NONE) {
        int r = load_vmlinux(mem, payload, plen, entry, end, lb);
        return r == 0 ? 1 : r == -2 ? -1 : 0;
    }
    /* The build appends the uncompressed size (gzip's own trailer holds
     * it too); init_size bounds it. */
    uint32_t out_size = vbts_le32(payload + plen - 4);
    if (!out_size || out_size > init_size)
        return 0;
    /* The image's word: a vmlinux larger than the guest's RAM cannot be
     * loaded, so it is no reason to allocate gigabytes on the host. */
    if (out_size > gmem_low_size(mem))
        return error_fail("the kernel unpacks to %u bytes; --memory gives 0x%llx (use a "
                          "larger --memory)", out_size,
                          (unsigned long long)gmem_low_size(mem));
    uint8_t *out = malloc(out_size);
    if (!out)
        return error_fail("cannot allocate %u bytes to unpack the kernel", out_size);
    long got = unpack_payload(lb->payload, payload, plen, out, out_size);
    int r = got > 0 ? load_vmlinux(mem, out, (size_t)got, entry, end, lb) : -1;
    free(out);
    return r == 0 ? 1 : r == -2 ? -1 : 0;
}

/* The setup header's checks: protocol, 64-bit entry, bzImage, and where the kernel starts. */
static int check_header(const uint8_t *image, size_t size, uint16_t *version, size_t *kernel_off,
                        size_t *hdr_end)
{
    if (!linux_detect(image, size))
        return error_fail("not a bzImage (no Linux setup header)");
    *version = vbts_le16(image + HDR_VERSION);
    if (*version < MIN_PROTOCOL)
        return error_fail("Linux boot protocol %u.%02u is too old (vbts needs 2.12 or later "
                          "for the 64-bit entry)", *version >> 8, *version & 0xff);
    if (!(vbts_le16(image + HDR_XLOADFLAGS) & XLF_KERNEL_64))
        return error_fail("the kernel has no 64-bit entry point (xloadflags lacks XLF_KERNEL_64)");
    if (!(image[HDR_LOADFLAGS] & LOADED_HIGH))
        return error_fail("the kernel is not a bzImage (loadflags lacks LOADED_HIGH)");
    unsigned setup_sects = image[HDR_SETUP_SECTS] ? image[HDR_SETUP_SECTS] : 4;
    *kernel_off = (setup_sects + 1) * 512ull;
    *hdr_end = 0x202 + image[HDR_JUMP + 1];
    if (*kernel_off >= size || *hdr_end > *kernel_off || *hdr_end > 4096)
        return error_fail("bzImage is truncated (setup of %u sectors, file of %zu bytes)",
                          setup_sects, size);
    return 0;
}

/*
 * The kernel in RAM: unpacked on the host when it can be, else the
 * compressed image at 1 MiB with room for its decompressor.  1 if unpacked,
 * 0 if not, -1 with the error set.
 */
static int place_kernel(struct gmem *mem, const uint8_t *image, size_t size, size_t kernel_off,
                        uint64_t *entry, uint64_t *kernel_end, struct linux_boot *lb)
{
    size_t kernel_size = size - kernel_off;
    uint64_t low = gmem_low_size(mem);
    if (low < LINUX_KERNEL_ADDR + kernel_size)
        return error_fail("the kernel (%zu bytes at 1 MiB) does not fit in --memory; use a "
                          "larger --memory", kernel_size);
    *entry = LINUX_KERNEL_ADDR + 0x200;
    *kernel_end = 0;
    int unpacked = unpack_on_host(mem, image, size, kernel_off, entry, kernel_end, lb);
    if (unpacked)
        return unpacked;
    /* The decompressor unpacks to pref_address and needs init_size bytes there. */
    uint64_t pref = vbts_le64(image + HDR_PREF_ADDRESS);
    uint64_t init_size = vbts_le32(image + HDR_INIT_SIZE);
    uint64_t at = pref > LINUX_KERNEL_ADDR ? pref : LINUX_KERNEL_ADDR;
    /* pref_address is the image's word: compare without adding, so that nothing wraps. */
    if (at > low || init_size > low - at)
        return error_fail("the kernel needs RAM from 0x%llx for 0x%llx bytes to decompress; "
                          "--memory gives 0x%llx (use a larger --memory)",
                          (unsigned long long)at, (unsigned long long)init_size,
                          (unsigned long long)low);
    *kernel_end = at + init_size;
    if (*kernel_end < LINUX_KERNEL_ADDR + kernel_size)
        *kernel_end = LINUX_KERNEL_ADDR + kernel_size;
    memcpy(gmem_ptr(mem, LINUX_KERNEL_ADDR, kernel_size), image + kernel_off, kernel_size);
    /* The decompressed kernel runs at __START_KERNEL_map + its physical address. */
    lb->code[0] = (struct linux_code){ LINUX_START_KERNEL_MAP + at, at, init_size };
    lb->ncode = init_size ? 1 : 0;
    return 0;
}

/* The initrd as high as allowed, page aligned, clear of the decompressed kernel. */
static int place_initrd(struct gmem *mem, const uint8_t *image, uint8_t *bp, const uint8_t *initrd,
                        size_t initrd_size, uint64_t kernel_end, struct linux_boot *lb)
{
    uint64_t low = gmem_low_size(mem);
    uint64_t top = vbts_le32(image + HDR_INITRD_ADDR_MAX) + 1ull;
    if (top > low)
        top = low;
    uint64_t at = initrd_size <= top ? (top - initrd_size) & ~4095ull : 0;
    if (at < kernel_end)
        return error_fail("no room for the initrd (%zu bytes) above the kernel (which ends at "
                          "0x%llx) below 0x%llx; use a larger --memory", initrd_size,
                          (unsigned long long)kernel_end, (unsigned long long)top);
    memcpy(gmem_ptr(mem, at, initrd_size), initrd, initrd_size);
    vbts_put32(bp + HDR_RAMDISK_IMAGE, (uint32_t)at);
    vbts_put32(bp + HDR_RAMDISK_SIZE, (uint32_t)initrd_size);
    lb->initrd_addr = at;
    lb->initrd_size = initrd_size;
    return 0;
}

int linux_load(struct gmem *mem, const uint8_t *image, size_t size,
               const uint8_t *initrd, size_t initrd_size, const char *cmdline,
               uint64_t rsdp, struct linux_boot *lb)
{
    memset(lb, 0, sizeof(*lb));
    uint16_t version = 0;
    size_t kernel_off = 0, hdr_end = 0;
    if (check_header(image, size, &version, &kernel_off, &hdr_end) < 0)
        return -1;
    uint64_t entry = 0, kernel_end = 0;
    int unpacked = place_kernel(mem, image, size, kernel_off, &entry, &kernel_end, lb);
    if (unpacked < 0)
        return -1;

    uint8_t *bp = gmem_ptr(mem, LINUX_ZERO_PAGE, 4096);
    memset(bp, 0, 4096);
    memcpy(bp + HDR_SETUP_SECTS, image + HDR_SETUP_SECTS, hdr_end - HDR_SETUP_SECTS);
    bp[HDR_TYPE_OF_LOADER] = 0xff;                 /* undefined loader: no ID assigned */

    uint32_t cmd_max = vbts_le32(image + HDR_CMDLINE_SIZE);
    size_t cmd_len = strlen(cmdline);
    if (cmd_len > cmd_max)
        return error_fail("kernel command line is %zu bytes; this kernel takes at most %u",
                          cmd_len, cmd_max);
    memcpy(gmem_ptr(mem, LINUX_CMDLINE_ADDR, cmd_len + 1), cmdline, cmd_len + 1);
    vbts_put32(bp + HDR_CMD_LINE_PTR, LINUX_CMDLINE_ADDR);
    if (initrd && initrd_size &&
        place_initrd(mem, image, bp, initrd, initrd_size, kernel_end, lb) < 0)
        return -1;
    vbts_put64(bp + BP_ACPI_RSDP_ADDR, rsdp);

    /* The kernel reserves what it was loaded into; the tables sit in reserved areas. */
    uint64_t low = gmem_low_size(mem);
    e820_add(bp, 0, LINUX_EBDA_START, E820_RAM);
    e820_add(bp, LINUX_EBDA_START, 0xa0000 - LINUX_EBDA_START, E820_RESERVED);
    e820_add(bp, LINUX_BIOS_START, LINUX_KERNEL_ADDR - LINUX_BIOS_START, E820_RESERVED);
    e820_add(bp, LINUX_KERNEL_ADDR, low - LINUX_KERNEL_ADDR, E820_RAM);
    e820_add(bp, GMEM_HIGH_BASE, gmem_high_size(mem), E820_RAM);

    build_page_tables(mem);
    build_gdt(mem, lb);
    lb->entry = entry;
    lb->unpacked = unpacked;
    lb->zero_page = LINUX_ZERO_PAGE;
    lb->cr3 = LINUX_PML4_ADDR;
    lb->protocol = version;
    return 0;
}
