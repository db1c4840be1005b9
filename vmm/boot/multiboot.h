/* SPDX-License-Identifier: MIT */
/* Multiboot v1 images (ELF32 or a.out kludge), loaded as QEMU's -kernel does.
 * Every address in an image is checked against RAM. */
#ifndef VBTS_BOOT_MULTIBOOT_H
#define VBTS_BOOT_MULTIBOOT_H

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
};

/* Multiboot v1: ELF32 or a.out-kludge images, as QEMU's -kernel loads them. */
int multiboot_load(struct gmem *mem, const uint8_t *image, size_t size,
                     const char *cmdline, struct boot_info *bi);

/* True if the image has a valid multiboot v1 header. */
int multiboot_detect(const uint8_t *image, size_t size);

#endif
