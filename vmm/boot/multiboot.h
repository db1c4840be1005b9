/* SPDX-License-Identifier: MIT */
/* Multiboot v1 images (ELF32 or a.out kludge) and their modules, loaded as
 * QEMU's -kernel and -initrd do.  Every address in an image is checked
 * against RAM. */
#ifndef VBTS_BOOT_MULTIBOOT_H
#define VBTS_BOOT_MULTIBOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gmem.h"

/* EAX at the multiboot entry. */
#define MB_BOOT_MAGIC 0x2badb002u

struct boot_info {
    uint32_t entry;         /* EIP for the multiboot entry */
    uint32_t mbi;           /* guest-physical address of the multiboot info (EBX) */
    uint64_t load_start;    /* lowest and one past the highest byte the image occupies */
    uint64_t load_end;
    uint64_t info_end;      /* one past the information, its strings and the modules */
};

#define MULTIBOOT_MAX_MODULES 16

struct multiboot_module {
    const uint8_t *data;
    size_t size;
    const char *cmdline;    /* QEMU gives the whole -initrd item: "FILE ARGS" */
};

struct multiboot_load_args {
    const char *cmdline;    /* the kernel's (QEMU: "KERNEL APPEND") */
    const struct multiboot_module *mods;
    int nmods;              /* up to MULTIBOOT_MAX_MODULES */
};

/* Multiboot v1: ELF32 or a.out-kludge images, as QEMU's -kernel loads them. */
int multiboot_load(struct gmem *mem, const uint8_t *image, size_t size,
                   const struct multiboot_load_args *a, struct boot_info *bi);

/*
 * Split "FILE[ ARGS][,FILE[ ARGS]...]" (",," is a comma) into at most max
 * malloc'd items, as QEMU's -initrd for a multiboot kernel.  Returns how
 * many, or -1 (an empty item, too many).
 */
int multiboot_split_modules(const char *spec, char **items, int max);

/* True if the image has a valid multiboot v1 header. */
int multiboot_detect(const uint8_t *image, size_t size);

#endif
