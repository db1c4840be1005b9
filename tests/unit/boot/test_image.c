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
