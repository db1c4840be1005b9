/* SPDX-License-Identifier: MIT */
/*
 * A multiboot guest: one vCPU entered in 32-bit protected mode as QEMU's
 * loader leaves it, COM1 polled, QEMU's debug-exit port, and the local
 * APIC page for the PMI of guest BTS.  HLT ends the run.
 */
#ifndef VBTS_MACHINE_MULTIBOOT_VM_H
#define VBTS_MACHINE_MULTIBOOT_VM_H

#include <stddef.h>
#include <stdint.h>

struct vm;
struct lapic_dev;

/* After kvm_x86_create() without the irqchip.  Returns the local APIC, or NULL. */
struct lapic_dev *multiboot_vm_setup(struct vm *vm, const uint8_t *image, size_t size,
                                     const char *cmdline);

#endif
