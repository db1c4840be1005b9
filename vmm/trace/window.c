/* SPDX-License-Identifier: MIT */
/*
 * The trace window and what goes into it: the start and stop triggers, the
 * branch limit over all vCPUs, the CPL and CR3 filters, context-switch
 * markers, and --verify-flow's independent check of every record.
 * Records go to two consumers: vbts's own trace (every branch, with its
 * kind) and the guest's DS buffer (guest_bts/, while its DEBUGCTL enables
 * BTS).
 */
#include "trace/window.h"
#include "trace/gdbg.h"

#include "trace/catch.h"
#include "trace/engine.h"
#include "trace/leap.h"
#include "trace/step.h"

#include "core/clock.h"
#include "export/sink.h"
#include "guest_bts/guest_bts.h"

#define CR3_ADDR_MASK  0x000ffffffffff000ull
/* Straight-line code longer than this between two records is a violation. */
#define FLOW_MAX_INSNS (1u << 20)

/*
 * --verify-flow: from the previous record's `to`, straight-line execution
 * (non-branches and conditional branches not taken) must reach `from`.
 * An independent check of the engine, by re-decoding guest memory.
 */
static void check_flow(struct trace_vcpu *t, uint64_t from)
{
    struct trace_config *c = t->tr->cfg;
    if (!t->flow_valid)
        return;
    struct cpu_view v;
    trace_view(t, &v);
    v.sregs = &t->flow_sregs;   /* the mode the straight-line code ran in */
    atomic_fetch_add(&c->flow_checked, 1);
    if (!branch_straight_line(&v, t->flow_to, from, FLOW_MAX_INSNS))
        atomic_fetch_add(&c->flow_violations, 1);
}

static void flow_resume(struct trace_vcpu *t, uint64_t at)
{
    if (!t->tr->cfg->verify_flow)
        return;
    t->flow_to = at;
    t->flow_sregs = t->cpu->run->s.regs.sregs;
    t->flow_valid = true;
}

bool window_passes(const struct trace_config *c, int cpl, uint64_t cr3)
{
    if ((c->cpl == TRACE_CPL_KERNEL && cpl != 0) || (c->cpl == TRACE_CPL_USER && cpl == 0))
        return false;
    if (c->cr3_start) {
        uint64_t at = atomic_load_explicit(&c->start_cr3, memory_order_acquire);
        if (!at || (cr3 & CR3_ADDR_MASK) != (at & CR3_ADDR_MASK))
            return false;
    } else if (c->have_cr3 && (cr3 & CR3_ADDR_MASK) != (c->cr3 & CR3_ADDR_MASK)) {
        return false;
    }
    return true;
}

void window_emit_branch(struct trace_vcpu *t, uint64_t from, uint64_t to, unsigned kind, int cpl)
{
    struct vbts_record r = { from, to, (uint64_t)kind << VBTS_KIND_SHIFT };
    if (kind == VBTS_KIND_EXCEPTION || kind == VBTS_KIND_INTERRUPT || kind == VBTS_KIND_INT)
        t->events++;
    if (t->tracing && window_passes(t->tr->cfg, cpl, t->cr3)) {
        struct trace_config *c = t->tr->cfg;
        /* The limit is over all vCPUs: exactly max_branches records get out. */
        uint64_t n = atomic_fetch_add(&c->emitted, 1);
        if (c->max_branches && n >= c->max_branches) {
            window_close(t);
        } else {
            if (c->verify_flow)
                check_flow(t, from);
            sink_emit(t->tr->sink, t->cpu->index, r);
            flow_resume(t, to);
            if (c->max_branches && n + 1 == c->max_branches)
                window_close(t);
        }
    }
    if (guest_bts_on(t->tr->gbts, t->cpu))
        guest_bts_store(t->tr->gbts, t->cpu, &r, cpl);
    if (t->recording)
        t->tr->on_record(t->tr->record_ctx, t->cpu->index, from, to);
}

/* Context-switch separation: a CR3 change is a departure and an arrival. */
void window_follow_context(struct trace_vcpu *t, uint64_t cr3)
{
    if (cr3 == t->cr3 || !t->tracing)
        return;
    uint64_t dt = clock_monotonic_ns() - t->start_ns;
    sink_emit(t->tr->sink, t->cpu->index, vbts_marker(VBTS_MARK_CTX_DEPART, t->cr3, dt));
    sink_emit(t->tr->sink, t->cpu->index, vbts_marker(VBTS_MARK_CTX_ARRIVE, cr3, dt));
    t->cr3 = cr3;
}

