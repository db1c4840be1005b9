/* SPDX-License-Identifier: MIT */
/* The step engine's wishes: it steps exactly while the window is open or guest BTS is on. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "core/vm.h"
#include "guest_bts/guest_bts.h"
#include "trace/step.h"
#include "trace/window.h"
#include "x86/arch.h"
#include "x86/debug.h"
#include "x86/kvm_x86.h"

Test(step, steps_while_needed)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    struct vm vm;
    vm_init(&vm);
    struct kvm_x86_config xc = { 0 };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &xc), 0, "%s", error_last());
    struct trace_config tc;
    struct trace_options to = { 0 };
    cr_assert_eq(trace_config_build(&tc, &to), 0);
    struct guest_bts *gb = guest_bts_new(1);
    struct trace *tr = trace_install(&vm, &tc, gb);
    cr_assert_not_null(tr);
    struct trace_vcpu *t = &tr->cpu[0];
    cr_assert_eq(step_update(t), 0);
    cr_assert_not(debug_stepping(&vm.vcpus[0]), "nothing to record: no steps");
    guest_bts_wrmsr(gb, &vm.vcpus[0], MSR_IA32_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS);
    cr_assert_eq(step_update(t), 0);
    cr_assert(debug_stepping(&vm.vcpus[0]), "guest BTS on: steps");
    guest_bts_wrmsr(gb, &vm.vcpus[0], MSR_IA32_DEBUGCTL, 0);
    t->bp_armed = true;
    tc.start = 0x100088;
    cr_assert_eq(step_update(t), 0);
    cr_assert_not(debug_stepping(&vm.vcpus[0]), "waiting for the trigger: full speed");
    cr_assert_eq(arch_vcpu(&vm.vcpus[0])->dbg.slot_owner[0], DEBUG_TRACE);
    trace_free(tr);
    guest_bts_free(gb);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}
