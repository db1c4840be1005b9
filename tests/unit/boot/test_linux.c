/* SPDX-License-Identifier: MIT */
/* The Linux boot protocol loader: bzImage detection, zero page, refusals. */
#define _GNU_SOURCE            /* memmem */
#include <criterion/criterion.h>
#include <string.h>

#include "boot/linux.h"
#include "core/error.h"
#include "vbts/le.h"

static struct gmem mem;

static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 64u << 20), 0);
}

static void teardown(void)
{
    gmem_fini(&mem);
}


/* A bzImage-shaped file: one setup sector after the boot sector, then 1 KiB of "kernel". */
static size_t bzimage(uint8_t *img, uint16_t version, uint16_t xloadflags)
{
    memset(img, 0, 3072);
    img[0x1f1] = 1;                      /* setup_sects */
    vbts_put16(img + 0x1fe, 0xaa55);
    img[0x201] = 0x66;                   /* header ends at 0x268 */
    memcpy(img + 0x202, "HdrS", 4);
    vbts_put16(img + 0x206, version);
    img[0x211] = 0x01;                   /* LOADED_HIGH */
    vbts_put32(img + 0x22c, 0x7fffffff);      /* initrd_addr_max */
    vbts_put32(img + 0x230, 0x200000);
    vbts_put16(img + 0x236, xloadflags);
    vbts_put32(img + 0x238, 64);              /* cmdline_size */
    vbts_put32(img + 0x258, 0x1000000);       /* pref_address */
    vbts_put32(img + 0x260, 0x100000);        /* init_size */
    memset(img + 1024, 0x90, 2048);
    return 3072;
}

TestSuite(linux_boot, .init = setup, .fini = teardown);

Test(linux_boot, detects_bzimage)
{
    uint8_t img[3072];
    size_t n = bzimage(img, 0x020f, 1);
    cr_assert(linux_detect(img, n));
    img[0x202] = 'X';
    cr_assert_not(linux_detect(img, n));
    cr_assert_not(linux_detect(img, 100));
}

Test(linux_boot, zero_page_cmdline_initrd_e820)
{
    uint8_t img[3072], rd[5000];
    size_t n = bzimage(img, 0x020f, 1);
    memset(rd, 0xab, sizeof(rd));
    struct linux_boot lb;
    cr_assert_eq(linux_load(&mem, img, n, rd, sizeof(rd), "console=ttyS0", 0xe0000, &lb), 0,
                 "%s", error_last());
    cr_assert_eq(lb.entry, 0x100200);      /* not LZ4: through the decompressor */
    cr_assert_not(lb.unpacked);
    cr_assert_eq(lb.zero_page, LINUX_ZERO_PAGE);
    const uint8_t *bp = gmem_ptr(&mem, LINUX_ZERO_PAGE, 4096);
    cr_assert_eq(memcmp(bp + 0x202, "HdrS", 4), 0);
    cr_assert_eq(bp[0x210], 0xff);         /* type_of_loader */
    cr_assert_eq(vbts_le32(bp + 0x228), LINUX_CMDLINE_ADDR);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, LINUX_CMDLINE_ADDR, 14), "console=ttyS0");
    uint32_t at = vbts_le32(bp + 0x218);
    cr_assert_eq(vbts_le32(bp + 0x21c), sizeof(rd));
    cr_assert_eq(at % 4096, 0);
    cr_assert_geq(at, 0x1000000 + 0x100000, "initrd overlaps the decompression area");
    cr_assert_leq(at + sizeof(rd), 64u << 20);
    cr_assert_eq(memcmp(gmem_ptr(&mem, at, sizeof(rd)), rd, sizeof(rd)), 0);
    cr_assert_eq(vbts_le64(bp + 0x070), 0xe0000);   /* acpi_rsdp_addr */
    cr_assert_eq(bp[0x1e8], 4);                  /* e820: low RAM, EBDA, BIOS, RAM from 1M */
    const uint8_t *e = bp + 0x2d0 + 3 * 20;
    cr_assert_eq(vbts_le64(e), 0x100000);
    cr_assert_eq(vbts_le64(e + 8), (64u << 20) - 0x100000);
    cr_assert_eq(vbts_le32(e + 16), 1);
    /* The protected-mode part sits at 1 MiB; the identity map covers it. */
    cr_assert_eq(*(uint8_t *)gmem_ptr(&mem, 0x100000, 1), 0x90);
    const uint64_t *pd = gmem_ptr(&mem, LINUX_PML4_ADDR + 0x2000, 8);
    cr_assert_eq(pd[0], 0x83);
}

