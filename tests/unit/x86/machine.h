/* SPDX-License-Identifier: MIT */
/*
 * A synthetic x86 machine for the x86/ unit tests: 4 MiB of RAM, 64-bit
 * page tables mapping the first 2 MiB with 4 KiB pages, a GDT, a 64-bit
 * TSS and an IDT, all in guest memory, and a register snapshot.
 *
 *   0x1000 PML4, 0x2000 PDPT, 0x3000 PD, 0x4000 PT
 *   0x6000 GDT: 0x08 kernel code 64, 0x10 kernel data, 0x18 user data, 0x20 user code 64,
 *               0x28 kernel code 32, 0x30 TSS
 *   0x7000 TSS: RSP0 0x90000, IST1 0xa0000
 *   0x8000 IDT (64-bit gates)
 */
#ifndef VBTS_TEST_X86_MACHINE_H
#define VBTS_TEST_X86_MACHINE_H

#include <criterion/criterion.h>
#include <string.h>

#include "vbts/le.h"
#include "x86/cpu.h"

static struct gmem mem;
static struct kvm_regs regs;
static struct kvm_sregs sregs;
static struct cpu_view view;

#define PTE(a, flags) vbts_put64(gmem_ptr(&mem, 0x4000 + 8 * ((a) >> 12), 8), ((a) & ~0xfffull) | (flags))

static inline void gate64(unsigned vec, uint64_t off, uint16_t sel, unsigned type, unsigned dpl, unsigned ist)
{
    uint8_t *g = gmem_ptr(&mem, 0x8000 + 16 * vec, 16);
    memset(g, 0, 16);
    vbts_put16(g, (uint16_t)off);
    vbts_put16(g + 2, sel);
    g[4] = (uint8_t)ist;
    g[5] = (uint8_t)(0x80 | dpl << 5 | type);
    vbts_put16(g + 6, (uint16_t)(off >> 16));
    vbts_put32(g + 8, (uint32_t)(off >> 32));
}

static inline void machine_setup(void)
{
    cr_assert_eq(gmem_init(&mem, 4u << 20), 0);
    vbts_put64(gmem_ptr(&mem, 0x1000, 8), 0x2000 | 7);
    vbts_put64(gmem_ptr(&mem, 0x2000, 8), 0x3000 | 7);
    vbts_put64(gmem_ptr(&mem, 0x3000, 8), 0x4000 | 7);
    for (uint64_t a = 0; a < (2u << 20); a += 4096)
        PTE(a, 3);                      /* present, writable, supervisor */
    static const uint64_t gdt[7] = { 0, 0x00af9a000000ffffull, 0x00cf92000000ffffull,
                                     0x00cff2000000ffffull, 0x00affa000000ffffull,
                                     0x00cf9a000000ffffull, 0x00008b0070000067ull };
    for (int i = 0; i < 7; i++)
        vbts_put64(gmem_ptr(&mem, 0x6000 + 8 * i, 8), gdt[i]);
    vbts_put64(gmem_ptr(&mem, 0x7000 + 4, 8), 0x90000);
    vbts_put64(gmem_ptr(&mem, 0x7000 + 36, 8), 0xa0000);
    memset(&regs, 0, sizeof(regs));
    memset(&sregs, 0, sizeof(sregs));
    sregs.cr0 = 0x80010011;             /* PG, WP, ET, PE */
    sregs.cr3 = 0x1000;
    sregs.cr4 = 0x20;
    sregs.efer = 0xd00;                 /* LME, LMA, NXE */
    sregs.cs = (struct kvm_segment){ .selector = 0x08, .limit = 0xffffffff, .type = 0xb,
                                     .present = 1, .s = 1, .l = 1, .g = 1 };
    sregs.ss = (struct kvm_segment){ .selector = 0x10, .limit = 0xffffffff, .type = 3,
                                     .present = 1, .s = 1, .db = 1, .g = 1 };
    sregs.ds = sregs.es = sregs.ss;
    sregs.gdt.base = 0x6000;
    sregs.gdt.limit = 7 * 8 - 1;
    sregs.idt.base = 0x8000;
    sregs.idt.limit = 256 * 16 - 1;
    sregs.tr = (struct kvm_segment){ .selector = 0x30, .base = 0x7000, .limit = 0x67, .type = 0xb,
                                     .present = 1 };
    regs.rip = 0x10000;
    regs.rsp = 0x50008;
    regs.rflags = 0x202;
    view = (struct cpu_view){ &mem, &regs, &sregs };
}

static inline void machine_teardown(void)
{
    gmem_fini(&mem);
}

/* The vCPU at CPL3: user code and data segments, the pages it uses user-accessible. */
static inline void to_user(void)
{
    sregs.cs = (struct kvm_segment){ .selector = 0x23, .limit = 0xffffffff, .type = 0xb,
                                     .present = 1, .s = 1, .l = 1, .g = 1, .dpl = 3 };
    sregs.ss = (struct kvm_segment){ .selector = 0x1b, .limit = 0xffffffff, .type = 3,
                                     .present = 1, .s = 1, .db = 1, .g = 1, .dpl = 3 };
    for (uint64_t a = 0x10000; a < 0x60000; a += 4096)
        PTE(a, 7);
}

static inline void code(const void *bytes, size_t n)
{
    memcpy(gmem_ptr(&mem, regs.rip, n), bytes, n);
}

#endif
