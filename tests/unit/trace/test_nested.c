/* SPDX-License-Identifier: MIT */
/* kvm_pvm and nested events: the trace stops before an exception whose delivery faults. */
#include <criterion/criterion.h>
#include <string.h>

#include "../x86/machine.h"
#include "trace/nested.h"
#include "vbts/format.h"

TestSuite(nested, .init = machine_setup, .fini = machine_teardown);

/* Nothing to stop for: no instruction predicted, or one that raises nothing. */
Test(nested, nothing_raised_nothing_stopped)
{
    struct trace_vcpu t;
    memset(&t, 0, sizeof(t));
    cr_assert_eq(nested_ahead(&t, &view), 0, "no prediction");
    static const uint8_t nop[] = { 0x90 };
    code(nop, sizeof(nop));
    t.pred_valid = true;
    t.stepping = true;
    t.pred.from = regs.rip;
    t.pred.dr = -1;
    cr_assert_eq(nested_ahead(&t, &view), 0, "a nop raises nothing");
}

/* INT n with a vector from 32 up (an interrupt gate): no exception's bit, no stop for a gate that is fine. */
Test(nested, int_n_above_31_is_no_exception)
{
    struct trace_vcpu t;
    memset(&t, 0, sizeof(t));
    gate64(0x80, 0x30000, 0x08, 0xe, 0, 0);
    static const uint8_t intn[] = { 0xcd, 0x80 };
    code(intn, sizeof(intn));
    t.pred_valid = true;
    t.stepping = true;
    t.pred.from = regs.rip;
    t.pred.kind = VBTS_KIND_INT;
    t.pred.vector = 0x80;
    t.pred.dr = -1;
    cr_assert_eq(nested_ahead(&t, &view), 0);
}