Test(linux_boot, refuses_what_it_cannot_boot)
{
    uint8_t img[3072];
    struct linux_boot lb;
    size_t n = bzimage(img, 0x020a, 1);
    cr_assert_eq(linux_load(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert(strstr(error_last(), "too old"), "%s", error_last());
    n = bzimage(img, 0x020f, 0);
    cr_assert_eq(linux_load(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert(strstr(error_last(), "64-bit entry"), "%s", error_last());
    n = bzimage(img, 0x020f, 1);
    char longcmd[100];
    memset(longcmd, 'x', sizeof(longcmd) - 1);
    longcmd[sizeof(longcmd) - 1] = '\0';
    cr_assert_eq(linux_load(&mem, img, n, NULL, 0, longcmd, 0, &lb), -1);
    cr_assert(strstr(error_last(), "at most 64"), "%s", error_last());
    static uint8_t big[60u << 20];
    cr_assert_eq(linux_load(&mem, img, n, big, sizeof(big), "", 0, &lb), -1);
    cr_assert(strstr(error_last(), "no room for the initrd"), "%s", error_last());
    cr_assert_eq(linux_load(&mem, img, 600, NULL, 0, "", 0, &lb), -1);
}


/* An LZ4 legacy payload of literals only, with the size the build appends. */
static size_t lz4_payload(uint8_t *p, const uint8_t *data, size_t n, uint32_t claimed)
{
    size_t k = 0, rem = n - 15;
    vbts_put32(p, 0x184c2102);
    uint8_t *blk = p + 8;
    blk[k++] = 0xf0;
    for (; rem >= 255; rem -= 255)
        blk[k++] = 255;
    blk[k++] = (uint8_t)rem;
    memcpy(blk + k, data, n);
    k += n;
    vbts_put32(p + 4, (uint32_t)k);
    vbts_put32(p + 8 + k, claimed);
    return 8 + k + 4;
}

/* The bzImage with the payload at 0x100 into the protected-mode part. */
static size_t bzimage_lz4(uint8_t *img, const uint8_t *data, size_t n, uint32_t claimed,
                          uint32_t init_size)
{
    memset(img, 0, 4096);
    bzimage(img, 0x020f, 1);
    size_t plen = lz4_payload(img + 1024 + 0x100, data, n, claimed);
    vbts_put32(img + 0x248, 0x100);
    vbts_put32(img + 0x24c, (uint32_t)plen);
    vbts_put32(img + 0x260, init_size);
    return 4096;
}

/* The loader's arithmetic on the image's words, each checked for wrap. */
Test(linux_boot, pref_address_near_2_64)
{
    uint8_t img[3072];
    struct linux_boot lb;
    size_t n = bzimage(img, 0x020f, 1);
    vbts_put64(img + 0x258, 0xfffffffffffff000ull);
    cr_assert_eq(linux_load(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert_str_eq(error_last(), "the kernel needs RAM from 0xfffffffffffff000 for 0x100000 "
                     "bytes to decompress; --memory gives 0x4000000 (use a larger --memory)");
}

Test(linux_boot, lz4_output_bounded_by_memory)
{
    static uint8_t img[4096];
    uint8_t data[100] = { 0 };
    /* 3.75 GiB claimed: refused before the host allocates it. */
    size_t n = bzimage_lz4(img, data, sizeof(data), 0xf0000000u, 0xffffffffu);
    struct linux_boot lb;
    cr_assert_eq(linux_load(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert_str_eq(error_last(), "the kernel unpacks to 4026531840 bytes; --memory gives "
                     "0x4000000 (use a larger --memory)");
}

Test(linux_boot, vmlinux_physical_range_wraps)
{
    uint8_t elf[64 + 56] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
    vbts_put16(elf + 18, 62);                    /* EM_X86_64 */
    vbts_put64(elf + 24, 0xfffffffffffff000ull); /* e_entry */
    vbts_put64(elf + 32, 64);                    /* e_phoff */
    vbts_put16(elf + 54, 56);                    /* e_phentsize */
    vbts_put16(elf + 56, 1);                     /* e_phnum */
    uint8_t *ph = elf + 64;
    vbts_put32(ph, 1);                           /* PT_LOAD */
    vbts_put32(ph + 4, 5);                       /* R+X */
    vbts_put64(ph + 16, 0xffffffff81000000ull);  /* p_vaddr */
    vbts_put64(ph + 24, 0xfffffffffffff000ull);  /* p_paddr */
    vbts_put64(ph + 40, 0x2000);                 /* p_memsz */
    static uint8_t img[4096];
    size_t n = bzimage_lz4(img, elf, sizeof(elf), sizeof(elf), 0x100000);
    struct linux_boot lb;
    cr_assert_eq(linux_load(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert_str_eq(error_last(), "vmlinux segment 0: physical range 0xfffffffffffff000+0x2000 "
                     "wraps around the address space");
}
