/* SPDX-License-Identifier: MIT */
/*
 * The tiny multiboot guest of the tests that run a real VM (trace/,
 * gdb/, machine/): an a.out-kludge header loaded at 0x100000, then
 *
 *   0x100020  jmp short 0x100022     ; -> 0x100022
 *   0x100022  call 0x10002c          ; -> 0x10002c
 *   0x100027  xor eax, eax
 *   0x100029  out 0xf4, al           ; debug-exit 0: status 1
 *   0x10002b  hlt                    ; never reached
 *   0x10002c  ret                    ; -> 0x100027
 */
#ifndef VBTS_TEST_TINY_GUEST_H
#define VBTS_TEST_TINY_GUEST_H

#include <stdint.h>
#include <string.h>

#include "vbts/le.h"

#define TINY_GUEST_SIZE 64

/* The header alone, code from 0x20 on left to the caller (zeros). */
static inline void tiny_guest_header(uint8_t *img)
{
    memset(img, 0, TINY_GUEST_SIZE);
    vbts_put32(img, 0x1badb002);
    vbts_put32(img + 4, 0x10000);
    vbts_put32(img + 8, (uint32_t)-(0x1badb002 + 0x10000));
    vbts_put32(img + 12, 0x100000);     /* header_addr */
    vbts_put32(img + 16, 0x100000);     /* load_addr */
    vbts_put32(img + 20, 0x100040);     /* load_end_addr */
    vbts_put32(img + 24, 0x100040);     /* bss_end_addr */
    vbts_put32(img + 28, 0x100020);     /* entry_addr */
}

static inline size_t tiny_guest(uint8_t *img)
{
    static const uint8_t code[] = { 0xeb, 0x00, 0xe8, 0x05, 0x00, 0x00, 0x00, 0x31, 0xc0,
                                    0xe6, 0xf4, 0xf4, 0xc3 };
    tiny_guest_header(img);
    memcpy(img + 0x20, code, sizeof(code));
    return TINY_GUEST_SIZE;
}

#endif
