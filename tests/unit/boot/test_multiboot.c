/* SPDX-License-Identifier: MIT */
/* Multiboot loader: what lands in guest memory and what is refused, exactly. */
#include <criterion/criterion.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "boot/image.h"
#include "boot/multiboot.h"
#include "core/error.h"

#define MB_MAGIC 0x1badb002u
#define AOUT     (1u << 16)

static struct gmem mem;

static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 4u << 20), 0);
}

static void teardown(void)
{
    gmem_fini(&mem);
}

/* A flat image at 0x100000: header at offset 0, code right behind it. */
static size_t aout_image(uint8_t *img, uint32_t load, uint32_t load_end, uint32_t bss_end,
                         uint32_t entry)
{
    uint32_t h[8] = { MB_MAGIC, AOUT, -(MB_MAGIC + AOUT), load, load, load_end, bss_end, entry };
    memcpy(img, h, sizeof(h));
    memset(img + 32, 0x90, 32);
    return 64;
}

TestSuite(loader, .init = setup, .fini = teardown);

static int load_image(const uint8_t *img, size_t n, const char *cmdline, struct boot_info *bi)
{
    struct multiboot_load_args a = { .cmdline = cmdline };
    return multiboot_load(&mem, img, n, &a, bi);
}

/* The image is refused, with this line. */
static void refused(const uint8_t *img, size_t n, const char *want)
{
    struct boot_info bi;
    cr_assert_eq(load_image(img, n, "", &bi), -1);
    cr_assert_str_eq(error_last(), want);
}

#define RAM_RANGES "(RAM for images is 0x0-0x9fc00 and 0x100000-0x400000)"

Test(loader, aout_loads_image_and_builds_info)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0, 0x100100, 0x100020);
    struct boot_info bi;
    cr_assert_eq(load_image(img, n, "console=ttyS0", &bi), 0, "%s", error_last());
    cr_assert_eq(bi.entry, 0x100020);
    cr_assert_eq(bi.load_start, 0x100000);
    cr_assert_eq(bi.load_end, 0x100100);
    cr_assert_eq(memcmp(gmem_ptr(&mem, 0x100000, 64), img, 64), 0);
    const uint8_t *bss = gmem_ptr(&mem, 0x100040, 0xc0);
    for (int i = 0; i < 0xc0; i++)
        cr_assert_eq(bss[i], 0);
    cr_assert_eq(bi.mbi, 0x101000);
    const uint32_t *info = gmem_ptr(&mem, bi.mbi, 88);
    cr_assert_eq(info[0], 0x1 | 0x4 | 0x40 | 0x200);           /* flags */
    cr_assert_eq(info[1], 639);                                 /* mem_lower KiB */
    cr_assert_eq(info[2], (4u << 20) / 1024 - 1024);            /* mem_upper KiB */
    cr_assert_str_eq((const char *)gmem_ptr(&mem, info[4], 14), "console=ttyS0");
    cr_assert_eq(info[11], 2 * 24);                             /* mmap_length */
    const uint8_t *mm = gmem_ptr(&mem, info[12], 48);
    uint32_t size, type;
    uint64_t addr, len;
    memcpy(&size, mm + 24, 4);
    memcpy(&addr, mm + 28, 8);
    memcpy(&len, mm + 36, 8);
    memcpy(&type, mm + 44, 4);
    cr_assert_eq(size, 20);
    cr_assert_eq(addr, 0x100000);
    cr_assert_eq(len, (4u << 20) - 0x100000);
    cr_assert_eq(type, 1);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, info[16], 5), "vbts");
}

Test(loader, no_header)
{
    uint8_t img[16384] = { 0 };
    struct boot_info bi;
    /* A header past the first 8 KiB does not count. */
    aout_image(img + 8192, 0x100000, 0, 0, 0x100020);
    cr_assert_eq(load_image(img, sizeof(img), "", &bi), -1);
    cr_assert_str_eq(error_last(),
                     "not a multiboot image (no multiboot header in the first 8192 bytes)");
    cr_assert_eq(multiboot_detect(img, sizeof(img)), 0);
}

Test(loader, bad_checksum_is_no_header)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0, 0, 0x100020);
    img[8] ^= 1;
    cr_assert_eq(multiboot_detect(img, n), 0);
}

Test(loader, image_outside_memory)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x3fffe0, 0, 0x400100, 0x3fffe0);
    refused(img, n, "image 0x3fffe0-0x400100 lies outside guest memory " RAM_RANGES);
}

/* Below 640 KiB is RAM too (kvm-unit-tests' realmode.flat loads at 0x8000); the information follows. */
Test(loader, image_below_one_mib)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x8000, 0, 0, 0x8020);
    struct boot_info bi;
    cr_assert_eq(load_image(img, n, "k", &bi), 0, "%s", error_last());
    cr_assert_eq(bi.entry, 0x8020);
    cr_assert_eq(memcmp(gmem_ptr(&mem, 0x8000, 64), img, 64), 0);
    cr_assert_eq(bi.mbi, 0x9000);
    const uint32_t *info = gmem_ptr(&mem, bi.mbi, 88);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, info[4], 2), "k");
}

