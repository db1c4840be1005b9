/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a hostile bzImage into the Linux loader
 * (vmm/boot/linux.c): the setup header, the LZ4 payload it unpacks on the
 * host (vmm/boot/lz4_legacy.c) and the vmlinux inside, the initrd and
 * command line placement, over 64 MiB of guest RAM, no KVM.
 *
 * Input: u8 options (bits 0-3: initrd of N * 1000 bytes; bit 4: a command
 * line of 1000 bytes), then the image.
 */
#include "fuzz.h"

#include "boot/image.h"
#include "boot/linux.h"
#include "core/gmem.h"

#define RAM (64ull << 20)

static struct gmem mem;
static uint8_t initrd[15 * 1000];
static char long_cmdline[1001];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    memset(initrd, 0xab, sizeof(initrd));
    memset(long_cmdline, 'x', sizeof(long_cmdline) - 1);
    return gmem_init(&mem, RAM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mem.host && LLVMFuzzerInitialize(NULL, NULL) < 0)
        abort();
    if (size < 1)
        return 0;
    size_t rd = (data[0] & 15) * 1000u;
    const char *cmdline = data[0] & 16 ? long_cmdline : "console=ttyS0 panic=-1";
    size--;
    /* The loader must not read past the image: an exact-size copy. */
    uint8_t *img = malloc(size ? size : 1);
    if (!img)
        abort();
    memcpy(img, data + 1, size);
    image_detect(img, size);
    struct linux_boot lb;
    if (linux_load(&mem, img, size, rd ? initrd : NULL, rd, cmdline, 0xe0000, &lb) == 0) {
        fuzz_check(linux_detect(img, size), "loaded without a setup header");
        fuzz_check(lb.ncode >= 0 && lb.ncode <= LINUX_MAX_CODE, "ncode %d", lb.ncode);
        fuzz_check(lb.entry >= LINUX_KERNEL_ADDR && lb.entry < RAM, "entry 0x%llx",
                   (unsigned long long)lb.entry);
        if (rd)
            fuzz_check(lb.initrd_size == rd && gmem_ptr(&mem, lb.initrd_addr, rd) &&
                       !memcmp(gmem_ptr(&mem, lb.initrd_addr, rd), initrd, rd),
                       "initrd at 0x%llx", (unsigned long long)lb.initrd_addr);
    }
    free(img);
    return 0;
}
