/* SPDX-License-Identifier: MIT */
#include "machine/multiboot_vm.h"

#include <unistd.h>

#include "boot/multiboot.h"
#include "core/vm.h"
#include "devices/debug_exit.h"
#include "devices/lapic.h"
#include "devices/serial8250.h"
#include "x86/hostcompat.h"
#include "x86/kvm_x86.h"

#define COM1_BASE       0x3f8
#define DEBUG_EXIT_PORT 0xf4

struct lapic_dev *multiboot_vm_setup(struct vm *vm, const uint8_t *image, size_t size,
                                     const char *cmdline)
{
    struct boot_info bi;
    if (multiboot_load(&vm->mem, image, size, cmdline, &bi) < 0)
        return NULL;
    if (kvm_x86_enter_protected32(&vm->vcpus[0], bi.entry, MB_BOOT_MAGIC, bi.mbi) < 0)
        return NULL;
    /* Entered without paging: its linear addresses are physical, at least at first. */
    if (vm_image_add(vm, 0, 0, gmem_low_size(&vm->mem)) < 0)
        return NULL;
    /* Software interrupts kvm_pvm's emulator fails at CPL0 (docs/host-compat.md). */
    if (serial8250_register(&vm->io, COM1_BASE, STDOUT_FILENO) < 0 ||
        debug_exit_register(&vm->io, DEBUG_EXIT_PORT) < 0 || hostcompat_install_completion(vm) < 0)
        return NULL;
    return lapic_attach(vm);
}
