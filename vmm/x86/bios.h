/* SPDX-License-Identifier: MIT */
/*
 * The state QEMU's firmware (SeaBIOS) leaves a PC in when it hands over to
 * a multiboot kernel, as far as a kernel can tell without calling it: the
 * PICs initialised (vectors 0x08 and 0x70, all lines masked but the timer
 * and the cascade), the PIT's channel 0 at 18.2 Hz, and a real-mode IVT
 * whose hardware-interrupt entries acknowledge the PIC (the timer's also
 * counts BIOS ticks at 0x46c) and whose others return at once.  Real-mode
 * code that waits with HLT (kvm-unit-tests' realmode) is woken by that
 * timer, as under QEMU.  Needs KVM's irqchip and PIT.
 */
#ifndef VBTS_X86_BIOS_H
#define VBTS_X86_BIOS_H

#include <stdint.h>

struct vm;

/* The IVT at 0 and the handlers' code in the BIOS area at 0xf0000. */
#define BIOS_SEGMENT    0xf000u
#define BIOS_TICKS      0x46cu

/* Before the kernel is loaded (an image below 1 MiB may overwrite the IVT, as under QEMU). */
int bios_setup(struct vm *vm);

#endif
