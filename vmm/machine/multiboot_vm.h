/* SPDX-License-Identifier: MIT */
/*
 * A multiboot guest, as QEMU boots one with -kernel: entered in 32-bit
 * protected mode as QEMU's loader leaves it, with its command line
 * ("KERNEL APPEND") and modules (-initrd), COM1, QEMU's debug-exit port and
 * fw_cfg.  Two platforms (docs/multiboot.md):
 *  - the default: one vCPU, no interrupt controllers but the local APIC
 *    page for the PMI of guest BTS; HLT ends the run;
 *  - a PC (pc, from --cpus N): KVM's local APICs, I/O APIC, PICs and PIT,
 *    the APs waiting for INIT/SIPI, ACPI tables with a MADT, the RTC, ACPI
 *    power-off and keyboard-controller reset, QEMU's pc-testdev, and what
 *    its firmware leaves (x86/bios.h: PICs, PIT, IVT); HLT waits for an
 *    interrupt.
 */
#ifndef VBTS_MACHINE_MULTIBOOT_VM_H
#define VBTS_MACHINE_MULTIBOOT_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct lapic_dev;

struct multiboot_guest {
    const char *path;           /* the image as named: its command line's first word */
    const uint8_t *image;
    size_t image_size;
    const char *append;         /* the rest of its command line, or NULL */
    const char *modules;        /* "FILE[ ARGS][,FILE[ ARGS]...]" (QEMU's -initrd), or NULL */
    bool pc;                    /* the PC platform; kvm_x86_create() made the irqchip */
};

/*
 * After kvm_x86_create().  *apic: the monitor's APIC page (the default
 * platform), NULL on a PC.  0, or -1 with the error set.
 */
int multiboot_vm_setup(struct vm *vm, const struct multiboot_guest *g, struct lapic_dev **apic);

#endif
