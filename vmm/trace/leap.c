/* SPDX-License-Identifier: MIT */
/*
 * The branch engine on a vCPU.  At each stop (the vCPU stands at an
 * instruction, its registers known), the near branches there are taken in
 * software and recorded; then a stretch runs to the next branch whose
 * outcome needs the registers, under a breakpoint at its end and one on
 * each handler of an exception it may raise, with interrupts held back
 * (KVM_GUESTDBG_BLOCKIRQ).  What a stretch cannot run is single-stepped
 * by the step engine, which also lets pending interrupts in, at least
 * every LEAP_LET_IN_NS and LEAP_LET_IN_INSNS instructions while the guest
 * can take them.
 */
#include "trace/leap.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/clock.h"
#include "guest_bts/guest_bts.h"
#include "trace/attrib.h"
#include "trace/engine.h"
#include "trace/step.h"
#include "trace/stretch.h"
#include "trace/take.h"
#include "trace/backend.h"
#include "trace/window.h"
#include "x86/arch.h"
#include "x86/debug.h"
#include "x86/deliver.h"
#include "x86/kvm_x86.h"

/* Interrupts wait at most this long for a step that lets them in (a busy CPU's latency). */
#define LEAP_LET_IN_NS 1000000ull
/*
 * ...and the guest has run this many instructions since the last that it
 * could have been interrupted in (IF=1): on a slow host (the lab: a few
 * thousand records a second) a millisecond is a few branches, and a timer
 * whose handler outlasts it would take every one.  The step engine waits
 * as long (its IRQ_GAP, trace/tf.c).
 */
#define LEAP_LET_IN_INSNS 1024
/* Branches taken in software in a row before the vCPU runs again. */
#define LEAP_TAKE_MAX 64

static int lost(struct trace_vcpu *t, const char *what, uint64_t rip)
{
    return trace_desync(t, "trace lost step synchronisation: %s at 0x%llx", what, (unsigned long long)rip);
}

/* The step engine takes the instruction at RIP: one single-step, interrupts let in if due. */
static int step_one(struct trace_vcpu *t, bool let_in)
{
    t->leap.probes += let_in;
    if (let_in || t->tr->be->steps_let_in) {
        t->leap.let_in_ns = clock_monotonic_ns();
        t->leap.insns = 0;
    }
    if (t->cpu->run->s.regs.regs.rflags & RFLAGS_IF)
        t->leap.insns++;
    t->leap.armed = false;      /* the step replaces the stretches' breakpoints in KVM */
    return t->tr->be->arm_step(t, let_in);
}

/* Near branches at RIP, taken in software while they cannot fault: how many, or -1. */
static int take_branches(struct trace_vcpu *t, const struct cpu_view *v)
{
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    int n = 0;
    while (n < LEAP_TAKE_MAX && t->stepping && t->pred_valid) {
        struct branch_pred p = t->pred;
        /* A debugger's breakpoint here, or its watchpoint anywhere, fires when the CPU runs the code. */
        if (debug_others_break_at(t->cpu, DEBUG_TRACE, p.from))
            break;
        if (!take_branch(v, &p, r))
            break;
        n++;
        if (r->rflags & RFLAGS_IF)
            t->leap.insns++;
        if (p.taken)
            window_emit_branch(t, p.from, p.target, p.kind, p.cpl);
        if (step_predict(t, false) < 0)
            return -1;
    }
    /*
     * KVM takes them from kvm_run at the next KVM_RUN (sync regs): an
     * ioctl here would cost a vCPU load, as much as the exit itself.
     */
    if (n)
        t->cpu->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
    return n;
}

static bool has(const uint64_t *a, int n, uint64_t x)
{
    for (int i = 0; i < n; i++)
        if (a[i] == x)
            return true;
    return false;
}

/*
 * The stretch's breakpoints: its end and handlers, and in the slots left
 * those of earlier stretches that cannot fire on this one (not on it, not
 * at RIP), so that a loop's stretches find KVM armed already and cost no
 * KVM_SET_GUEST_DEBUG.
 */
static int arm(struct trace_vcpu *t, int slots, uint64_t rip)
{
    const struct stretch *s = &t->leap.s;
    uint64_t want[DEBUG_MAX_BP];
    int n = 0;
    for (unsigned i = 0; i < s->nleaf; i++)
        want[n++] = s->leaf[i].end;
    for (int i = 0; i < s->nh; i++)
        if (!has(want, n, s->handler[i]))
            want[n++] = s->handler[i];
    bool same = t->leap.armed;
    for (int i = 0; i < n && same; i++)
        same = has(t->leap.dr, t->leap.ndr, want[i]);
    for (int i = 0; i < t->leap.ndr && same; i++)
        same = t->leap.dr[i] != rip && stretch_index(s, t->leap.dr[i]) < 0;
    if (same)
        return 0;
    for (int i = 0; i < t->leap.ndr && n < slots; i++)
        if (!has(want, n, t->leap.dr[i]) && t->leap.dr[i] != rip && stretch_index(s, t->leap.dr[i]) < 0)
            want[n++] = t->leap.dr[i];
    struct debug_want w = { .exclusive = true, .block_irq = arch_vm(t->cpu->vm)->irqchip, .nbp = n };
    memcpy(w.bp, want, sizeof(want[0]) * (size_t)n);
    memcpy(t->leap.dr, want, sizeof(want));
    t->leap.ndr = n;
    t->leap.armed = true;
    return debug_set(t->cpu, DEBUG_TRACE, &w);
}

