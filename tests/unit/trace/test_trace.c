/* SPDX-License-Identifier: MIT */
/*
 * The engine wired to a VM (trace.c, step.c, window.c) on the tiny
 * multiboot guest (../tiny_guest.h), with a usable /dev/kvm: the exact
 * records, in order.
 */
#include "tiny_trace.h"

Test(trace, records_of_a_tiny_guest)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    cr_assert_eq(tiny_trace(TRACE_ENGINE_STEP), 4,
                 "jmp, call, ret, xor: the out ends the run at its I/O exit");
}
