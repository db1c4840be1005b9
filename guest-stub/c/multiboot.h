/* SPDX-License-Identifier: MIT */
/*
 * What every C stub starts with: the multiboot v1 header (first in the
 * image, by stub.ld), a 4 KiB stack, and _start, which calls main and then
 * writes AL to the debug-exit port (status (AL << 1) | 1).  AL is 0 unless
 * the stub defines STUB_EXIT_MAIN before including this: then it is
 * main's value.
 */
#ifndef VBTS_STUB_MULTIBOOT_H
#define VBTS_STUB_MULTIBOOT_H

#include <stdint.h>

#define MB_MAGIC 0x1badb002u
#define MB_FLAGS 0u

__attribute__((section(".multiboot"), used, aligned(4)))
static const uint32_t mb_header[3] = { MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS) };

__attribute__((used)) static uint8_t stack[4096] __attribute__((aligned(16)));

#ifdef STUB_EXIT_MAIN
#define STUB_EXIT_AL ""
#else
#define STUB_EXIT_AL "    mov $0, %al\n"
#endif

__asm__(".section .text.start, \"ax\"\n"
        ".global _start\n"
        "_start:\n"
        "    mov $stack + 4096, %esp\n"
        "    call main\n"
        STUB_EXIT_AL
        "    out %al, $0xf4\n"
        "1:  hlt\n"
        "    jmp 1b\n"
        ".text\n");

#endif
