/* SPDX-License-Identifier: MIT */
/*
 * A Linux guest: the platform vbts builds around a bzImage (in-kernel
 * irqchip and PIT, ACPI tables, 8250 with IRQ 4, CMOS RTC, ACPI power-off,
 * keyboard-controller reset, debug-exit), its command line, host-compat,
 * and how its end is told: power-off or reboot is status 0, unless the
 * console showed "Kernel panic - not syncing" first (panic=-1 reboots on
 * panic): then 2.
 */
#ifndef VBTS_MACHINE_LINUX_VM_H
#define VBTS_MACHINE_LINUX_VM_H

#include <stddef.h>
#include <stdint.h>

struct vm;
struct linux_vm;

/* Command line when --append is not given. */
#define LINUX_DEFAULT_CMDLINE "console=ttyS0 panic=-1"

struct linux_guest {
    const char *path;       /* the bzImage, to name it in errors */
    const uint8_t *image;
    size_t image_size;
    const char *initrd;     /* path, or NULL */
    const char *append;     /* the user's command line, or NULL for the default */
};

/* After kvm_x86_create() with the irqchip: load, build tables, add devices, start the console. */
struct linux_vm *linux_vm_setup(struct vm *vm, const struct linux_guest *g);
/* At exit: stop the console reader, restore the terminal, free. */
void linux_vm_teardown(struct linux_vm *l);

#endif
