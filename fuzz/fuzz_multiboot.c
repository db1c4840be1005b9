/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile guest image into the multiboot loader
 * (vmm/boot/multiboot.c, a.out kludge and ELF32) and the image-kind checks
 * (vmm/boot/image.c), over 4 MiB of guest RAM, no KVM.  A loaded image must
 * lie in RAM above 1 MiB with its entry inside it, and the information
 * structure above it.
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
    if (multiboot_load(&mem, img, size, size % 2 ? "console=ttyS0 quiet" : "", &bi) == 0) {
        fuzz_check(multiboot_detect(img, size), "loaded without a header");
        fuzz_check(bi.load_start >= 0x100000 && bi.load_start < bi.load_end && bi.load_end <= RAM,
                   "image at 0x%llx-0x%llx", (unsigned long long)bi.load_start,
                   (unsigned long long)bi.load_end);
        fuzz_check(bi.entry >= bi.load_start && bi.entry < bi.load_end, "entry 0x%x", bi.entry);
        fuzz_check(bi.mbi >= bi.load_end && gmem_ptr(&mem, bi.mbi, 88), "info at 0x%x", bi.mbi);
    }
    free(img);
    return 0;
}
