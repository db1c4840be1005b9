/* SPDX-License-Identifier: MIT */
/* How a run ends: the first reason wins; devices' events go to the machine. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/vm.h"

Test(vm, first_end_wins)
{
    struct vm vm;
    vm_init(&vm);
    cr_assert(!vm_ending(&vm));
    vm_request_end(&vm, VM_END_DEBUG_EXIT, 3, "guest wrote 0x%x", 1);
    vm_request_end(&vm, VM_END_CRASH, 2, "later");
    cr_assert(vm_ending(&vm));
    cr_assert_eq(atomic_load(&vm.end), VM_END_DEBUG_EXIT);
    cr_assert_eq(vm.exit_status, 3);
    cr_assert_str_eq(vm.end_msg, "guest wrote 0x1");
    vm_fini(&vm);
}

static enum vm_guest_event seen;
static char seen_how[64];

static void on_event(struct vm *vm, enum vm_guest_event ev, const char *how, void *ctx)
{
    (void)vm;
    *(int *)ctx += 1;
    seen = ev;
    strcpy(seen_how, how);
}

Test(vm, guest_events)
{
    struct vm vm;
    vm_init(&vm);
    vm_guest_event(&vm, VM_GUEST_POWEROFF, "ACPI S5");
    cr_assert_eq(vm.exit_status, VBTS_EXIT_OK);
    cr_assert_str_eq(vm.end_msg, "guest powered off (ACPI S5)", "no machine: the run ends, 0");
    vm_fini(&vm);

    int calls = 0;
    vm_init(&vm);
    vm.on_guest_event = on_event;
    vm.guest_event_ctx = &calls;
    vm_guest_event(&vm, VM_GUEST_RESET, "keyboard controller reset");
    cr_assert_eq(calls, 1);
    cr_assert_eq(seen, VM_GUEST_RESET);
    cr_assert_str_eq(seen_how, "keyboard controller reset");
    cr_assert(!vm_ending(&vm), "the machine decides");
    vm_fini(&vm);
}
