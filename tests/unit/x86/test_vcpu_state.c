/* SPDX-License-Identifier: MIT */
/* What a vCPU waited for: the snapshot's line, and a snapshot of a real vCPU. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "x86/arch.h"
#include "x86/debug.h"
#include "x86/kvm_x86.h"
#include "x86/vcpu_state.h"
#include "kvm_vm.h"

static char line[512];

static const char *describe(const struct vcpu_state *s)
{
    vcpu_state_describe(s, line, sizeof(line));
    return line;
}

/* The two vCPUs of issue 30's hang, as the signal's lines showed them. */
Test(vcpu_state, a_vcpu_left_stepped_with_interrupts_held)
{
    struct vcpu_state s = { .known = true, .rflags = 0x202, .mp_state = KVM_MP_STATE_HALTED,
                            .has_lapic = true, .svr = 0x1ff, .tpr = 0x10, .ppr = 0x10,
                            .lvt_timer = 0x200ec, .tmict = 249914, .tmcct = 26635, .tdcr = 3,
                            .has_events = true, .guest_dr7 = 0x400,
                            .debug_control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP |
                                             KVM_GUESTDBG_BLOCKIRQ | KVM_GUESTDBG_USE_HW_BP };
    s.irr[0xec / 32] |= 1u << (0xec % 32);
    s.irr[0xfb / 32] |= 1u << (0xfb % 32);
    cr_assert_str_eq(describe(&s),
                     "IF=1 halted; LAPIC on, TPR 0x10 PPR 0x10, timer periodic vector 0xec, initial count "
                     "249914 current 26635 divide 0x3; IRR 0xec,0xfb; ISR -; events: none; monitor's debug: "
                     "single-step, interrupts blocked, breakpoints; guest's DR7 0x400");
}

Test(vcpu_state, tsc_deadline_armed_passed_or_not)
{
    struct vcpu_state s = { .known = true, .mp_state = KVM_MP_STATE_RUNNABLE, .has_lapic = true,
                            .svr = 0x1ff, .lvt_timer = 0x400ec, .has_tsc = true, .tsc = 1000,
                            .guest_dr7 = 0x400 };
    s.isr[1] = 1u << 16;    /* vector 0x30 */
    s.tsc_deadline = 400;
    cr_assert(strstr(describe(&s), "timer tsc-deadline vector 0xec, deadline passed 600 TSC ticks ago; IRR -; ISR 0x30;"),
              "%s", line);
    s.tsc_deadline = 1500;
    cr_assert(strstr(describe(&s), "deadline in 500 TSC ticks"), "%s", line);
    s.tsc_deadline = 0;
    cr_assert(strstr(describe(&s), "tsc-deadline vector 0xec, not armed"), "%s", line);
    s.has_tsc = false;
    cr_assert(strstr(describe(&s), "deadline unknown"), "%s", line);
    s.lvt_timer |= 1u << 16;
    s.svr = 0xff;
    cr_assert(strstr(describe(&s), "IF=0 runnable; LAPIC off (SVR)"), "%s", line);
    cr_assert(strstr(describe(&s), "vector 0xec masked"), "%s", line);
}

Test(vcpu_state, events_and_no_lapic)
{
    struct vcpu_state s = { .known = true, .rflags = 0x2, .mp_state = KVM_MP_STATE_RUNNABLE,
                            .has_events = true };
    s.ev.interrupt.injected = 1;
    s.ev.interrupt.nr = 0x30;
    s.ev.interrupt.shadow = 1;
    s.ev.nmi.pending = 1;
    s.ev.nmi.masked = 1;
    s.ev.exception.pending = 1;
    s.ev.exception.nr = 14;
    cr_assert_str_eq(describe(&s), "IF=0 runnable; events: exception 14 pending, interrupt 0x30 injected, "
                                   "interrupt shadow 0x1, NMI pending, NMIs masked; monitor's debug: none; "
                                   "guest's DR7 0x0");
    struct vcpu_state u = { 0 };
    cr_assert_str_eq(describe(&u), "state unknown");
}

Test(vcpu_state, cut_to_the_buffer)
{
    struct vcpu_state s = { .known = true, .has_lapic = true, .mp_state = 99 };
    for (int i = 0; i < 8; i++)
        s.irr[i] = s.isr[i] = 0xffffffffu;
    char small[40];
    memset(small, 'x', sizeof(small));
    vcpu_state_describe(&s, small, sizeof(small));
    cr_assert_eq(strlen(small), sizeof(small) - 1);
    cr_assert_eq(strncmp(small, "IF=0 mp-state ?", 15), 0, "%s", small);
    vcpu_state_describe(&s, small, 1);
    cr_assert_eq(small[0], 0);
}

/* A real vCPU before it ran: runnable, the monitor's debug state as debug.c left it. */
Test(vcpu_state, taken_from_a_vcpu)
{
    struct vm vm;
    kvm_vm_create(&vm, 1, true);
    struct vcpu *cpu = &vm.vcpus[0];
    struct debug_want w = { .step = true, .block_irq = true };
    cr_assert_eq(debug_set(cpu, DEBUG_TRACE, &w), 0, "%s", error_last());
    struct vcpu_state s;
    vcpu_state_take(cpu, &s);
    cr_assert(s.known);
    cr_assert_eq(s.mp_state, KVM_MP_STATE_RUNNABLE);
    cr_assert(s.has_lapic, "an in-kernel local APIC");
    cr_assert(s.has_events);
    cr_assert_eq(s.debug_control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP | KVM_GUESTDBG_BLOCKIRQ);
    cr_assert(strstr(describe(&s), "monitor's debug: single-step, interrupts blocked;"), "%s", line);
    cr_assert_null(vcpu_state_of(&vm, 0), "nothing taken before the thread ended");
    cr_assert_null(vcpu_state_of(&vm, 1));
    kvm_vm_destroy(&vm);
}