/* 0x9fc00-0xfffff is no RAM in the memory map: the EBDA, VGA and the BIOS (ACPI tables). */
Test(loader, image_in_the_hole_below_one_mib)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x9fc00, 0, 0, 0x9fc20);
    refused(img, n, "image 0x9fc00-0x9fc40 lies outside guest memory " RAM_RANGES);
    n = aout_image(img, 0x9fbe0, 0, 0x100100, 0x9fbe0);
    refused(img, n, "image 0x9fbe0-0x100100 lies outside guest memory " RAM_RANGES);
}

/* The information must fit in the image's own range of RAM: not over the hole. */
Test(loader, no_room_for_the_information_below_640k)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x9f000, 0, 0x9f800, 0x9f020);
    refused(img, n, "no room for the multiboot information above the image "
            "(needs 0xa0000-0xa0098; use a larger --memory)");
}

Test(loader, address_wraps_around)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0xffffffe0, 0, 0, 0xffffffe0);
    refused(img, n, "image 0xffffffe0-0x100000020 lies outside guest memory " RAM_RANGES);
}

Test(loader, load_end_beyond_file)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0x100080, 0, 0x100020);
    refused(img, n, "multiboot header: load range 0x100000-0x100080 is larger than the file");
}

Test(loader, load_addr_after_header)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0, 0, 0x100020);
    uint32_t load = 0x100010;
    memcpy(img + 16, &load, 4);
    refused(img, n, "multiboot header: load_addr 0x100010 does not precede "
            "header_addr 0x100000 within the file");
}

Test(loader, entry_outside_image)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0, 0, 0x200000);
    refused(img, n, "multiboot header: entry_addr 0x200000 is outside the image 0x100000-0x100040");
}

Test(loader, truncated_aout_header)
{
    uint8_t img[20];
    uint32_t h[3] = { MB_MAGIC, AOUT, -(MB_MAGIC + AOUT) };
    memset(img, 0, sizeof(img));
    memcpy(img, h, sizeof(h));
    refused(img, sizeof(img), "multiboot header is truncated (a.out kludge needs 32 bytes)");
}

Test(loader, unsupported_required_flag)
{
    uint32_t h[3] = { MB_MAGIC, 0x8 | AOUT, -(MB_MAGIC + 0x8 + AOUT) };
    refused((uint8_t *)h, sizeof(h), "multiboot header requires unsupported features (flags 0x8)");
}

/* ELF32: one PT_LOAD at paddr 0x100000 holding the multiboot header (no kludge). */
static size_t elf_image(uint8_t *img, size_t cap, unsigned class, uint32_t paddr, uint32_t entry)
{
    memset(img, 0, cap);
    Elf32_Ehdr *eh = (Elf32_Ehdr *)img;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = class;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_EXEC;
    eh->e_machine = EM_386;
    eh->e_version = EV_CURRENT;
    eh->e_entry = entry;
    eh->e_phoff = sizeof(*eh);
    eh->e_ehsize = sizeof(*eh);
    eh->e_phentsize = sizeof(Elf32_Phdr);
    eh->e_phnum = 1;
    Elf32_Phdr *ph = (Elf32_Phdr *)(img + sizeof(*eh));
    ph->p_type = PT_LOAD;
    ph->p_offset = 0x100;
    ph->p_vaddr = 0xc0100000;
    ph->p_paddr = paddr;
    ph->p_filesz = 0x40;
    ph->p_memsz = 0x80;
    ph->p_flags = PF_R | PF_X;
    uint32_t h[3] = { MB_MAGIC, 0, -MB_MAGIC };
    memcpy(img + 0x100, h, sizeof(h));
    memset(img + 0x10c, 0xcc, 0x34);
    return 0x140;
}

Test(loader, elf32_loads_segment_and_converts_entry)
{
    uint8_t img[0x140];
    size_t n = elf_image(img, sizeof(img), ELFCLASS32, 0x100000, 0xc0100010);
    struct boot_info bi;
    cr_assert_eq(load_image(img, n, "", &bi), 0, "%s", error_last());
    cr_assert_eq(bi.entry, 0x100010);
    cr_assert_eq(memcmp(gmem_ptr(&mem, 0x100000, 0x40), img + 0x100, 0x40), 0);
    cr_assert_eq(*(uint8_t *)gmem_ptr(&mem, 0x10007f, 1), 0);
}

Test(loader, elf32_segment_outside_memory)
{
    uint8_t img[0x140];
    size_t n = elf_image(img, sizeof(img), ELFCLASS32, 0x3fffc0, 0xc0100010);
    refused(img, n, "ELF segment 0x3fffc0-0x400040 lies outside guest memory " RAM_RANGES);
}

