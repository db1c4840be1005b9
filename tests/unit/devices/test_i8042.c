/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <string.h>

#include "core/vm.h"
#include "devices/i8042.h"

static int resets;

static void on_event(struct vm *vm, enum vm_guest_event ev, const char *how, void *ctx)
{
    (void)vm;
    (void)ctx;
    cr_assert_eq(ev, VM_GUEST_RESET);
    cr_assert_str_eq(how, "keyboard controller reset");
    resets++;
}

Test(i8042, pulse_reset_is_a_guest_reset)
{
    struct vm vm;
    vm_init(&vm);
    vm.on_guest_event = on_event;
    struct vcpu cpu = { .vm = &vm };
    cr_assert_eq(i8042_register(&vm.io), 0);
    uint8_t v;
    iobus_access(&vm.io, &cpu, 0x64, 0, &v, 1);
    cr_assert_eq(v, 0, "ready, nothing to read: kb_wait() does not spin");
    v = 0xaa;
    iobus_access(&vm.io, &cpu, 0x64, 1, &v, 1);
    cr_assert_eq(resets, 0);
    v = 0xfe;
    iobus_access(&vm.io, &cpu, 0x64, 1, &v, 1);
    cr_assert_eq(resets, 1);
    vm_fini(&vm);
}