/* What KVM writes into guest memory at entries, as stores a stretch's reads must not see. */
static int host_writes(struct trace_vcpu *t)
{
    struct kvm_x86_area a[KVM_X86_MAX_AREAS];
    int n = kvm_x86_host_writes(t->cpu, a, KVM_X86_MAX_AREAS);
    if (n < 0)
        return -1;
    t->leap.host = (struct stores){ 0 };
    for (int i = 0; i < n; i++)
        if (!stores_add(&t->leap.host, a[i].gpa, a[i].len))
            return -1;
    t->leap.host_known = true;
    return 0;
}

/*
 * A plan from `rip` computed a loop's rounds until it ran out of room, and
 * kept its first round: the next ones from there will too, so they do not
 * try, for twice as many plans each time it happens again.
 */
static void long_loops(struct trace_vcpu *t, uint64_t rip, bool skipped)
{
    struct leap_state *l = &t->leap;
    if (skipped) {
        l->long_skip--;
    } else if (l->s.ran_out) {
        l->long_backoff = rip != l->long_from ? 16 : l->long_backoff < 4096 ? 2 * l->long_backoff : 4096;
        l->long_from = rip;
        l->long_skip = l->long_backoff;
    } else if (rip == l->long_from) {
        l->long_backoff = 0;
    }
}

static bool let_in_due(const struct trace_vcpu *t, const struct cpu_view *v)
{
    return arch_vm(t->cpu->vm)->irqchip && (v->regs->rflags & RFLAGS_IF) &&
           t->leap.insns >= LEAP_LET_IN_INSNS && clock_monotonic_ns() - t->leap.let_in_ns >= LEAP_LET_IN_NS;
}

int leap_before_run(struct trace_vcpu *t)
{
    if (t->leap.flight)
        return 0;       /* the stretch in flight was interrupted by another exit */
    struct cpu_view v;
    trace_view(t, &v);
    int others = debug_bps_of_others(t->cpu, DEBUG_TRACE);
    bool free = t->pred_valid && !t->passing &&
                !guest_bts_on(t->tr->gbts, t->cpu) && !gdbg_engaged(t) && others < DEBUG_MAX_BP - 1 &&
                t->tr->be->may_leap(t, &v);
    if (free && take_branches(t, &v) < 0)
        return -1;
    if (!t->stepping)
        return 0;       /* a record closed the window: the vCPU runs on untraced */
    const struct trace_config *c = t->tr->cfg;
    bool stop = t->tracing && c->have_stop;
    if (let_in_due(t, &v))
        return step_one(t, true);
    /* Another vCPU could change a target the stretch read from memory, unseen. */
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    bool skip = t->leap.long_skip && rip == t->leap.long_from;
    const struct stretch_opts o = { DEBUG_MAX_BP - 1 - others, stop ? &c->stop : NULL, t->cpu->vm->ncpus == 1,
                                    &t->leap.host, true, true, skip };
    if (o.alone && !t->leap.host_known && host_writes(t) < 0)
        return -1;
    if (!free || !t->pred_valid || t->pred.kind != VBTS_KIND_UNKNOWN || !stretch_plan(&v, &o, &t->leap.s))
        return step_one(t, false);
    long_loops(t, rip, skip);
    t->leap.flight = true;
    return arm(t, DEBUG_MAX_BP - others, cpu_linear_ip(v.regs, v.sregs));
}

/* The records of what ran before instruction i of the stretch on the way to `leaf` (i == nins: all of it). */
static void emit_before(struct trace_vcpu *t, unsigned i, int leaf)
{
    const struct stretch *s = &t->leap.s;
    unsigned common = i < s->nprefix ? s->recs_before[i] : s->nprefix_rec;
    for (unsigned k = 0; k < common; k++)
        window_emit_branch(t, s->rec[k].from, s->rec[k].to, s->rec[k].kind, s->cpl);
    if (leaf < 0)
        return;
    const struct stretch_leaf *l = &s->leaf[leaf];
    for (unsigned g = 0; g < l->nseg; g++) {
        bool in = i >= l->seg[g].first && i < l->seg[g].last;
        unsigned upto = in ? s->recs_before[i] : l->seg[g].rec_last;
        for (unsigned k = l->seg[g].rec_first; k < upto && k < s->nrec; k++)
            window_emit_branch(t, s->rec[k].from, s->rec[k].to, s->rec[k].kind, s->cpl);
        if (in)
            return;
    }
}

