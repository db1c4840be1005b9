/* SPDX-License-Identifier: MIT */
/* Merging the clients' debug wishes into the one state KVM has. */
#include <criterion/criterion.h>
#include <string.h>
#include <linux/kvm.h>

#include "core/vcpu.h"
#include "x86/arch.h"
#include "x86/debug.h"

static struct debug_state d;

static void setup(void)
{
    memset(&d, 0, sizeof(d));
}

TestSuite(debug, .init = setup);

Test(debug, nothing_wanted_is_off)
{
    struct kvm_guest_debug g;
    cr_assert_not(debug_merge(&d, &g));
    cr_assert_eq(g.control, 0);
    for (int s = 0; s < DEBUG_MAX_BP; s++)
        cr_assert_eq(d.slot_owner[s], -1);
}

Test(debug, breakpoints_in_client_order)
{
    d.want[DEBUG_TRACE] = (struct debug_want){ .nbp = 1, .bp = { 0x1000 } };
    d.want[DEBUG_HOSTCOMPAT] = (struct debug_want){ .unless_stepped = true, .nbp = 1, .bp = { 0x2000 } };
    struct kvm_guest_debug g;
    cr_assert_not(debug_merge(&d, &g));
    cr_assert_eq(g.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP);
    cr_assert_eq(g.arch.debugreg[0], 0x1000);
    cr_assert_eq(g.arch.debugreg[1], 0x2000);
    cr_assert_eq(g.arch.debugreg[7], 0x5, "L0 and L1, execute, length 1");
    cr_assert_eq(d.slot_owner[0], DEBUG_TRACE);
    cr_assert_eq(d.slot_owner[1], DEBUG_HOSTCOMPAT);
    cr_assert_eq(d.slot_index[1], 0);
}

Test(debug, a_yielding_client_steps_aside_while_another_steps)
{
    d.want[DEBUG_TRACE] = (struct debug_want){ .step = true };
    d.want[DEBUG_HOSTCOMPAT] = (struct debug_want){ .unless_stepped = true, .nbp = 1, .bp = { 0x2000 } };
    struct kvm_guest_debug g;
    cr_assert(debug_merge(&d, &g));
    cr_assert_eq(g.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);
    cr_assert_eq(g.arch.debugreg[7], 0);
    cr_assert_eq(d.slot_owner[0], -1);
    /* Its own step counts when nobody else steps. */
    d.want[DEBUG_TRACE] = (struct debug_want){ 0 };
    d.want[DEBUG_HOSTCOMPAT] = (struct debug_want){ .unless_stepped = true, .step = true };
    cr_assert(debug_merge(&d, &g));
}

Test(debug, at_most_four_slots)
{
    d.want[DEBUG_TRACE] = (struct debug_want){ .nbp = 3, .bp = { 1, 2, 3 } };
    d.want[DEBUG_HOSTCOMPAT] = (struct debug_want){ .nbp = 2, .bp = { 4, 5 } };
    struct kvm_guest_debug g;
    debug_merge(&d, &g);
    cr_assert_eq(g.arch.debugreg[3], 4);
    cr_assert_eq(g.arch.debugreg[7], 0x55);
    cr_assert_eq(d.slot_owner[3], DEBUG_HOSTCOMPAT);
}

Test(debug, a_watchpoint_sets_its_rw_and_len_fields)
{
    d.want[DEBUG_GDB] = (struct debug_want){
        .nbp = 2, .bp = { 0x1000, 0x2000 }, .bp_rw = { DEBUG_RW_WRITE, DEBUG_RW_ACCESS },
        .bp_len = { 3, 2 } };
    struct kvm_guest_debug g;
    cr_assert_not(debug_merge(&d, &g));
    cr_assert_eq(g.arch.debugreg[7],
                 0x5ull | 1ull << 16 | 3ull << 18 | 3ull << 20 | 2ull << 22,
                 "L0 L1; write, 4 bytes; access, 8 bytes");
    cr_assert_eq(d.slot_owner[1], DEBUG_GDB);
}

Test(debug, code_run_in_software_stops_at_other_clients_breakpoints)
{
    struct arch_vcpu a = { 0 };
    struct vcpu c = { .arch = &a };
    a.dbg.want[DEBUG_TRACE] = (struct debug_want){ .nbp = 1, .bp = { 0x1000 } };
    cr_assert_not(debug_others_break_at(&c, DEBUG_TRACE, 0x1000), "the engine's own");
    a.dbg.want[DEBUG_GDB] = (struct debug_want){ .nbp = 1, .bp = { 0x2000 } };
    cr_assert(debug_others_break_at(&c, DEBUG_TRACE, 0x2000), "gdb's hbreak");
    cr_assert_not(debug_others_break_at(&c, DEBUG_TRACE, 0x2001));
    a.dbg.want[DEBUG_GDB].unless_stepped = true;
    cr_assert_not(debug_others_break_at(&c, DEBUG_TRACE, 0x2000), "a wish that yields to steps");
    a.dbg.want[DEBUG_GDB] = (struct debug_want){ .nbp = 1, .bp = { 0x3000 }, .bp_rw = { DEBUG_RW_WRITE },
                                                 .bp_len = { 3 } };
    cr_assert(debug_others_break_at(&c, DEBUG_TRACE, 0x9999), "a watchpoint: anywhere");
}

/* The guest's own breakpoints, honoured in software, stay out of the CPU while a client steps. */
Test(debug, the_guests_breakpoints_are_hidden_while_stepping)
{
    struct kvm_guest_debug g;
    d.hide_guest = true;
    cr_assert_not(debug_merge(&d, &g));
    cr_assert_eq(g.control, 0, "nobody steps: the guest's DR7 is its own");
    d.want[DEBUG_TRACE] = (struct debug_want){ .step = true };
    cr_assert(debug_merge(&d, &g));
    cr_assert_eq(g.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP | KVM_GUESTDBG_USE_HW_BP);
    cr_assert_eq(g.arch.debugreg[7], 0, "no breakpoint enabled in the CPU");
    d.hide_guest = false;
    cr_assert(debug_merge(&d, &g));
    cr_assert_eq(g.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);
}
