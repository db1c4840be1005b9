/* SPDX-License-Identifier: MIT */
#include "machine/multiboot_vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/image.h"
#include "boot/multiboot.h"
#include "core/vm.h"
#include "devices/acpi_pm.h"
#include "devices/cmos_rtc.h"
#include "devices/debug_exit.h"
#include "devices/fw_cfg.h"
#include "devices/i8042.h"
#include "devices/lapic.h"
#include "devices/pc_testdev.h"
#include "devices/serial8250.h"
#include "vbts/le.h"
#include "x86/acpi.h"
#include "x86/bios.h"
#include "x86/hostcompat.h"
#include "x86/kvm_x86.h"

#define COM1_BASE       0x3f8
#define COM1_IRQ        4
#define DEBUG_EXIT_PORT 0xf4

/* The modules named, read; their items double as their command lines. */
struct modules {
    int n;
    char *item[MULTIBOOT_MAX_MODULES];
    uint8_t *data[MULTIBOOT_MAX_MODULES];
    struct multiboot_module mod[MULTIBOOT_MAX_MODULES];
};

static void modules_free(struct modules *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->item[i]);
        free(m->data[i]);
    }
    m->n = 0;
}

static int modules_read(const char *spec, struct modules *m)
{
    memset(m, 0, sizeof(*m));
    if (!spec)
        return 0;
    char why[VBTS_MAX_MSG];
    int n = multiboot_split_modules(spec, m->item, MULTIBOOT_MAX_MODULES);
    if (n < 0)
        goto fail;
    m->n = n;
    for (int i = 0; i < n; i++) {
        char file[4096];
        snprintf(file, sizeof(file), "%.*s", (int)strcspn(m->item[i], " "), m->item[i]);
        if (image_read_file(file, &m->data[i], &m->mod[i].size) < 0)
            goto fail;
        m->mod[i].data = m->data[i];
        m->mod[i].cmdline = m->item[i];
    }
    return 0;
fail:
    snprintf(why, sizeof(why), "%s", error_last());
    modules_free(m);
    return error_fail("--initrd: %s", why);
}

/* QEMU's command line for a multiboot kernel: the kernel's name, a space, -append. */
static int load(struct vm *vm, const struct multiboot_guest *g, struct boot_info *bi)
{
    struct modules m;
    if (modules_read(g->modules, &m) < 0)
        return -1;
    const char *append = g->append ? g->append : "";
    size_t len = strlen(g->path) + strlen(append) + 2;
    char *cmdline = malloc(len);
    if (!cmdline) {
        modules_free(&m);
        return error_fail("out of memory");
    }
    snprintf(cmdline, len, "%s %s", g->path, append);
    struct multiboot_load_args a = { .cmdline = cmdline, .mods = m.mod, .nmods = m.n };
    int r = multiboot_load(&vm->mem, g->image, g->image_size, &a, bi);
    free(cmdline);
    modules_free(&m);
    return r;
}

/* fw_cfg's etc/e820: RAM as QEMU lists it there, below 4 GiB and above. */
static int add_fw_cfg(struct vm *vm)
{
    uint8_t e820[2 * 20] = { 0 };
    uint64_t low = gmem_low_size(&vm->mem), high = gmem_high_size(&vm->mem);
    vbts_put64(e820 + 8, low);
    vbts_put32(e820 + 16, 1);
    vbts_put64(e820 + 20, GMEM_HIGH_BASE);
    vbts_put64(e820 + 28, high);
    vbts_put32(e820 + 36, 1);
    struct fw_cfg_file f = { "etc/e820", e820, high ? 40 : 20 };
    struct fw_cfg_config c = { .ncpus = (uint16_t)vm->ncpus, .ram_size = vm->mem.size,
                               .files = &f, .nfiles = 1 };
    return fw_cfg_register(&vm->io, &c);
}

/* The PC's devices beyond the interrupt controllers KVM has, and the test device kvm-unit-tests uses. */
static int add_pc(struct vm *vm)
{
    if (!acpi_build(&vm->mem, vm->ncpus))
        return error_fail("no room for the ACPI tables for %d vCPUs", vm->ncpus);
    struct serial_config sc = { .out_fd = STDOUT_FILENO, .vm = vm, .irq = COM1_IRQ };
    if (!serial8250_attach(&vm->io, COM1_BASE, &sc) || acpi_pm_register(&vm->io) < 0 ||
        i8042_register(&vm->io) < 0 || cmos_rtc_register(&vm->io) < 0 || pc_testdev_register(vm) < 0)
        return -1;
    return 0;
}

int multiboot_vm_setup(struct vm *vm, const struct multiboot_guest *g, struct lapic_dev **apic)
{
    struct boot_info bi;
    *apic = NULL;
    /* The firmware's IVT first: an image below 1 MiB may load over it, as under QEMU. */
    if ((g->pc && bios_setup(vm) < 0) || load(vm, g, &bi) < 0)
        return -1;
    if (kvm_x86_enter_protected32(&vm->vcpus[0], bi.entry, MB_BOOT_MAGIC, bi.mbi) < 0)
        return -1;
    /* Entered without paging: its linear addresses are physical, at least at first. */
    if (vm_image_add(vm, 0, 0, gmem_low_size(&vm->mem)) < 0)
        return -1;
    if (g->pc ? add_pc(vm) < 0 : serial8250_register(&vm->io, COM1_BASE, STDOUT_FILENO) < 0)
        return -1;
    if (debug_exit_register(&vm->io, DEBUG_EXIT_PORT) < 0 || add_fw_cfg(vm) < 0)
        return -1;
    /* Software interrupts kvm_pvm's emulator fails at CPL0 (docs/host-compat.md). */
    if (hostcompat_install_completion(vm) < 0)
        return -1;
    if (!g->pc && !(*apic = lapic_attach(vm)))
        return -1;
    return 0;
}
