/* SPDX-License-Identifier: MIT */
/* Guest image loaders.  Every address in an image is checked against RAM. */
#ifndef VBTS_LOADER_H
#define VBTS_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"

/* EAX at the multiboot entry. */
#define MB_BOOT_MAGIC 0x2badb002u

struct boot_info {
    uint32_t entry;         /* EIP for the multiboot entry */
    uint32_t mbi;           /* guest-physical address of the multiboot info (EBX) */
    uint64_t load_start;    /* lowest and one past the highest byte the image occupies */
    uint64_t load_end;
};

/* Multiboot v1: ELF32 or a.out-kludge images, as QEMU's -kernel loads them. */
int loader_multiboot(struct gmem *mem, const uint8_t *image, size_t size,
                     const char *cmdline, struct boot_info *bi);

/* True if the image has a valid multiboot v1 header. */
int loader_is_multiboot(const uint8_t *image, size_t size);

/* Read a whole file into a malloc'd buffer; errors name the file. */
int loader_read_file(const char *path, uint8_t **data, size_t *size);

#endif