/* Enter the window: START, the context we arrive in, and stepping. */
int window_enter(struct trace_vcpu *t, bool regs_synced)
{
    bool waited = t->bp_armed;
    t->tracing = true;
    t->bp_armed = false;
    if (catch_window_open(t) < 0)
        return -1;
    if (step_update(t) < 0 || (!regs_synced && step_sync_regs(t) < 0))
        return -1;
    if (waited && gdbg_after_wait(t) < 0)
        return -1;
    t->start_ns = clock_monotonic_ns();
    t->pvm.event_vector = -1;
    sink_emit_start(t->tr->sink, t->cpu->index);
    t->cr3 = t->cpu->run->s.regs.sregs.cr3;
    sink_emit(t->tr->sink, t->cpu->index, vbts_marker(VBTS_MARK_CTX_ARRIVE, t->cr3, 0));
    struct cpu_view v;
    trace_view(t, &v);
    flow_resume(t, cpu_linear_ip(v.regs, v.sregs));
    t->pred_valid = false;
    return step_predict(t, false);
}

/* INIT and SIPI put the vCPU elsewhere, no branch taken: straight-line code starts afresh there. */
int window_restart(struct trace_vcpu *t)
{
    if (step_sync_regs(t) < 0)
        return -1;
    struct cpu_view v;
    trace_view(t, &v);
    if (t->tracing)
        flow_resume(t, cpu_linear_ip(v.regs, v.sregs));
    t->pvm.event_vector = -1;
    t->pred_valid = false;
    return step_predict(t, false);
}

/* This vCPU stands at the start trigger, which has not run: the window opens for all. */
int window_open_here(struct trace_vcpu *t)
{
    struct trace_config *c = t->tr->cfg;
    /* --cr3 start: the context of a vCPU at the trigger, set before any vCPU records. */
    uint64_t none = 0;
    atomic_compare_exchange_strong(&c->start_cr3, &none,
                                   (t->cpu->run->s.regs.sregs.cr3 & CR3_ADDR_MASK) | 1);
    int waiting = WINDOW_WAITING;
    if (atomic_compare_exchange_strong(&c->window, &waiting, WINDOW_OPEN))
        vm_kick_others(t->cpu->vm);
    return window_enter(t, true);
}

void window_leave(struct trace_vcpu *t, enum vbts_stop_reason why)
{
    leap_flush(t);
    if (!t->tracing)
        return;
    t->tracing = false;
    t->flow_valid = false;
    sink_stop(t->tr->sink, t->cpu->index, why);
    if (step_update(t) < 0)
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
}

void window_finish(struct trace_vcpu *t, enum vbts_stop_reason why)
{
    leap_flush(t);
    if (!t->tracing)
        return;     /* never entered the window, or already left it */
    t->tracing = false;
    sink_stop(t->tr->sink, t->cpu->index, why);
}

/* The window ends for every vCPU: a limit or the stop trigger was reached. */
void window_close(struct trace_vcpu *t)
{
    struct trace_config *c = t->tr->cfg;
    int open = WINDOW_OPEN;
    if (atomic_compare_exchange_strong(&c->window, &open, WINDOW_CLOSED)) {
        if (c->stop_after)
            vm_request_end(t->cpu->vm, VM_END_TRACE_DONE, VBTS_EXIT_OK, "trace window closed");
        else
            vm_kick_others(t->cpu->vm);
    }
    window_leave(t, VBTS_STOP_LIMIT);
}

/* Before each KVM_RUN: follow the window opened or closed by another vCPU. */
int window_poll(struct trace_vcpu *t)
{
    if (!t->tr->sink || sink_stopped(t->tr->sink, t->cpu->index))
        return 0;
    int w = atomic_load_explicit(&t->tr->cfg->window, memory_order_relaxed);
    if (w == WINDOW_OPEN && !t->tracing)
        return window_enter(t, false);
    if (w == WINDOW_CLOSED && t->tracing)
        window_leave(t, VBTS_STOP_LIMIT);
    return 0;
}