Test(loader, elf32_entry_outside_segments)
{
    uint8_t img[0x140];
    size_t n = elf_image(img, sizeof(img), ELFCLASS32, 0x100000, 0x12345678);
    refused(img, n, "ELF entry point 0x12345678 is not inside a loadable segment");
}

Test(loader, elf32_segment_beyond_file)
{
    uint8_t img[0x140];
    size_t n = elf_image(img, sizeof(img), ELFCLASS32, 0x100000, 0xc0100010);
    Elf32_Phdr *ph = (Elf32_Phdr *)(img + sizeof(Elf32_Ehdr));
    ph->p_filesz = 0x80;
    refused(img, n, "ELF segment 0: file range 0x100+0x80 is outside the file");
}

Test(loader, not_elf_without_kludge)
{
    uint8_t img[64] = { 0 };
    uint32_t h[3] = { MB_MAGIC, 0, -MB_MAGIC };
    memcpy(img + 16, h, sizeof(h));
    refused(img, sizeof(img), "not an ELF file and no a.out kludge in the multiboot header");
}


/* Modules as QEMU's -initrd places them: an entry each, its item as its command line, a page each. */
Test(loader, modules_with_their_command_lines)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0, 0x100100, 0x100020);
    static const uint8_t one[] = "NR_CPUS=1\n", two[0x1001] = { 7 };
    struct multiboot_module mods[3] = {
        { one, sizeof(one) - 1, "env" },
        { two, sizeof(two), "second a=1 b" },
        { NULL, 0, "empty" },
    };
    struct multiboot_load_args a = { .cmdline = "k.elf x", .mods = mods, .nmods = 3 };
    struct boot_info bi;
    cr_assert_eq(multiboot_load(&mem, img, n, &a, &bi), 0, "%s", error_last());
    const uint32_t *info = gmem_ptr(&mem, bi.mbi, 96);
    cr_assert_eq(info[0], 0x1 | 0x4 | 0x8 | 0x40 | 0x200);     /* flags: modules too */
    cr_assert_eq(info[5], 3);                                   /* mods_count */
    const uint32_t *m = gmem_ptr(&mem, info[6], 48);
    cr_assert_eq(m[0], 0x102000);
    cr_assert_eq(m[1], 0x102000 + sizeof(one) - 1);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, m[2], 4), "env");
    cr_assert_eq(m[3], 0);
    cr_assert_eq(memcmp(gmem_ptr(&mem, m[0], sizeof(one) - 1), one, sizeof(one) - 1), 0);
    cr_assert_eq(m[4], 0x103000);
    cr_assert_eq(m[5], 0x104001);
    cr_assert_eq(memcmp(gmem_ptr(&mem, m[4], sizeof(two)), two, sizeof(two)), 0);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, m[6], 13), "second a=1 b");
    cr_assert_eq(m[8], 0x105000, "an empty module still starts on a page of its own");
    cr_assert_eq(m[9], 0x105000);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, m[10], 6), "empty");
    cr_assert_eq(bi.info_end, 0x105000);
    cr_assert_str_eq((const char *)gmem_ptr(&mem, info[4], 8), "k.elf x");
}

Test(loader, modules_beyond_memory)
{
    uint8_t img[64];
    size_t n = aout_image(img, 0x100000, 0, 0x100100, 0x100020);
    static uint8_t big[0x300000];
    struct multiboot_module mods[1] = { { big, sizeof(big), "big" } };
    struct multiboot_load_args a = { .cmdline = "", .mods = mods, .nmods = 1 };
    struct boot_info bi;
    cr_assert_eq(multiboot_load(&mem, img, n, &a, &bi), -1);
    cr_assert_str_eq(error_last(), "no room for the multiboot information and modules above the "
                                   "image (needs 0x101000-0x402000; use a larger --memory)");
}

Test(loader, split_modules_as_qemu)
{
    char *it[4];
    cr_assert_eq(multiboot_split_modules("env", it, 4), 1);
    cr_assert_str_eq(it[0], "env");
    free(it[0]);
    cr_assert_eq(multiboot_split_modules("a x=1,b,,c y,d", it, 4), 3);
    cr_assert_str_eq(it[0], "a x=1");
    cr_assert_str_eq(it[1], "b,c y");
    cr_assert_str_eq(it[2], "d");
    for (int i = 0; i < 3; i++)
        free(it[i]);
    cr_assert_eq(multiboot_split_modules("a,b,c,d,e", it, 4), -1);
    cr_assert_str_eq(error_last(), "more than 4 modules in 'a,b,c,d,e'");
    cr_assert_eq(multiboot_split_modules("a,", it, 4), -1);
    cr_assert_str_eq(error_last(), "a module without a file name in 'a,'");
    cr_assert_eq(multiboot_split_modules(" a", it, 4), -1);
    cr_assert_str_eq(error_last(), "a module without a file name in ' a'");
    cr_assert_eq(multiboot_split_modules("", it, 4), -1);
}
