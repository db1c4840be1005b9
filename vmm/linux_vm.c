/* SPDX-License-Identifier: MIT */
/*
 * Booting a Linux bzImage: the platform around it and how its end is read.
 *
 * Power-off (ACPI S5, dev_acpi_pm.c) and reboot (keyboard-controller reset,
 * dev_i8042.c) end the run with status 0.  A kernel panic with panic=-1 also
 * reboots, through the same reset; what tells it apart is the console: the
 * kernel prints "Kernel panic - not syncing: ..." (at KERN_EMERG, so even
 * with `quiet`) before it resets, and the UART hands every line to
 * console_line() below.  A panic then ends the run with status 2, naming it.
 */
#include "linux_vm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acpi_x86.h"
#include "console.h"
#include "hostcompat_x86.h"
#include "iobus.h"
#include "kvm.h"
#include "loader.h"
#include "loader_linux.h"
#include "vbts.h"

#define COM1_BASE 0x3f8
#define COM1_IRQ  4

static void console_line(struct vm *vm, const char *line)
{
    if (atomic_load(&vm->guest_panic) || !strstr(line, "Kernel panic - not syncing"))
        return;
    const char *p = strstr(line, "Kernel panic");
    snprintf(vm->panic_line, sizeof(vm->panic_line), "%s", p);
    atomic_store(&vm->guest_panic, true);
}

static void end_after_panic(struct vm *vm, const char *how)
{
    vm_request_end(vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH, "guest kernel panicked (\"%s\"), "
                   "then %s", vm->panic_line, how);
}

void vm_guest_poweroff(struct vm *vm, const char *how)
{
    if (atomic_load(&vm->guest_panic))
        end_after_panic(vm, "powered off");
    else
        vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest powered off (%s)", how);
}

void vm_guest_reset(struct vm *vm, const char *how)
{
    if (atomic_load(&vm->guest_panic))
        end_after_panic(vm, how);
    else
        vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest rebooted (%s)", how);
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

int linux_vm_setup(struct vm *vm, struct iobus *io, const struct linux_guest *g)
{
    uint8_t *initrd = NULL;
    size_t initrd_size = 0;
    if (g->initrd && loader_read_file(g->initrd, &initrd, &initrd_size) < 0)
        return -1;
    if (initrd && initrd_size == 0) {
        free(initrd);
        return vbts_fail("%s: the initrd is empty", g->initrd);
    }
    uint64_t rsdp = acpi_build(&vm->mem, vm->ncpus);
    if (!rsdp) {
        free(initrd);
        return vbts_fail("no room for the ACPI tables for %d vCPUs", vm->ncpus);
    }
    char *cmdline = build_cmdline(g->append);
    if (!cmdline) {
        free(initrd);
        return vbts_fail("out of memory");
    }
    struct linux_boot lb;
    int r = loader_linux(&vm->mem, g->image, g->image_size, initrd, initrd_size, cmdline,
                         rsdp, &lb);
    free(initrd);
    free(cmdline);
    if (r < 0) {
        char why[VBTS_MAX_MSG];
        snprintf(why, sizeof(why), "%s", vbts_last_error());
        return vbts_fail("%s: %s", g->path, why);
    }
    if (kvm_x86_enter_long64(&vm->vcpus[0], &lb) < 0)
        return -1;

    struct serial_config sc = { .out_fd = STDOUT_FILENO, .vm = vm, .irq = COM1_IRQ,
                                .on_line = console_line };
    struct io_device *uart = serial8250_attach(io, COM1_BASE, &sc);
    if (!uart || acpi_pm_register(io) < 0 || i8042_register(io) < 0 ||
        cmos_rtc_register(io) < 0)
        return -1;
    vm->hostcompat = true;
    return console_start(vm, uart, STDIN_FILENO);
}

void linux_vm_teardown(struct vm *vm)
{
    (void)vm;
    console_stop();
}
