/* SPDX-License-Identifier: MIT */
/* Guest images: read one whole, and tell a multiboot kernel from a bzImage. */
#ifndef VBTS_BOOT_IMAGE_H
#define VBTS_BOOT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

enum image_kind { IMAGE_UNKNOWN, IMAGE_MULTIBOOT, IMAGE_LINUX };

/* Read a whole file into a malloc'd buffer; errors name the file. */
int image_read_file(const char *path, uint8_t **data, size_t *size);
enum image_kind image_detect(const uint8_t *image, size_t size);
/* The image is an ELF file of this class: 32 or 64; 0 if it is no ELF file. */
int image_elf_class(const uint8_t *image, size_t size);

#endif
