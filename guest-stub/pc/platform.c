/* SPDX-License-Identifier: MIT */
/*
 * A multiboot ELF guest that reports, on COM1, the platform a multiboot
 * kernel finds as QEMU boots it (docs/multiboot.md), one fact a line:
 *
 *   cmdline: KERNEL APPEND
 *   module N: CMDLINE, SIZE bytes: TEXT       (or "modules: none"; newlines as |)
 *   low segment: 0x8000: fa                   (its first byte, loaded below 1 MiB)
 *   fw_cfg: QEMU, id 1, 2 CPUs, RAM 0x10000000
 *   fw_cfg file: etc/e820, 20 bytes, key 0x20: RAM 0x0-0x10000000
 *   ACPI: MADT CPUs 0 1, I/O APIC 0xfec00000   (or "ACPI: none")
 *   SMP: 1 AP started, APIC IDs 1             (with more than one CPU)
 *
 * then writes 0x115 with `outl` to the debug-exit port (status 43).
 *
 * The APs start by INIT and SIPI (all but self) at 0x8000, the real-mode
 * entry in the low segment, which loads the GDT beside it, enters
 * protected mode and jumps to ap32 at 1 MiB: a stack each, then ap_main
 * sets its APIC ID's bit and counts itself, and the AP halts with
 * interrupts off for good.  An AP's branches, whatever the timing: the far
 * jmp from 0x8013 to ap32, call ap_main, call lapic, ret, ret (5 records).
 * The BSP waits a bounded time.
 */
#include <stdint.h>

#define MB_MAGIC   0x1badb002u
#define LAPIC      0xfee00000u
#define MAX_APS    7
#define EXIT_VALUE 0x115

__attribute__((section(".multiboot"), used, aligned(4)))
static const uint32_t mb_header[3] = { MB_MAGIC, 0, -MB_MAGIC };

__attribute__((used, aligned(16))) static uint8_t stack[4096];
__attribute__((used, aligned(16))) static uint8_t ap_stacks[MAX_APS][1024];
__attribute__((used)) static volatile uint32_t ap_next;
static volatile uint32_t ap_seen, ap_count;

extern const uint8_t ap_entry[];

/* The BSP: its own GDT, then main(mbi); main's value goes to the debug-exit port, 4 bytes wide. */
__asm__(".section .text.start, \"ax\"\n"
        ".global _start\n"
        "_start:\n"
        "    lgdt gdt_desc\n"
        "    ljmp $0x08, $1f\n"
        "1:  mov $0x10, %ax\n"
        "    mov %ax, %ds\n"
        "    mov %ax, %es\n"
        "    mov %ax, %ss\n"
        "    mov $stack + 4096, %esp\n"
        "    push %ebx\n"
        "    call main\n"
        "    out %eax, $0xf4\n"
        "2:  hlt\n"
        "    jmp 2b\n"
        /* An AP in protected mode: a stack of its own (none left: halt), then ap_main. */
        "ap32:\n"
        "    mov $0x10, %ax\n"
        "    mov %ax, %ds\n"
        "    mov %ax, %es\n"
        "    mov %ax, %ss\n"
        "    mov $1, %eax\n"
        "    lock xadd %eax, ap_next\n"
        "    cmp $7, %eax\n"           /* MAX_APS */
        "    jae 3f\n"
        "    inc %eax\n"
        "    shl $10, %eax\n"
        "    lea ap_stacks(%eax), %esp\n"
        "    call ap_main\n"
        "3:  cli\n"
        "    hlt\n"
        "    jmp 3b\n"
        /* The low segment: where the SIPI starts the APs (CS 0x800, IP 0), and the GDT. */
        ".section .low, \"awx\"\n"
        ".code16\n"
        ".global ap_entry\n"
        "ap_entry:\n"
        "    cli\n"
        "    xor %ax, %ax\n"
        "    mov %ax, %ds\n"
        "    lgdtl gdt_desc\n"
        "    mov %cr0, %eax\n"
        "    or $1, %al\n"
        "    mov %eax, %cr0\n"
        "    ljmpl $0x08, $ap32\n"
        ".code32\n"
        ".p2align 3\n"
        "gdt: .quad 0, 0x00cf9a000000ffff, 0x00cf92000000ffff\n"
        "gdt_desc: .word 23\n"
        "    .long gdt\n"
        ".text\n");

