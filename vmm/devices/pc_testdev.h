/* SPDX-License-Identifier: MIT */
/*
 * QEMU's pc-testdev, which kvm-unit-tests' runner always adds: a 32-bit
 * data register at ports 0xe0-0xe3 (and byte-wise at 0xe8-0xeb), a page
 * flush at 0xe4 (nothing to flush here), ISA IRQ lines at 0x2000-0x2017
 * (a byte written sets the line's level) and 64 KiB of MMIO scratch at
 * 0xff000000 (docs/multiboot.md).  Needs KVM's irqchip.
 */
#ifndef VBTS_DEVICES_PC_TESTDEV_H
#define VBTS_DEVICES_PC_TESTDEV_H

struct vm;

/* On vm's buses; freed with its port bus. */
int pc_testdev_register(struct vm *vm);

#endif
