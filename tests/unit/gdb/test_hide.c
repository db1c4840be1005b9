/* SPDX-License-Identifier: MIT */
/* The page of gdb's execution points taken from the guest, on a real VM. */
#include "session.h"

#include "gdb/hide.h"
#include "gdb/target.h"

Test(hide, one_page_of_execution_points_is_hidden_until_the_stop)
{
    session_start(true);
    cr_assert_str_eq(session_ask("?"), "T05thread:1;");
    if (!kvm_extension(&vm, KVM_CAP_EXIT_ON_EMULATION_FAILURE)) {
        send(sock, "$k#6b", 5, 0);
        session_end();
        cr_skip_test("KVM lacks KVM_CAP_EXIT_ON_EMULATION_FAILURE");
    }
    /* As on a host whose guests fire no breakpoint. */
    g->dr_fire = false;
    g->npoints = 2;
    g->points[0] = (struct point){ .type = STUB_HW_BREAK, .addr = 0x10002c };
    g->points[1] = (struct point){ .type = STUB_SW_BREAK, .addr = 0x100020 };
    cr_assert_eq(hide_arm(g), 1, "%s", error_last());
    cr_assert(vm.hide.on && vm.hide.hidden);
    cr_assert_eq(vm.hide.gpa, 0x100000);
    cr_assert_eq(hide_disarm(g), 0);
    cr_assert_not(vm.hide.hidden);
    g->points[1] = (struct point){ .type = STUB_WRITE_WATCH, .addr = 0x100040, .len = 4 };
    cr_assert_eq(hide_arm(g), 0, "a watchpoint: step anyway");
    g->points[1] = (struct point){ .type = STUB_SW_BREAK, .addr = 0x200000 };
    cr_assert_eq(hide_arm(g), 0, "two pages");
    cr_assert_not(vm.hide.hidden);
    g->npoints = 0;
    g->dr_fire = true;
    send(sock, "$D#44", 5, 0);
    cr_assert_str_eq(session_reply(), "OK");
    session_end();
    cr_assert_eq(status, 1);
}