static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t v)
{
    __asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static volatile uint32_t *lapic(uint32_t reg)
{
    return (volatile uint32_t *)(LAPIC + reg);
}

static void putc_(char c)
{
    outb(0x3f8, (uint8_t)c);
}

static void puts_(const char *s)
{
    while (*s)
        putc_(*s++);
}

static void put_dec(uint32_t v)
{
    char b[12];
    int n = 0;
    do
        b[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n)
        putc_(b[--n]);
}

static void put_hex(uint64_t v)
{
    int shift = 60;
    puts_("0x");
    while (shift > 0 && !(v >> shift))
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        putc_("0123456789abcdef"[(v >> shift) & 15]);
}

static int same(const void *a, const char *b, int n)
{
    const char *p = a;
    for (int i = 0; i < n; i++)
        if (p[i] != b[i])
            return 0;
    return 1;
}

static uint8_t sum(const uint8_t *p, uint32_t n)
{
    uint8_t s = 0;
    while (n--)
        s += *p++;
    return s;
}

struct mbi {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
};

static void modules(const struct mbi *m)
{
    if (!(m->flags & 8) || m->mods_count == 0) {
        puts_("modules: none\n");
        return;
    }
    const uint32_t *mod = (const uint32_t *)m->mods_addr;
    for (uint32_t i = 0; i < m->mods_count; i++, mod += 4) {
        puts_("module ");
        put_dec(i);
        puts_(": ");
        puts_((const char *)mod[2]);
        puts_(", ");
        put_dec(mod[1] - mod[0]);
        puts_(" bytes: ");
        for (const char *c = (const char *)mod[0]; c < (const char *)mod[1] && c < (const char *)mod[0] + 32; c++)
            putc_(*c == '\n' ? '|' : *c);
        putc_('\n');
    }
}

static void fw_cfg_read(uint16_t key, void *buf, uint32_t n)
{
    outw(0x510, key);
    for (uint32_t i = 0; i < n; i++)
        ((uint8_t *)buf)[i] = inb(0x511);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The directory's files (read whole first: reading a file selects another item); etc/e820's RAM. */
static void fw_cfg_files(void)
{
    uint8_t dir[4 + 8 * 64];
    fw_cfg_read(0x19, dir, sizeof(dir));
    for (uint32_t i = 0; i < be32(dir) && i < 8; i++) {
        const uint8_t *e = dir + 4 + 64 * i;
        uint16_t key = (uint16_t)(e[4] << 8 | e[5]);
        puts_("fw_cfg file: ");
        puts_((const char *)e + 8);
        puts_(", ");
        put_dec(be32(e));
        puts_(" bytes, key ");
        put_hex(key);
        if (same(e + 8, "etc/e820", 9)) {
            uint8_t ent[40];
            fw_cfg_read(key, ent, be32(e) < 40 ? be32(e) : 40);
            for (uint32_t k = 0; k < be32(e) / 20 && k < 2; k++) {
                const uint8_t *r = ent + 20 * k;
                puts_(k ? ", " : ": ");
                puts_(*(const uint32_t *)(r + 16) == 1 ? "RAM " : "other ");
                put_hex(*(const uint64_t *)r);
                putc_('-');
                put_hex(*(const uint64_t *)r + *(const uint64_t *)(r + 8));
            }
        }
        putc_('\n');
    }
}

static uint32_t fw_cfg(void)
{
    char sig[5] = { 0 };
    uint32_t id = 0;
    uint16_t cpus = 0;
    uint64_t ram = 0;
    fw_cfg_read(0x00, sig, 4);
    fw_cfg_read(0x01, &id, 4);
    fw_cfg_read(0x05, &cpus, 2);
    fw_cfg_read(0x03, &ram, 8);
    puts_("fw_cfg: ");
    puts_(sig);
    puts_(", id ");
    put_dec(id);
    puts_(", ");
    put_dec(cpus);
    puts_(" CPUs, RAM ");
    put_hex(ram);
    putc_('\n');
    fw_cfg_files();
    return cpus;
}

static const uint8_t *find_rsdp(void)
{
    for (uint32_t a = 0xe0000; a < 0x100000; a += 16)
        if (same((const void *)a, "RSD PTR ", 8) && sum((const uint8_t *)a, 20) == 0)
            return (const uint8_t *)a;
    return 0;
}

static void madt(const uint8_t *t)
{
    puts_("ACPI: MADT CPUs");
    for (const uint8_t *p = t + 44; p < t + *(const uint32_t *)(t + 4) && p[1]; p += p[1]) {
        if (p[0] == 0 && (*(const uint32_t *)(p + 4) & 1)) {
            putc_(' ');
            put_dec(p[3]);
        } else if (p[0] == 1) {
            puts_(", I/O APIC ");
            put_hex(*(const uint32_t *)(p + 4));
        }
    }
    putc_('\n');
}

static void acpi(void)
{
    const uint8_t *rsdp = find_rsdp();
    if (!rsdp || rsdp[15] < 2 || *(const uint32_t *)(rsdp + 28)) {
        puts_("ACPI: none\n");
        return;
    }
    const uint8_t *xsdt = (const uint8_t *)*(const uint32_t *)(rsdp + 24);
    uint32_t len = *(const uint32_t *)(xsdt + 4);
    for (uint32_t off = 36; off + 8 <= len; off += 8) {
        const uint8_t *t = (const uint8_t *)*(const uint32_t *)(xsdt + off);
        if (same(t, "APIC", 4) && sum(t, *(const uint32_t *)(t + 4)) == 0) {
            madt(t);
            return;
        }
    }
    puts_("ACPI: no MADT\n");
}

__attribute__((used)) void ap_main(void)
{
    uint32_t id = *lapic(0x20) >> 24;
    __atomic_fetch_or(&ap_seen, 1u << (id & 31), __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&ap_count, 1, __ATOMIC_SEQ_CST);
}

/* INIT, then a SIPI to page 8 (0x8000), to all but self, as kvm-unit-tests' smp_init. */
static void smp(uint32_t cpus)
{
    *lapic(0xf0) = 0x1ff;                   /* software-enable the APIC */
    *lapic(0x310) = 0;
    *lapic(0x300) = 0x000c4500;
    *lapic(0x300) = 0x000c4600 | ((uint32_t)ap_entry >> 12);
    for (uint32_t i = 0; i < 50000000 && ap_count < cpus - 1; i++)
        __asm__ volatile("pause");
    puts_("SMP: ");
    put_dec(ap_count);
    puts_(ap_count == 1 ? " AP started, APIC IDs" : " APs started, APIC IDs");
    for (uint32_t i = 0; i < 32; i++)
        if (ap_seen & (1u << i)) {
            putc_(' ');
            put_dec(i);
        }
    putc_('\n');
}

__attribute__((used)) uint32_t main(const struct mbi *m)
{
    puts_("cmdline: ");
    puts_((const char *)m->cmdline);
    putc_('\n');
    modules(m);
    puts_("low segment: ");
    put_hex((uint32_t)ap_entry);
    puts_(": ");
    put_hex(ap_entry[0]);
    putc_('\n');
    uint32_t cpus = fw_cfg();
    acpi();
    if (cpus > 1)
        smp(cpus);
    return EXIT_VALUE;
}
