/* SPDX-License-Identifier: MIT */
/*
 * A Linux guest: the platform vbts builds around a bzImage (in-kernel
 * irqchip and PIT, ACPI tables, 8250 with IRQ 4, CMOS RTC, ACPI power-off,
 * keyboard-controller reset), its command line, and how its end is told:
 * power-off or reboot is status 0, unless the console showed
 * "Kernel panic - not syncing" first (panic=-1 reboots on panic): then 2.
 */
#ifndef VBTS_LINUX_VM_H
#define VBTS_LINUX_VM_H

#include <stddef.h>
#include <stdint.h>

struct vm;
struct iobus;

/* Command line when --append is not given. */
#define LINUX_DEFAULT_CMDLINE "console=ttyS0 panic=-1"

struct linux_guest {
    const char *path;       /* the bzImage, to name it in errors */
    const uint8_t *image;
    size_t image_size;
    const char *initrd;     /* path, or NULL */
    const char *append;     /* the user's command line, or NULL for the default */
};

/* After kvm_vm_create() with vm->irqchip: load, build tables, add devices, start the console. */
int linux_vm_setup(struct vm *vm, struct iobus *io, const struct linux_guest *g);
/* At exit: stop the console reader and restore the terminal. */
void linux_vm_teardown(struct vm *vm);

/* The guest powered off or reset the machine (devices call these). */
void vm_guest_poweroff(struct vm *vm, const char *how);
void vm_guest_reset(struct vm *vm, const char *how);

#endif
