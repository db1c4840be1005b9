/* SPDX-License-Identifier: MIT */
/* Reading guest images and telling their kind. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "boot/image.h"
#include "core/error.h"

Test(image, read_missing_file)
{
    uint8_t *d;
    size_t n;
    cr_assert_eq(image_read_file("does-not-exist.bin", &d, &n), -1);
    cr_assert_str_eq(error_last(), "cannot open does-not-exist.bin: No such file or directory");
}

Test(image, an_elfs_class_or_none)
{
    static const uint8_t e32[] = { 0x7f, 'E', 'L', 'F', 1 }, e64[] = { 0x7f, 'E', 'L', 'F', 2 },
                         bad[] = { 0x7f, 'E', 'L', 'F', 9 }, flat[] = { 0x02, 0xb0, 0xad, 0x1b, 0 };
    cr_assert_eq(image_elf_class(e32, sizeof(e32)), 32);
    cr_assert_eq(image_elf_class(e64, sizeof(e64)), 64);
    cr_assert_eq(image_elf_class(bad, sizeof(bad)), 0);
    cr_assert_eq(image_elf_class(flat, sizeof(flat)), 0, "a flat multiboot image");
    cr_assert_eq(image_elf_class(e64, 4), 0, "too short to say");
}