/* A loop run whole: `done` rounds, then the next one's records up to `upto`. */
static void emit_rounds(struct trace_vcpu *t, uint64_t done, unsigned upto)
{
    const struct stretch *s = &t->leap.s;
    for (uint64_t k = 0; k <= done; k++)
        for (unsigned i = 0; i < (k < done ? s->nrec : upto); i++)
            window_emit_branch(t, s->rec[i].from, s->rec[i].to, s->rec[i].kind, s->cpl);
}

/* The loop's counter in r, as wide as the loop counts it. */
static uint64_t counter(const struct stretch *s, const struct kvm_regs *r)
{
    uint64_t now = 0;
    cpu_register(r, (ZydisRegister)s->counter, &now);
    return s->counter_bits == 32 ? (uint32_t)now : now;
}

/* How many rounds of the loop in flight are behind the vCPU, at instruction i (its counter says). */
static uint64_t rounds_done(const struct trace_vcpu *t, unsigned i)
{
    const struct stretch *s = &t->leap.s;
    uint64_t done = s->rounds - counter(s, &t->cpu->run->s.regs.regs) - (i > s->counted);
    return done < s->rounds ? done : s->rounds - 1;
}

/* The records of what ran before instruction i, on whichever path it lies. */
static void emit_upto(struct trace_vcpu *t, unsigned i)
{
    if (t->leap.s.rounds)
        emit_rounds(t, rounds_done(t, i), t->leap.s.recs_before[i]);
    else
        emit_before(t, i, stretch_path_of(&t->leap.s, i));
}

/*
 * An exception of the stretch reached handler h: the frame's return
 * address is the instruction that raised it, which lies on the stretch
 * (a fault returns to its instruction).  Its vector, where the handler
 * serves several, is the one whose frame layout puts such an address there.
 */
static int exception(struct trace_vcpu *t, const struct cpu_view *v, int h)
{
    const struct stretch *s = &t->leap.s;
    unsigned w = cpu_mode(v->sregs) == MODE_LONG64 ? 8 : 4;
    uint64_t sp = cpu_stack_base(v->sregs) + v->regs->rsp;
    int idx = -1, vector = -1;
    for (unsigned vec = 0; vec < 32; vec++) {
        uint64_t ip = 0;
        if (!(s->vectors[h] & (1u << vec)) ||
            cpu_read_linear(v, sp + (deliver_has_error_code(vec) ? w : 0), &ip, w) < 0)
            continue;
        int i = stretch_index(s, s->cs_base + ip);
        if (i >= 0 && idx >= 0 && i != idx)
            return lost(t, "an exception's frame fits two instructions of the stretch", s->handler[h]);
        if (i >= 0) {
            idx = i;
            vector = (int)vec;
        }
    }
    if (idx < 0)
        return lost(t, "an exception's handler was reached from outside the stretch", s->handler[h]);
    /* The stretch keeps its mode and privilege: the state before it judges the instruction. */
    struct kvm_regs br = t->before_regs;
    struct kvm_sregs bs = t->before_sregs;
    const struct cpu_view before = { v->mem, &br, &bs };
    if (!attrib_may_raise(&before, s->ins[idx], vector))
        return trace_desync(t, "trace stopped at 0x%llx: the host delivered vector %d there, which that "
                            "instruction cannot raise (the vCPU is at 0x%llx)",
                            (unsigned long long)s->ins[idx], vector, (unsigned long long)s->handler[h]);
    emit_upto(t, (unsigned)idx);
    window_emit_branch(t, s->ins[idx], s->handler[h], attrib_kind(VBTS_KIND_EXCEPTION, vector),
                       s->cpl);
    return 0;
}

/*
 * True if a general register at the leaf is not what its path's
 * evaluation left (where it knows; outside 64-bit mode, the low half).
 */
static bool regs_differ(const struct cpu_view *v, const struct stretch_leaf *l)
{
    struct eval_regs now;
    eval_init(&now, v->regs);
    uint64_t m = cpu_mode(v->sregs) == MODE_LONG64 ? ~0ull : 0xffffffffull;
    for (unsigned i = 0; i < 16; i++)
        if ((l->regs_known & (1u << i)) && ((now.gpr[i] ^ l->gpr[i]) & m))
            return true;
    return false;
}

