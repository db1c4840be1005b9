/* SPDX-License-Identifier: MIT */
/*
 * Booting a Linux bzImage: the platform around it and how its end is read.
 *
 * Power-off (ACPI S5, devices/acpi_pm.c) and reboot (keyboard-controller
 * reset, devices/i8042.c) end the run with status 0.  A kernel panic with
 * panic=-1 also reboots, through the same reset; what tells it apart is
 * the console: the kernel prints "Kernel panic - not syncing: ..." (at
 * KERN_EMERG, so even with `quiet`) before it resets, and the UART hands
 * every line to console_line() below.  A panic then ends the run with
 * status 2, naming it.
 */
#include "machine/linux_vm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/image.h"
#include "boot/linux.h"
#include "core/vm.h"
#include "devices/acpi_pm.h"
#include "devices/cmos_rtc.h"
#include "devices/console.h"
#include "devices/debug_exit.h"
#include "devices/i8042.h"
#include "devices/serial8250.h"
#include "x86/acpi.h"
#include "x86/hostcompat.h"
#include "x86/host.h"
#include "x86/kvm_x86.h"

#define COM1_BASE       0x3f8
#define COM1_IRQ        4
#define DEBUG_EXIT_PORT 0xf4

struct linux_vm {
    struct vm *vm;
    atomic_bool panic;          /* the console showed "Kernel panic - not syncing" */
    char panic_line[160];
};

static void console_line(void *ctx, const char *line)
{
    struct linux_vm *l = ctx;
    if (atomic_load(&l->panic) || !strstr(line, "Kernel panic - not syncing"))
        return;
    snprintf(l->panic_line, sizeof(l->panic_line), "%s", strstr(line, "Kernel panic"));
    atomic_store(&l->panic, true);
}

static void guest_event(struct vm *vm, enum vm_guest_event ev, const char *how, void *ctx)
{
    struct linux_vm *l = ctx;
    const char *what = ev == VM_GUEST_POWEROFF ? "powered off" : how;
    if (atomic_load(&l->panic))
        vm_request_end(vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                       "guest kernel panicked (\"%s\"), then %s", l->panic_line, what);
    else
        vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest %s (%s)",
                       ev == VM_GUEST_POWEROFF ? "powered off" : "rebooted", how);
}

/* The host's additions go first, so that the user's options win and "--" stays last. */
static char *build_cmdline(const char *append)
{
    const char *user = append && *append ? append : LINUX_DEFAULT_CMDLINE;
    const char *host = hostcompat_cmdline();
    size_t len = strlen(user) + (host ? strlen(host) + 1 : 0) + 1;
    char *c = malloc(len);
    if (!c)
        return NULL;
    if (host) {
        snprintf(c, len, "%s %s", host, user);
        fprintf(stderr, "vbts: host-compat: this host's KVM (kvm_pvm) cannot run some kernel "
                "instructions and shows user mode the host's CPU features; kernel command "
                "line gets \"%s\" (docs/host-compat.md)\n", host);
    } else {
        snprintf(c, len, "%s", user);
    }
    return c;
}

static int load(struct vm *vm, const struct linux_guest *g)
{
    uint8_t *initrd = NULL;
    size_t initrd_size = 0;
    if (g->initrd && image_read_file(g->initrd, &initrd, &initrd_size) < 0)
        return -1;
    if (initrd && initrd_size == 0) {
        free(initrd);
        return error_fail("%s: the initrd is empty", g->initrd);
    }
    uint64_t rsdp = acpi_build(&vm->mem, vm->ncpus);
    if (!rsdp) {
        free(initrd);
        return error_fail("no room for the ACPI tables for %d vCPUs", vm->ncpus);
    }
    char *cmdline = build_cmdline(g->append);
    if (!cmdline) {
        free(initrd);
        return error_fail("out of memory");
    }
    struct linux_boot lb;
    int r = linux_load(&vm->mem, g->image, g->image_size, initrd, initrd_size, cmdline, rsdp, &lb);
    free(initrd);
    free(cmdline);
    if (r < 0) {
        char why[VBTS_MAX_MSG];
        snprintf(why, sizeof(why), "%s", error_last());
        return error_fail("%s: %s", g->path, why);
    }
    /* Not unpacked: the kernel's own decompressor runs first, in the
     * guest, and on kvm_pvm that is minutes of emulated code. */
    if (!lb.unpacked && lb.payload != UNPACK_UNKNOWN)
        fprintf(stderr, "vbts: %s: the kernel's %s payload does not unpack on the host (corrupt, "
                "or no vmlinux inside); the kernel's own decompressor runs first\n", g->path,
                unpack_format_name(lb.payload));
    if (kvm_x86_hypercalls_hidden(vm))
        fprintf(stderr, "vbts: host-compat: this host's KVM (%s) never completes a hypercall: the "
                "guest is not offered PV spinlocks, PV IPIs or PV yield (docs/host-compat.md)\n",
                host_kvm_name());
    for (int i = 0; i < lb.ncode; i++)
        if (vm_image_add(vm, lb.code[i].lin, lb.code[i].gpa, lb.code[i].len) < 0)
            return -1;
    struct kvm_x86_long64 e = { .rip = lb.entry, .rsi = lb.zero_page, .cr3 = lb.cr3,
                                .gdt_base = lb.gdt_base, .gdt_limit = lb.gdt_limit,
                                .cs = LINUX_BOOT_CS, .ds = LINUX_BOOT_DS };
    return kvm_x86_enter_long64(&vm->vcpus[0], &e);
}

struct linux_vm *linux_vm_setup(struct vm *vm, const struct linux_guest *g)
{
    struct linux_vm *l = calloc(1, sizeof(*l));
    if (!l) {
        error_fail("out of memory");
        return NULL;
    }
    l->vm = vm;
    if (load(vm, g) < 0) {
        free(l);
        return NULL;
    }
    struct serial_config sc = { .out_fd = STDOUT_FILENO, .vm = vm, .irq = COM1_IRQ,
                                .on_line = console_line, .line_ctx = l };
    struct io_device *uart = serial8250_attach(&vm->io, COM1_BASE, &sc);
    if (!uart || acpi_pm_register(&vm->io) < 0 || i8042_register(&vm->io) < 0 ||
        cmos_rtc_register(&vm->io) < 0 || debug_exit_register(&vm->io, DEBUG_EXIT_PORT) < 0 ||
        hostcompat_install(vm) < 0 || console_start(vm, uart, STDIN_FILENO) < 0) {
        free(l);
        return NULL;
    }
    vm->on_guest_event = guest_event;
    vm->guest_event_ctx = l;
    return l;
}

void linux_vm_teardown(struct linux_vm *l)
{
    if (!l)
        return;
    console_stop();
    free(l);
}
