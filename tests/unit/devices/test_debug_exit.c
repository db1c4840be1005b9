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
