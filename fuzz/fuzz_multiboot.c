/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile guest image into the multiboot loader
 * (vmm/boot/multiboot.c, a.out kludge and ELF32) and the image-kind checks
 * (vmm/boot/image.c), over 4 MiB of guest RAM, no KVM, with a module of
 * the image's own size when the size is odd.  A loaded image must lie in
 * RAM (below 0x9fc00, or from 1 MiB up) with its entry inside it, and the
 * information and modules above it, in the same range of RAM.
 */
#include "fuzz.h"

#include "boot/image.h"
#include "boot/multiboot.h"
#include "core/gmem.h"

#define RAM (4ull << 20)

static struct gmem mem;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return gmem_init(&mem, RAM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mem.host && LLVMFuzzerInitialize(NULL, NULL) < 0)
        abort();
    /* The loaders must not read past the image: an exact-size copy. */
    uint8_t *img = malloc(size ? size : 1);
    if (!img)
        abort();
    memcpy(img, data, size);
    enum image_kind kind = image_detect(img, size);
    fuzz_check(kind != IMAGE_MULTIBOOT || multiboot_detect(img, size), "detect");
    struct boot_info bi;
    struct multiboot_module mod = { img, size, "mod a=1" };
    struct multiboot_load_args a = { .cmdline = size % 2 ? "k console=ttyS0 quiet" : "",
                                     .mods = &mod, .nmods = (int)(size % 2) };
    if (multiboot_load(&mem, img, size, &a, &bi) == 0) {
        fuzz_check(multiboot_detect(img, size), "loaded without a header");
        /* Segments may sit on both sides of the hole; the information goes above the last. */
        bool low = bi.load_end <= 0x9fc00;
        fuzz_check(bi.load_start < bi.load_end && bi.load_end <= RAM &&
                   (bi.load_start < 0x9fc00 || bi.load_start >= 0x100000) &&
                   (low || bi.load_end > 0x100000),
                   "image at 0x%llx-0x%llx", (unsigned long long)bi.load_start,
                   (unsigned long long)bi.load_end);
        fuzz_check(bi.entry >= bi.load_start && bi.entry < bi.load_end, "entry 0x%x", bi.entry);
        fuzz_check(bi.mbi >= bi.load_end && bi.info_end > bi.mbi &&
                   (low ? bi.info_end <= 0x9fc00 : bi.mbi >= 0x100000 && bi.info_end <= RAM) &&
                   gmem_ptr(&mem, bi.mbi, bi.info_end - bi.mbi),
                   "info at 0x%x-0x%llx", bi.mbi, (unsigned long long)bi.info_end);
    }
    free(img);
    return 0;
}
