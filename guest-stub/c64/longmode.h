/* SPDX-License-Identifier: MIT */
/*
 * What every 64-bit C stub starts with: a multiboot v1 header with the
 * a.out kludge (first in the image, by long64.ld), 32-bit code from the
 * multiboot entry that loads a GDT, turns on PAE paging (the first GiB
 * identity-mapped with 2 MiB pages, static tables) and long mode, and
 * far-jumps to 64-bit code that calls main and writes main's value to the
 * debug-exit port (status (main << 1) | 1).  As hobby and teaching kernels
 * start: gdb meets the vCPU in 32-bit protected mode, and the symbols it
 * has are an ELF64's.  SS is left as multiboot leaves it (flat): a `mov
 * ss` holds the next instruction's step trap back on hardware, so gdb's
 * `stepi` counts would differ from host to host.
 */
#ifndef VBTS_STUB_LONGMODE_H
#define VBTS_STUB_LONGMODE_H

#include <stdint.h>

__attribute__((used, aligned(16))) static uint8_t stack[4096];

__asm__(
    ".section .multiboot, \"a\"\n"
    ".align 4\n"
    "mb_header:\n"
    "    .long 0x1badb002, 0x10000, -(0x1badb002 + 0x10000)\n"
    "    .long mb_header, mb_header, _load_end, _bss_end, _start32\n"
    ".section .data\n"
    ".align 4096\n"
    "pml4: .quad pdpt + 3\n"
    "    .fill 511, 8, 0\n"
    "pdpt: .quad pd + 3\n"
    "    .fill 511, 8, 0\n"
    "pd:\n"
    "    .set i, 0\n"
    "    .rept 512\n"
    "    .quad (i << 21) + 0x83\n"
    "    .set i, i + 1\n"
    "    .endr\n"
    ".align 16\n"
    "gdt: .quad 0, 0x00cf9a000000ffff, 0x00cf92000000ffff, 0x00af9a000000ffff\n"
    "gdt_desc: .word gdt_desc - gdt - 1\n"
    "    .long gdt\n"
    ".section .text.start, \"ax\"\n"
    ".code32\n"
    ".global _start32\n"
    "_start32:\n"
    "    lgdt gdt_desc\n"
    "    mov $0x10, %ax\n"
    "    mov %ax, %ds\n"
    "    mov $stack + 4096, %esp\n"
    "    mov %cr4, %eax\n"
    "    or $0x20, %eax\n"                  /* PAE */
    "    mov %eax, %cr4\n"
    "    mov $pml4, %eax\n"
    "    mov %eax, %cr3\n"
    "    mov $0xc0000080, %ecx\n"           /* EFER */
    "    rdmsr\n"
    "    or $0x100, %eax\n"                 /* LME */
    "    wrmsr\n"
    "    mov %cr0, %eax\n"
    "    or $0x80000001, %eax\n"            /* PG, PE */
    "    mov %eax, %cr0\n"
    "    ljmp $0x18, $start64\n"
    ".code64\n"
    ".global start64\n"
    "start64:\n"
    "    mov $0x10, %ax\n"
    "    mov %ax, %ds\n"
    "    mov %ax, %es\n"
    "    lea stack + 4096(%rip), %rsp\n"
    "    call main\n"
    "    out %al, $0xf4\n"
    "1:  hlt\n"
    "    jmp 1b\n"
    ".text\n");

#endif
