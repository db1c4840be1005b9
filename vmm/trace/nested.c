/* SPDX-License-Identifier: MIT */
#include "trace/nested.h"

#include "export/sink.h"
#include "core/error.h"
#include "trace/gdbg.h"
#include "trace/step.h"
#include "trace/window.h"
#include "x86/deliver.h"
#include "x86/event.h"
#include "x86/fault.h"

/*
 * kvm_pvm delivers an exception whose delivery faults (a gate not
 * present, a bad selector, a stack not mapped: the CPU raises #NP, #GP,
 * #PF, #DF on the way in) otherwise than the CPU, and the guest goes
 * astray (the nest class; the same untraced).  So before an instruction
 * that raises one for sure (x86/fault.c foresees it) the monitor delivers
 * it as the CPU does (deliver_nested) and records it; what that does not
 * model stops the trace.  One that comes unforeseen leaves the vCPU where
 * no handler explains it, which stops the trace too (attrib.c).
 */
#define NESTED_ROUNDS 8         /* a handler whose first instruction does it again, and so on */

static unsigned record_kind(const struct delivery *d, unsigned delivered)
{
    return (d->kind == DELIVER_TRAP || d->kind == DELIVER_SOFT) && d->vector == delivered ? VBTS_KIND_INT
                                                                                       : VBTS_KIND_EXCEPTION;
}

static int stop(struct trace_vcpu *t, uint64_t rip, unsigned vec, const char *why)
{
    if (t->tr->sink)
        sink_stop(t->tr->sink, t->cpu->index, VBTS_STOP_UNSUPPORTED);
    vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                   "trace stopped at 0x%llx on vCPU %d: the instruction raises vector %u, and its delivery "
                   "faults (%s): this host (kvm_pvm) does not deliver such nested events as the CPU does",
                   (unsigned long long)rip, t->cpu->index, vec, why);
    return -1;
}

bool nested_due(const struct cpu_view *v, uint64_t rip, struct delivery *d)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_mode(v->sregs) == MODE_REAL16 ||
        fault_predict(v, cpu_decode(v, rip, &in, ops, &why) == 0 ? &in : NULL, ops, d) != FAULT_YES)
        return false;
    /* (INT n's vector may be 32 or more: its gate is read as any other) */
    return deliver_would_fault(v->mem, v->regs, v->sregs, d->vector, &why);
}

int nested_ahead(struct trace_vcpu *t)
{
    for (int round = 0; round < NESTED_ROUNDS; round++) {
        struct cpu_view v;
        trace_view(t, &v);
        struct delivery d;
        if (!t->pred_valid || !t->stepping || !nested_due(&v, t->pred.from, &d))
            return 0;
        if (gdbg_engaged(t))
            return stop(t, t->pred.from, d.vector, "and the guest debugs itself");
        int cpl = cpu_cpl(v.sregs);
        uint64_t from, to;
        unsigned vector;
        int rc = event_deliver_nested(t->cpu, &d, &from, &to, &vector);
        if (rc == -2) {
            /* The CPU shuts down there, as the guest untraced on a host that delivers so */
            vm_request_end(t->cpu->vm, VM_END_CRASH, VBTS_EXIT_GUEST_CRASH,
                           "guest triple fault (KVM_EXIT_SHUTDOWN) on vCPU %d at rip=0x%llx", t->cpu->index,
                           (unsigned long long)t->cpu->run->s.regs.regs.rip);
            return -1;
        }
        if (rc < 0)
            return stop(t, t->pred.from, d.vector, error_last());
        window_emit_branch(t, from, to, record_kind(&d, vector), cpl);
        if (step_predict(t, false) < 0)
            return -1;
    }
    return t->pred_valid && t->stepping ? stop(t, t->pred.from, 8, "one after another, more than the monitor "
                                                "follows") : 0;
}
