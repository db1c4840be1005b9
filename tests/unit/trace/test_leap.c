/* SPDX-License-Identifier: MIT */
/*
 * The branch engine (leap.c) on the tiny multiboot guest, where the host
 * runs it: the step engine's records (test_trace.c), in fewer exits.
 */
#include "tiny_trace.h"

Test(leap, the_branch_engine_gives_the_step_engines_records)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    int64_t exits = tiny_trace(TRACE_ENGINE_BRANCH);
    if (exits < 0)
        cr_skip_test("%s", error_last());
    cr_assert_eq(exits, 1, "jmp, call, ret taken in software, a stretch to the out: one exit");
}
