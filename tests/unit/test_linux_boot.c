/* SPDX-License-Identifier: MIT */
/* Linux boot protocol loader, ACPI tables and LZ4 legacy frames. */
#define _GNU_SOURCE            /* memmem */
#include <criterion/criterion.h>
#include <string.h>

#include "acpi_x86.h"
#include "loader_linux.h"
#include "lz4_legacy.h"
#include "vbts.h"

static struct gmem mem;

static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 64u << 20), 0);
}

static void teardown(void)
{
    gmem_fini(&mem);
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A bzImage-shaped file: one setup sector after the boot sector, then 1 KiB of "kernel". */
static size_t bzimage(uint8_t *img, uint16_t version, uint16_t xloadflags)
{
    memset(img, 0, 3072);
    img[0x1f1] = 1;                      /* setup_sects */
    put16(img + 0x1fe, 0xaa55);
    img[0x201] = 0x66;                   /* header ends at 0x268 */
    memcpy(img + 0x202, "HdrS", 4);
    put16(img + 0x206, version);
    img[0x211] = 0x01;                   /* LOADED_HIGH */
    put32(img + 0x22c, 0x7fffffff);      /* initrd_addr_max */
    put32(img + 0x230, 0x200000);
    put16(img + 0x236, xloadflags);
    put32(img + 0x238, 64);              /* cmdline_size */
    put32(img + 0x258, 0x1000000);       /* pref_address */
    put32(img + 0x260, 0x100000);        /* init_size */
    memset(img + 1024, 0x90, 2048);
    return 3072;
}

TestSuite(linux_boot, .init = setup, .fini = teardown);

Test(linux_boot, detects_bzimage)
{
    uint8_t img[3072];
    size_t n = bzimage(img, 0x020f, 1);
    cr_assert(loader_is_bzimage(img, n));
    img[0x202] = 'X';
    cr_assert_not(loader_is_bzimage(img, n));
    cr_assert_not(loader_is_bzimage(img, 100));
}

Test(linux_boot, zero_page_cmdline_initrd_e820)
{
    uint8_t img[3072], rd[5000];
    size_t n = bzimage(img, 0x020f, 1);
    memset(rd, 0xab, sizeof(rd));
    struct linux_boot lb;
    cr_assert_eq(loader_linux(&mem, img, n, rd, sizeof(rd), "console=ttyS0", 0xe0000, &lb), 0,
                 "%s", vbts_last_error());
    cr_assert_eq(lb.entry, 0x100200);      /* not LZ4: through the decompressor */
    cr_assert_not(lb.unpacked);
    cr_assert_eq(lb.zero_page, LINUX_ZERO_PAGE);
    const uint8_t *bp = gmem_ptr(&mem, LINUX_ZERO_PAGE, 4096);
    cr_assert_eq(memcmp(bp + 0x202, "HdrS", 4), 0);
    cr_assert_eq(bp[0x210], 0xff);         /* type_of_loader */
    cr_assert_eq(get32(bp + 0x228), LINUX_CMDLINE_ADDR);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, LINUX_CMDLINE_ADDR, 14), "console=ttyS0");
    uint32_t at = get32(bp + 0x218);
    cr_assert_eq(get32(bp + 0x21c), sizeof(rd));
    cr_assert_eq(at % 4096, 0);
    cr_assert_geq(at, 0x1000000 + 0x100000, "initrd overlaps the decompression area");
    cr_assert_leq(at + sizeof(rd), 64u << 20);
    cr_assert_eq(memcmp(gmem_ptr(&mem, at, sizeof(rd)), rd, sizeof(rd)), 0);
    cr_assert_eq(get64(bp + 0x070), 0xe0000);   /* acpi_rsdp_addr */
    cr_assert_eq(bp[0x1e8], 4);                  /* e820: low RAM, EBDA, BIOS, RAM from 1M */
    const uint8_t *e = bp + 0x2d0 + 3 * 20;
    cr_assert_eq(get64(e), 0x100000);
    cr_assert_eq(get64(e + 8), (64u << 20) - 0x100000);
    cr_assert_eq(get32(e + 16), 1);
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
    cr_assert_eq(loader_linux(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert(strstr(vbts_last_error(), "too old"), "%s", vbts_last_error());
    n = bzimage(img, 0x020f, 0);
    cr_assert_eq(loader_linux(&mem, img, n, NULL, 0, "", 0, &lb), -1);
    cr_assert(strstr(vbts_last_error(), "64-bit entry"), "%s", vbts_last_error());
    n = bzimage(img, 0x020f, 1);
    char longcmd[100];
    memset(longcmd, 'x', sizeof(longcmd) - 1);
    longcmd[sizeof(longcmd) - 1] = '\0';
    cr_assert_eq(loader_linux(&mem, img, n, NULL, 0, longcmd, 0, &lb), -1);
    cr_assert(strstr(vbts_last_error(), "at most 64"), "%s", vbts_last_error());
    static uint8_t big[60u << 20];
    cr_assert_eq(loader_linux(&mem, img, n, big, sizeof(big), "", 0, &lb), -1);
    cr_assert(strstr(vbts_last_error(), "no room for the initrd"), "%s", vbts_last_error());
    cr_assert_eq(loader_linux(&mem, img, 600, NULL, 0, "", 0, &lb), -1);
}

static uint8_t sum(const uint8_t *p, size_t n)
{
    uint8_t s = 0;
    while (n--)
        s += *p++;
    return s;
}

Test(linux_boot, acpi_tables_are_consistent)
{
    uint64_t rsdp = acpi_build(&mem, 3);
    cr_assert_eq(rsdp, ACPI_TABLES_ADDR);
    const uint8_t *r = gmem_ptr(&mem, rsdp, 36);
    cr_assert_eq(memcmp(r, "RSD PTR ", 8), 0);
    cr_assert_eq(sum(r, 20), 0);
    cr_assert_eq(sum(r, 36), 0);
    const uint8_t *x = gmem_ptr(&mem, get64(r + 24), 52);
    cr_assert_eq(memcmp(x, "XSDT", 4), 0);
    cr_assert_eq(sum(x, get32(x + 4)), 0);
    int cpus = 0, ioapics = 0;
    bool have_s5 = false;
    for (int i = 0; i < 2; i++) {
        const uint8_t *t = gmem_ptr(&mem, get64(x + 36 + 8 * i), 36);
        uint32_t len = get32(t + 4);
        t = gmem_ptr(&mem, get64(x + 36 + 8 * i), len);
        cr_assert_eq(sum(t, len), 0, "%.4s checksum", (const char *)t);
        if (!memcmp(t, "APIC", 4)) {
            for (uint32_t o = 44; o < len; o += t[o + 1]) {
                cpus += t[o] == 0 && (get32(t + o + 4) & 1);
                ioapics += t[o] == 1;
            }
        } else if (!memcmp(t, "FACP", 4)) {
            cr_assert_eq(get32(t + 64), ACPI_PM1A_CNT_PORT);
            const uint8_t *d = gmem_ptr(&mem, get64(t + 140), 36);
            cr_assert_eq(memcmp(d, "DSDT", 4), 0);
            d = gmem_ptr(&mem, get64(t + 140), get32(d + 4));
            cr_assert_eq(sum(d, get32(d + 4)), 0);
            have_s5 = memmem(d, get32(d + 4), "_S5_", 4) != NULL;
        }
    }
    cr_assert_eq(cpus, 3);
    cr_assert_eq(ioapics, 1);
    cr_assert(have_s5);
}

Test(linux_boot, lz4_legacy_frames)
{
    /* "abcabcabcabcXY": 3 literals, a 9-byte match at offset 3, 2 final literals. */
    static const uint8_t blk[] = { 0x35, 'a', 'b', 'c', 0x03, 0x00, 0x20, 'X', 'Y' };
    uint8_t in[4 + 4 + sizeof(blk) + 4], out[32];
    put32(in, LZ4_LEGACY_MAGIC);
    put32(in + 4, sizeof(blk));
    memcpy(in + 8, blk, sizeof(blk));
    put32(in + 8 + sizeof(blk), 14);     /* the size the kernel build appends */
    long n = lz4_legacy_decompress(in, sizeof(in), out, sizeof(out));
    cr_assert_eq(n, 14);
    cr_assert_eq(memcmp(out, "abcabcabcabcXY", 14), 0);
    cr_assert_eq(lz4_legacy_decompress(in, sizeof(in), out, 10), -1, "output bound");
    in[8 + 4] = 0x09;                    /* offset beyond what was written */
    cr_assert_eq(lz4_legacy_decompress(in, sizeof(in), out, sizeof(out)), -1);
    put32(in, 0x12345678);
    cr_assert_eq(lz4_legacy_decompress(in, sizeof(in), out, sizeof(out)), -1);
}