/* False if RSP at the leaf is not what its path's instructions leave (where they say). */
static bool sp_moved(const struct trace_vcpu *t, const struct cpu_view *v, const struct stretch_leaf *l)
{
    uint64_t want = t->before_regs.rsp + (uint64_t)l->sp_delta;
    if (!l->sp_exact)
        return true;
    return cpu_stack_width(v->sregs) == 64 ? v->regs->rsp == want : (uint32_t)v->regs->rsp == (uint32_t)want;
}

static unsigned path_length(const struct stretch_leaf *l, unsigned n)
{
    for (unsigned g = 0; g < l->nseg; g++)
        n += l->seg[g].last - l->seg[g].first;
    return n;
}

enum vcpu_verdict leap_on_debug(struct trace_vcpu *t, unsigned hits)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    t->leap.flight = false;
    t->leap.stops++;
    int r;
    int h = 0;
    while (h < t->leap.s.nh && t->leap.s.handler[h] != rip)
        h++;
    /* Slots may hold earlier stretches' breakpoints: the address says whose. */
    const struct stretch *s = &t->leap.s;
    int leaf = stretch_leaf_at(s, rip);
    if (hits && leaf >= 0 && !sp_moved(t, &v, &s->leaf[leaf])) {
        r = lost(t, "the stack pointer is not where the stretch leaves it (an event nobody watched, "
                 "a double fault?)", rip);
    } else if (hits && leaf >= 0 && regs_differ(&v, &s->leaf[leaf])) {
        r = lost(t, "a register is not what the stretch's instructions leave it", rip);
    } else if (hits && leaf >= 0 && s->rounds && counter(s, v.regs) != 0) {     /* a loop ends at 0 */
        r = lost(t, "a loop's counter is not where its rounds leave it", rip);
    } else if (hits && leaf >= 0) {
        const struct stretch_leaf *l = &s->leaf[leaf];
        t->leap.ends[l->why]++;
        if (s->rounds)
            emit_rounds(t, s->rounds - 1, s->nprefix_rec);
        else
            emit_before(t, s->nins, leaf);
        if (v.regs->rflags & RFLAGS_IF)     /* a stretch never changes IF */
            t->leap.insns += s->rounds ? s->rounds * s->nins : path_length(l, s->nprefix);
        r = 0;
    } else if (hits && h < t->leap.s.nh) {
        t->leap.caught++;
        r = exception(t, &v, h);
    } else if (hits) {
        r = lost(t, "a breakpoint not the stretch's", rip);
    } else {
        r = lost(t, "a single-step exit in a stretch", rip);
    }
    if (r == 0 && t->stepping)
        step_predict(t, false);
    return VCPU_EXIT_DONE;
}

/*
 * Where on the stretch the vCPU stands at `at`: an instruction of a loop
 * it ran through is there more than once, and the registers say which
 * time.  -1: not on it; -2: not known which time.
 */
static int position(struct trace_vcpu *t, uint64_t at)
{
    const struct stretch *s = &t->leap.s;
    int i = stretch_index(s, at), found = -1;
    if (i < 0 || !s->loops)
        return i;
    struct cpu_view v;
    trace_view(t, &v);
    struct eval_regs now;
    eval_init(&now, v.regs);
    bool long64 = cpu_mode(v.sregs) == MODE_LONG64, again = false;
    for (unsigned k = (unsigned)i + 1; k < s->nins && !again; k++)
        again = s->ins[k] == at;
    if (!again)
        return i;
    for (unsigned k = (unsigned)i; k < s->nins; k++) {
        if (s->ins[k] != at || stretch_key(now.gpr, s->known[k], long64) != s->key[k])
            continue;
        if (found >= 0)
            return -2;
        found = (int)k;
    }
    return found >= 0 ? found : -2;
}

void leap_flush_at(struct trace_vcpu *t, uint64_t at)
{
    if (!t->leap.flight)
        return;
    int i = position(t, at);
    t->leap.flight = false;
    if (i >= 0)
        emit_upto(t, (unsigned)i);
    else if (i == -2)
        lost(t, "the stretch ran through a loop, and its registers do not say which round it stopped in", at);
}

int leap_pause(struct trace_vcpu *t)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    if (t->leap.flight && stretch_index(&t->leap.s, rip) < 0)
        return trace_desync(t, "trace incomplete: vCPU %d stopped at 0x%llx, where the stretch it ran "
                            "from 0x%llx to 0x%llx does not go", t->cpu->index, (unsigned long long)rip,
                            (unsigned long long)t->leap.s.ins[0], (unsigned long long)t->leap.s.end);
    leap_flush_at(t, rip);
    return 0;
}

void leap_flush(struct trace_vcpu *t)
{
    t->leap.host_known = false;     /* untraced, the guest may move them */
    struct cpu_view v;
    trace_view(t, &v);
    leap_flush_at(t, cpu_linear_ip(v.regs, v.sregs));
}
