/* SPDX-License-Identifier: MIT */
/*
 * The Linux x86 boot protocol (Documentation/arch/x86/boot.rst), 64-bit
 * entry: a bzImage's protected-mode part at 1 MiB, a zero page
 * (struct boot_params) with the setup header copied from the image, e820,
 * command line and initrd, and identity-mapped page tables.
 */
#ifndef VBTS_BOOT_LINUX_H
#define VBTS_BOOT_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot/unpack.h"
#include "core/gmem.h"

/* Guest-physical layout of what the loader writes below 1 MiB. */
#define LINUX_GDT_ADDR      0x0500ull
#define LINUX_ZERO_PAGE     0x7000ull
#define LINUX_PML4_ADDR     0x9000ull     /* PML4, PDPT, 4 page directories: 0x9000-0xefff */
#define LINUX_CMDLINE_ADDR  0x20000ull
#define LINUX_EBDA_START    0x9fc00ull    /* reserved in e820, as on a PC */
#define LINUX_BIOS_START    0xe0000ull    /* reserved: firmware tables (x86/acpi.c) */
#define LINUX_KERNEL_ADDR   0x100000ull

#define LINUX_BOOT_CS 0x10                /* __BOOT_CS: the kernel expects these */
#define LINUX_BOOT_DS 0x18

/* Kernel code as it will run: linear [lin, lin+len) from guest-physical gpa. */
struct linux_code {
    uint64_t lin, gpa, len;
};
#define LINUX_MAX_CODE 8
#define LINUX_START_KERNEL_MAP 0xffffffff80000000ull  /* x86-64 kernel text: phys + this */

struct linux_boot {
    uint64_t entry;         /* RIP: the 64-bit entry, kernel + 0x200, or vmlinux's startup_64 */
    bool unpacked;          /* the payload was unpacked on the host */
    enum unpack_format payload; /* its format, by its magic */
    uint64_t zero_page;     /* RSI */
    uint64_t cr3;
    uint64_t gdt_base;
    uint16_t gdt_limit;
    uint16_t protocol;      /* boot protocol version, e.g. 0x020f */
    uint64_t initrd_addr, initrd_size;
    struct linux_code code[LINUX_MAX_CODE];
    int ncode;
};

/* True if the image carries a bzImage setup header ("HdrS", boot flag 0xaa55). */
int linux_detect(const uint8_t *image, size_t size);

/*
 * Load `image` (a bzImage with a 64-bit entry) and its initrd (may be NULL),
 * write the zero page, command line and page tables.  rsdp is the ACPI RSDP
 * address handed to the kernel in boot_params (0: the kernel scans for it).
 */
int linux_load(struct gmem *mem, const uint8_t *image, size_t size,
                 const uint8_t *initrd, size_t initrd_size, const char *cmdline,
                 uint64_t rsdp, struct linux_boot *lb);

#endif
