/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>

#include "core/vm.h"
#include "devices/debug_exit.h"

Test(debug_exit, status_is_v_shifted_or_one)
{
    struct vm vm;
    vm_init(&vm);
    struct vcpu cpu = { .vm = &vm };
    cr_assert_eq(debug_exit_register(&vm.io, 0xf4), 0);
    uint8_t v = 0x21;
    iobus_access(&vm.io, &cpu, 0xf4, 1, &v, 1);
    cr_assert_eq(atomic_load(&vm.end), VM_END_DEBUG_EXIT);
    cr_assert_eq(vm.exit_status, 67);
    cr_assert_str_eq(vm.end_msg, "guest wrote 0x21 to the debug-exit port");
    vm_fini(&vm);
}

/* kvm-unit-tests' exit(): outl to 0xf4, as QEMU's isa-debug-exit with iosize=4 takes it. */
Test(debug_exit, four_byte_write)
{
    struct vm vm;
    vm_init(&vm);
    struct vcpu cpu = { .vm = &vm };
    cr_assert_eq(debug_exit_register(&vm.io, 0xf4), 0);
    uint8_t v[4] = { 0x01, 0x01, 0x00, 0x00 };
    iobus_access(&vm.io, &cpu, 0xf4, 1, v, 4);
    cr_assert_eq(atomic_load(&vm.end), VM_END_DEBUG_EXIT);
    cr_assert_eq(vm.exit_status, 3, "(0x101 << 1 | 1) & 0xff");
    cr_assert_str_eq(vm.end_msg, "guest wrote 0x101 to the debug-exit port");
    vm_fini(&vm);
}
