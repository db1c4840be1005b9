/* SPDX-License-Identifier: MIT */
#include "trace/nested.h"

#include <string.h>

#include "export/sink.h"
#include "x86/deliver.h"
#include "x86/fault.h"

/*
 * kvm_pvm delivers an exception whose delivery faults (a gate not
 * present, a bad selector, a stack not mapped: the CPU raises #NP, #GP,
 * #PF, #DF on the way in) otherwise than the CPU, and the guest goes
 * astray (the nest class; the same untraced).  So the trace stops before
 * an instruction that raises one for sure (x86/fault.c foresees it); one
 * that comes unforeseen leaves the vCPU where no handler explains it,
 * which stops the trace too (attrib.c).
 */
int nested_ahead(struct trace_vcpu *t, const struct cpu_view *v)
{
    if (!t->pred_valid || !t->stepping || cpu_mode(v->sregs) == MODE_REAL16)
        return 0;
    uint64_t rip = t->pred.from;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    struct delivery d;
    uint32_t m = 0;
    /* (INT n's vector may be 32 or more: an interrupt gate, no exception) */
    if (fault_predict(v, cpu_decode(v, rip, &in, ops, &why) == 0 ? &in : NULL, ops, &d) == FAULT_YES &&
        d.vector < 32)
        m |= 1u << d.vector;
    if (t->pred.kind == VBTS_KIND_INT && t->pred.vector < 32)
        m |= 1u << t->pred.vector;
    for (unsigned vec = 0; vec < 32; vec++)
        if ((m & (1u << vec)) && deliver_would_fault(v->mem, v->regs, v->sregs, vec, &why) &&
            !strstr(why, "IDT entry is not present")) {     /* that one kvm_pvm delivers (unforeseen64.asm) */
            if (t->tr->sink)
                sink_stop(t->tr->sink, t->cpu->index, VBTS_STOP_UNSUPPORTED);
            vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                           "trace stopped at 0x%llx on vCPU %d: the instruction raises vector %u, and its "
                           "delivery faults (%s): this host (kvm_pvm) does not deliver such nested events "
                           "as the CPU does", (unsigned long long)rip, t->cpu->index, vec, why);
            return -1;
        }
    return 0;
}

