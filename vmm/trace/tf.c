/* SPDX-License-Identifier: MIT */
/*
 * The step engine on hosts that single-step with RFLAGS.TF: stock KVM on
 * VMX and SVM.  There, delivering an exception or interrupt clears TF, so
 * the handler would run with no step exits until its IRET.  The engine
 * therefore lets the CPU deliver nothing while it steps:
 *
 *  - exceptions the next instruction raises, and software interrupts, are
 *    foreseen (x86/fault.c) and delivered in software (x86/deliver.c): the
 *    vCPU then stands at the handler's first instruction, which is stepped
 *    like any other;
 *  - interrupts and NMIs are held back (KVM_GUESTDBG_BLOCKIRQ); every few
 *    steps, and whenever IF may have become 1, a probe run lets KVM accept
 *    a pending one (vcpu_probe), which is then delivered in software too;
 *  - after HLT the vCPU waits, probing, until an event comes;
 *  - TF, which the host sets in RFLAGS, is cleared where the guest could
 *    see it: what PUSHF pushed and what SYSCALL saved in R11;
 *  - an event the CPU delivered anyway (one vbts did not foresee) leaves a
 *    frame with TF set where the CPU pushes frames (x86/deliver.h): the
 *    run then stops, saying so, rather than write a trace that misses the
 *    handler.
 */
#include "trace/backend.h"

#include <string.h>
#include <sys/ioctl.h>

#include "core/vcpu.h"
#include "trace/attrib.h"
#include "trace/leap.h"
#include "trace/step.h"
#include "trace/wait.h"
#include "trace/window.h"
#include "x86/arch.h"
#include "x86/debug.h"
#include "x86/deliver.h"
#include "x86/event.h"
#include "x86/fault.h"
#include "x86/host.h"
#include "x86/rep.h"

#define PROBE_EVERY 32      /* steps between asks for a pending interrupt */
#ifndef IRQ_GAP
#define IRQ_GAP     1024    /* steps with IF=1 after an interrupt before the next one is taken */
#endif
#define STORM       1000    /* exceptions delivered in a row with no instruction completing */
#define WAIT_MIN_NS 20000   /* halted: the first wait between asks, doubling ... */
#define WAIT_MAX_NS 2000000 /* ... up to this */

/* What the CPU may raise on the way into a handler: a second exception, or a double fault. */
#define DELIVERY_FAULTS ((1u << 8) | (1u << 10) | (1u << 11) | (1u << 12) | (1u << 13) | (1u << 14))

/*
 * The order in which exception handlers get the breakpoints the debug
 * registers have room for: what fault_predict cannot decide first
 * (descriptors, encodings), what it decides from page tables and
 * operands last.
 */
static const uint8_t watch_order[] = { 13, 11, 12, 6, 10, 0, 5, 17, 16, 19, 7, 21, 4, 14, 8, 3 };
/* A delivery the monitor could not model: the stack's #PF first (eventinj: #NP onto a read-only stack). */
static const uint8_t delivery_order[] = { 14, 8, 13, 11, 12, 10 };

/* When a step may let a pending interrupt in. */
enum tf_irq {
    TF_IRQ_HOST,        /* the step engine: every PROBE_EVERY steps, and after STI, POPF, IRET */
    TF_IRQ_NOW,         /* the branch engine asks: now, if IF allows */
    TF_IRQ_HELD,        /* the branch engine steps an instruction: not now */
};

/* The record kind of an event delivered in software. */
static unsigned record_kind(enum deliver_kind k, unsigned vector, unsigned delivered)
{
    if ((k == DELIVER_TRAP || k == DELIVER_SOFT) && vector == delivered)
        return VBTS_KIND_INT;
    if (k == DELIVER_INTERRUPT || k == DELIVER_NMI)
        return VBTS_KIND_INTERRUPT;
    return VBTS_KIND_EXCEPTION;
}

/* Deliver now and record it: the vCPU then stands at the handler's first instruction. */
static int deliver(struct trace_vcpu *t, const struct delivery *d)
{
    int cpl = cpu_cpl(&t->cpu->run->s.regs.sregs);
    uint64_t from, to;
    unsigned vector;
    if (event_deliver(t->cpu, d, &from, &to, &vector) < 0)
        return -1;
    window_emit_branch(t, from, to, record_kind(d->kind, d->vector, vector), cpl);
    t->tf.halted = false;
    return step_predict(t, false);
}

/* Does the instruction at RIP raise an exception?  Then *d delivers it. */
static bool fault_due(struct trace_vcpu *t, struct delivery *d)
{
    struct cpu_view v;
    trace_view(t, &v);
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(&v, cpu_linear_ip(v.regs, v.sregs), &in, ops, &why) < 0)
        return fault_predict(&v, NULL, NULL, d) == FAULT_YES;
    enum fault_verdict f = fault_predict(&v, &in, ops, d);
    const struct branch_pred *p = &t->pred;
    if (f == FAULT_NONE && p->kind != VBTS_KIND_UNKNOWN && p->taken && p->target_known &&
        p->kind != VBTS_KIND_IRET && p->kind != VBTS_KIND_FAR &&
        cpu_mode(v.sregs) == MODE_LONG64 && !cpu_canonical(v.sregs, p->target)) {
        /* A near branch to a non-canonical address faults on the branch. */
        *d = (struct delivery){ .kind = DELIVER_FAULT, .vector = 13, .has_error = true };
        return true;
    }
    return f == FAULT_YES;
}

/*
 * Stepped, the guest runs a thousand times slower than its clocks: a timer
 * interrupt's handler outlasts the timer's period, and taken whenever
 * pending, the next tick would come at the handler's IRET, for good.  So
 * after an interrupt the guest gets IRQ_GAP steps it could have been
 * interrupted in (IF=1) before the next is taken: a latency, as a busy
 * CPU's, never a wrong record.
 */
static bool probe_due(const struct trace_vcpu *t, enum tf_irq mode)
{
    if (t->tf.halted)
        return true;
    /* An IPI or NMI the guest sent itself comes when the CPU takes it, gap or not (eventinj). */
    bool owed = t->tf.irq_owed && t->tf.probe_soon;
    if (!(t->cpu->run->s.regs.regs.rflags & RFLAGS_IF))
        return owed;
    /* The branch engine paces them by time: a millisecond at least between two. */
    if (mode != TF_IRQ_HOST)
        return mode == TF_IRQ_NOW || owed;
    return owed || (!t->tf.irq_gap && (t->tf.probe_soon || t->tf.since_probe >= PROBE_EVERY));
}

/* Ask KVM for a pending interrupt or NMI: 1 and delivered, 0 none, -1 error. */
static int probe(struct trace_vcpu *t)
{
    struct delivery d;
    t->tf.probe_soon = false;
    t->tf.since_probe = 0;
    if (debug_let_irq(t->cpu) < 0 || vcpu_probe(t->cpu) < 0 || debug_rearm(t->cpu) < 0)
        return -1;
    int k = event_take_pending(t->cpu, &d);
    if (k == 0 && (t->cpu->run->s.regs.regs.rflags & RFLAGS_IF))
        t->tf.irq_owed = false;     /* what the guest raised has come */
    if (k <= 0)
        return k;
    if (d.kind == DELIVER_INTERRUPT || d.kind == DELIVER_NMI)
        t->tf.irq_gap = IRQ_GAP;
    return deliver(t, &d) < 0 ? -1 : 1;
}

/*
 * Whatever must happen before the instruction at RIP can run: its
 * exception, a pending interrupt, or (halted) the wait for one.
 */
static int settle_events(struct trace_vcpu *t, enum tf_irq mode)
{
    long wait_ns = WAIT_MIN_NS;
    for (unsigned faults = 0;;) {
        if (vm_ending(t->cpu->vm) || !t->stepping)
            return 0;
        struct delivery d;
        if (fault_due(t, &d)) {
            if (++faults > STORM)
                return error_fail("vCPU %d: %d exceptions in a row at 0x%llx and no instruction "
                                  "completes (the CPU would shut down)", t->cpu->index, STORM,
                                  (unsigned long long)t->pred.from);
            if (deliver(t, &d) < 0) {
                /*
                 * A delivery the monitor does not model (a gate not present,
                 * a stack it cannot write: the CPU raises a second exception
                 * on the way in): where breakpoints fire, the CPU delivers it,
                 * watched at every handler it may end at.
                 */
                if (!t->tr->watch || vm_ending(t->cpu->vm))
                    return -1;
                /*
                 * INT n from 32 up has no bit to watch its handler by: only
                 * a delivery that faults so, which ends at one of those.
                 */
                if (d.vector >= 32 && !deliver_raises(&t->cpu->vm->mem, &t->cpu->run->s.regs.regs,
                                                      &t->cpu->run->s.regs.sregs, &d))
                    return -1;
                t->tf.also_watch = (d.vector < 32 ? 1u << d.vector : 0) | DELIVERY_FAULTS;
                return 0;
            }
            continue;
        }
        if (!probe_due(t, mode))
            return 0;
        int k = probe(t);
        mode = TF_IRQ_HELD;     /* one let in is enough */
        if (k < 0)
            return -1;
        if (k > 0 || !t->tf.halted)
            continue;
        /* Halted and nothing pending yet: wait, and follow the window meanwhile. */
        wait_backoff(&wait_ns, WAIT_MAX_NS);
        if (window_poll(t) < 0)
            return -1;
    }
}

/*
 * A REP STOS or MOVS at RIP: the monitor runs the iterations it can
 * (x86/rep.c) rather than take a step exit for each.  1 if it ran some
 * (the vCPU is at a new boundary), 0 if none, -1 on error.
 */
static int rep_ahead(struct trace_vcpu *t)
{
    unsigned m = t->pred.mnemonic;
    if (!t->stepping || !t->pred_valid || !host_tdp() || gdbg_engaged(t) ||
        !(m == ZYDIS_MNEMONIC_STOSB || m == ZYDIS_MNEMONIC_STOSW || m == ZYDIS_MNEMONIC_STOSD ||
          m == ZYDIS_MNEMONIC_STOSQ || m == ZYDIS_MNEMONIC_MOVSB || m == ZYDIS_MNEMONIC_MOVSW ||
          m == ZYDIS_MNEMONIC_MOVSD || m == ZYDIS_MNEMONIC_MOVSQ))
        return 0;
    struct cpu_view v;
    trace_view(t, &v);
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    if (cpu_decode(&v, cpu_linear_ip(r, v.sregs), &in, ops, &why) < 0 ||
        !rep_run(&v, &in, ops, r))
        return 0;
    if (ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0)
        return error_fail_errno("KVM_SET_REGS");
    /* Done: the instruction completed here.  Not yet: the CPU runs the next iteration. */
    if (cpu_linear_ip(r, v.sregs) != t->pred.from)
        return step_complete(t) < 0 ? -1 : 1;
    return 1;
}

/*
 * SYSRET takes RFLAGS from R11, where SYSCALL saved the guest's (TF
 * cleared by vbts), and traps after itself by that new TF: TCG
 * (gen_eob_worker's recheck) as entry_64.S says silicon does.  Without TF
 * in R11 the vCPU would run on in user mode unstepped, interrupts held
 * back for good.  R11 gets its own value back after the step.
 */
static int sysret_keeps_tf(struct trace_vcpu *t)
{
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    if (!t->pred_valid || t->pred.mnemonic != ZYDIS_MNEMONIC_SYSRET || (r->r11 & RFLAGS_TF))
        return 0;
    r->r11 |= RFLAGS_TF;
    t->tf.r11_tf = true;
    if (ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 0;
}

/*
 * SYSCALL masks TF with the kernel's FMASK and traps by the new TF (TCG,
 * like silicon): the kernel would run unstepped up to its SYSRET.  The
 * monitor runs the SYSCALL, so the entry's first instruction is stepped.
 * 1 if it did (the vCPU is at a new boundary), 0 if not a SYSCALL, -1.
 */
static int syscall_ahead(struct trace_vcpu *t)
{
    if (!t->stepping || !t->pred_valid || t->pred.mnemonic != ZYDIS_MNEMONIC_SYSCALL)
        return 0;
    int cpl = cpu_cpl(&t->cpu->run->s.regs.sregs);
    uint64_t to;
    if (event_syscall(t->cpu, t->pred.len, &to) < 0)
        return -1;
    window_emit_branch(t, t->pred.from, to, VBTS_KIND_SYSCALL, cpl);
    struct cpu_view v;
    trace_view(t, &v);
    if (gdbg_after(t, &v, to) < 0)
        return -1;
    return step_predict(t, false) < 0 ? -1 : 1;
}

/*
 * Where breakpoints fire, the handler of every exception the instruction
 * at RIP may raise gets one, as many as DR0-3 hold: an exception no
 * foresight delivered is then caught at its handler's first instruction
 * (tf_debug_exit) instead of running it unstepped, TF cleared by its
 * delivery.  Never one at RIP (RF is not relied on); what is left
 * unwatched is found at the next exit (trace/exitcheck.h).
 */
static int arm_watch(struct trace_vcpu *t)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    uint32_t m = t->tf.also_watch;
    uint8_t order[sizeof(watch_order) + sizeof(delivery_order)];
    size_t n = 0;
    if (m)
        memcpy(order, delivery_order, n = sizeof(delivery_order));
    memcpy(order + n, watch_order, sizeof(watch_order));
    n += sizeof(watch_order);
    t->tf.also_watch = 0;
    t->tf.nwatch = 0;
    if (t->tr->watch)
        m |= fault_may_raise(&v, rip, cpu_decode(&v, rip, &in, ops, &why) < 0 ? NULL : &in, ops);
    int slots = DEBUG_MAX_BP - debug_bps_of_others(t->cpu, DEBUG_TRACE);
    t->tf.unwatched = t->tr->watch ? m : 0;
    memset(t->tf.watch_vectors, 0, sizeof(t->tf.watch_vectors));
    for (size_t i = 0; i < n && t->tr->watch; i++) {
        unsigned vec = order[i];
        uint64_t h;
        if (!(m & (1u << vec)) || cpu_idt_handler(&v, vec, &h) < 0 || h == rip)
            continue;
        int k = 0;
        while (k < t->tf.nwatch && t->tf.watch[k] != h)
            k++;
        if (k == t->tf.nwatch) {
            if (k == slots)
                continue;
            t->tf.watch[t->tf.nwatch++] = h;
        }
        t->tf.watch_vectors[k] |= 1u << vec;
        t->tf.unwatched &= ~(1u << vec);
    }
    struct debug_want w = { .step = true, .block_irq = true, .nbp = t->tf.nwatch };
    memcpy(w.bp, t->tf.watch, sizeof(t->tf.watch[0]) * (size_t)t->tf.nwatch);
    return debug_set(t->cpu, DEBUG_TRACE, &w);
}

/*
 * A handler's breakpoint fired: the instruction the step ran raised an
 * exception, and the CPU delivered it (its fault or a second one on the
 * way in) with the monitor's TF in the frame's RFLAGS image, which is
 * cleared so that the handler's IRET does not bring it back.  A fault's
 * frame returns to the instruction: the record is from it to the handler,
 * whose first instruction is stepped next.
 */
static bool tf_debug_exit(struct trace_vcpu *t, unsigned hits)
{
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    int h = 0;
    while (h < t->tf.nwatch && t->tf.watch[h] != rip)
        h++;
    /* Not a watched handler, or the step got there by a branch and was read already. */
    if (!hits || h == t->tf.nwatch || !t->pred_valid || t->pred.from == rip)
        return false;
    t->steps++;
    t->tf.nwatch = 0;
    struct deliver_before b = { .regs = &t->before_regs, .sregs = &t->before_sregs, .guest_frame = t->gd.frame,
                               .next_rip = t->before_regs.rip + t->pred.len };
    deliver_untrap(v.mem, &b);
    window_emit_branch(t, t->pred.from, rip, VBTS_KIND_EXCEPTION, t->pred.cpl);
    t->tf.halted = false;
    window_follow_context(t, v.sregs->cr3);
    if (t->stepping)
        step_predict(t, false);
    return true;
}

/*
 * Registers the monitor changed in kvm_run (the branch engine's branches
 * taken in software) go to KVM now: it keeps TF only while RIP is where
 * KVM_SET_GUEST_DEBUG finds it, and would take them at KVM_RUN, too late.
 */
static int flush_regs(struct trace_vcpu *t)
{
    struct kvm_run *run = t->cpu->run;
    if (!(run->kvm_dirty_regs & KVM_SYNC_X86_REGS))
        return 0;
    run->kvm_dirty_regs &= ~(uint64_t)KVM_SYNC_X86_REGS;
    if (ioctl(t->cpu->fd, KVM_SET_REGS, &run->s.regs.regs) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 0;
}

static int tf_arm_step(struct trace_vcpu *t, bool let_in)
{
    enum tf_irq mode = t->tr->engine == TRACE_ENGINE_STEP ? TF_IRQ_HOST : let_in ? TF_IRQ_NOW : TF_IRQ_HELD;
    if (flush_regs(t) < 0)
        return -1;
    struct kvm_run *run = t->cpu->run;
    uint32_t last = run->exit_reason;
    /* KVM still owes the instruction at RIP its completion: nothing may come between. */
    bool completing = t->owed;
    t->owed = false;
    if (completing && (last == KVM_EXIT_X86_RDMSR || last == KVM_EXIT_X86_WRMSR) && run->msr.error) {
        /* The #GP KVM injects on completion: let it queue it, and deliver it here. */
        if (probe(t) < 0)
            return -1;
        completing = false;
    }
    if (!completing) {
        int k;
        do {
            if (settle_events(t, mode) < 0 || (k = rep_ahead(t)) < 0 ||
                (!k && (k = syscall_ahead(t)) < 0))
                return -1;
            mode = TF_IRQ_HELD;
        } while (k > 0);
        /* A record on the way (an event, a REP or SYSCALL run here) may have closed the
         * window: a step armed now would leave it stepped, interrupts held, for good. */
        if (!t->stepping)
            return 0;
        if (sysret_keeps_tf(t) < 0 || arm_watch(t) < 0)
            return -1;
        t->before_regs = run->s.regs.regs;
        t->before_sregs = run->s.regs.sregs;
    }
    return debug_rearm(t->cpu);
}

static int tf_stepping(struct trace_vcpu *t, bool on, struct debug_want *w)
{
    w->block_irq = on;
    if (on == t->stepping)
        return 0;
    if (on && !t->tr->block_irq && arch_vm(t->cpu->vm)->irqchip)
        return error_fail("this host's KVM cannot hold interrupts back while it single-steps "
                          "(KVM_GUESTDBG_BLOCKIRQ, Linux 5.16 and later): their handlers would "
                          "run unseen, so vbts does not trace this guest here");
    event_soft(t->cpu, on);
    if (!on)
        return 0;
    t->tf.probe_soon = true;
    t->before_regs = t->cpu->run->s.regs.regs;
    t->before_sregs = t->cpu->run->s.regs.sregs;
    struct kvm_mp_state mp;
    if (ioctl(t->cpu->fd, KVM_GET_MP_STATE, &mp) < 0)
        return error_fail_errno("KVM_GET_MP_STATE");
    t->tf.halted = mp.mp_state == KVM_MP_STATE_HALTED;
    return 0;
}

static bool is_pushf(unsigned mnemonic)
{
    return mnemonic == ZYDIS_MNEMONIC_PUSHF || mnemonic == ZYDIS_MNEMONIC_PUSHFD ||
           mnemonic == ZYDIS_MNEMONIC_PUSHFQ;
}

/* TF is the monitor's: clear it where PUSHF, SYSCALL (and vbts for SYSRET) let the guest see it. */
static int clear_tf_leaks(struct trace_vcpu *t, unsigned mnemonic)
{
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    const struct kvm_sregs *s = &t->cpu->run->s.regs.sregs;
    bool sysret = mnemonic == ZYDIS_MNEMONIC_SYSRET && t->tf.r11_tf;
    if ((mnemonic == ZYDIS_MNEMONIC_SYSCALL && (r->r11 & RFLAGS_TF)) || sysret) {
        r->r11 &= ~(uint64_t)RFLAGS_TF;
        t->tf.r11_tf = false;
        if (ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0)
            return error_fail_errno("KVM_SET_REGS");
    }
    if (is_pushf(mnemonic)) {
        struct cpu_view v = { &t->cpu->vm->mem, r, s };
        cpu_pushed_tf(&v, false);       /* a stack gone unreadable is the guest's own #PF to come */
    }
    return 0;
}

/* What follows an instruction that completed at `rip`. */
static int after(struct trace_vcpu *t, const struct branch_pred *p, uint64_t rip)
{
    unsigned m = p->mnemonic;
    bool shadowed = t->tf.probe_next;      /* the instruction under an STI's shadow ran */
    t->tf.probe_next = m == ZYDIS_MNEMONIC_STI || p->shadow;
    if (shadowed || m == ZYDIS_MNEMONIC_POPF || m == ZYDIS_MNEMONIC_POPFD ||
        m == ZYDIS_MNEMONIC_POPFQ || p->kind == VBTS_KIND_IRET || p->irq_change)
        t->tf.probe_soon = true;           /* IF may be 1 now, or an interrupt pending (a self-IPI) */
    t->tf.irq_owed |= p->irq_change == CPU_IRQ_RAISE;
    if (m == ZYDIS_MNEMONIC_HLT && rip == p->from + p->len)
        t->tf.halted = true;
    return clear_tf_leaks(t, m);
}

static int lost(struct trace_vcpu *t, uint64_t from, uint64_t rip)
{
    return trace_desync(t, "trace lost step synchronisation: the instruction at 0x%llx was followed "
                        "by 0x%llx, which it cannot reach", (unsigned long long)from,
                        (unsigned long long)rip);
}

/*
 * deliver_seen, except over bytes the predicted instruction itself stored
 * where the vCPU is where it completes: they are its data.  It is decoded
 * only when a frame is found.
 */
static bool frame_seen(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip, struct deliver_before *b)
{
    const struct branch_pred *p = &t->pred;
    if (!deliver_seen(v->mem, b))
        return false;
    bool branch = p->kind != VBTS_KIND_UNKNOWN && p->taken;
    if (branch ? p->target_known && rip != p->target : rip != p->from + p->len)
        return true;
    struct cpu_view before = { v->mem, &t->before_regs, &t->before_sregs };
    cpu_stores(&before, p->from, &b->wrote, &b->wrote_len);
    return !b->wrote_len || deliver_seen(v->mem, b);
}

static int tf_settle(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    const struct branch_pred *p = &t->pred;
    struct deliver_before b = { .regs = &t->before_regs, .sregs = &t->before_sregs, .guest_frame = t->gd.frame,
                               .next_rip = t->before_regs.rip + p->len };
    branch_frame_flags(p, &b.fault_flags_exact, &b.trap_flags_kept);
    /*
     * A PUSHF that completed wrote the host's TF where a 32-bit frame's
     * EFLAGS goes, over what may be an old frame's return address: that
     * is its image (cleared in after()), not a delivery.
     */
    if (!(is_pushf(p->mnemonic) && rip == p->from + p->len) && frame_seen(t, v, rip, &b))
        return trace_desync(t, "trace stopped at 0x%llx: an exception came there that vbts neither "
                            "foresaw nor caught at its handler, and this host (%s) ran the handler "
                            "without single-steps (the vCPU is at 0x%llx now); the trace ends here "
                            "rather than miss it", (unsigned long long)p->from, host_kvm_name(),
                            (unsigned long long)rip);
    t->tf.since_probe++;
    if (t->tf.irq_gap && (t->before_regs.rflags & RFLAGS_IF))
        t->tf.irq_gap--;
    if (p->kind != VBTS_KIND_UNKNOWN && p->taken) {
        uint64_t target = p->target_known ? p->target : rip;
        if (rip != target)
            return lost(t, p->from, rip);
        window_emit_branch(t, p->from, target, p->kind, p->cpl);
        return after(t, p, rip);
    }
    uint64_t next = p->from + p->len;
    /* REP iterations step in place. */
    if (rip == next || rip == p->from)
        return after(t, p, rip);
    struct branch_pred s;
    if (!attrib_swallows_step(p) || !attrib_shadowed(v, next, rip, &s))
        return lost(t, p->from, rip);
    if (after(t, p, next) < 0)
        return -1;
    if (s.kind != VBTS_KIND_UNKNOWN && s.taken)
        window_emit_branch(t, s.from, rip, s.kind, s.cpl);
    return after(t, &s, rip);
}

static void tf_event(struct trace_vcpu *t, const struct event *ev)
{
    static const unsigned kind[] = {
        [EVENT_EXCEPTION] = VBTS_KIND_EXCEPTION, [EVENT_INTERRUPT] = VBTS_KIND_INTERRUPT,
        [EVENT_NMI] = VBTS_KIND_INTERRUPT, [EVENT_SOFT_INT] = VBTS_KIND_INT,
    };
    window_emit_branch(t, ev->from, ev->to, kind[ev->kind], ev->from_cpl);
    t->tf.halted = false;
    if (step_predict(t, false) < 0)
        return;
    t->before_regs = t->cpu->run->s.regs.regs;
    t->before_sregs = t->cpu->run->s.regs.sregs;
    if (debug_rearm(t->cpu) < 0)
        vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
}


/* Port I/O and MMIO: tf_arm_step reads how KVM completes them. */
static void tf_completion(struct trace_vcpu *t)
{
    (void)t;
}

/* User mode steps like any other here. */
static bool tf_user_ok(const struct trace_vcpu *t, const struct cpu_view *v, const struct branch_pred *p)
{
    (void)t;
    (void)v;
    (void)p;
    return true;
}

/*
 * Stepped: a halted vCPU (settle_events), one whose own interrupt is due
 * (a self-IPI, an NMI) or in an STI's shadow, and code whose CS base is
 * not 0: QEMU 10's nested SVM dies under a stretch's breakpoint there
 * (docs/engine.md).  IF=1 alone (probe_soon) stops none: with IF=0 no
 * probe clears it (a loop stepped whole); interrupts are paced by time. */
static bool tf_may_leap(struct trace_vcpu *t, const struct cpu_view *v)
{
    return !(t->tf.halted || (t->tf.irq_owed && t->tf.probe_soon) || t->tf.probe_next) &&
           (v->sregs->cs.base == 0 || v->sregs->cs.l);
}

const struct backend backend_tf = {
    .name = "stock KVM",
    .steps_let_in = false,
    .stepping = tf_stepping,
    .arm_step = tf_arm_step,
    .settle = tf_settle,
    .debug_exit = tf_debug_exit,
    .event = tf_event,
    .completion = tf_completion,
    .user_ok = tf_user_ok,
    .may_leap = tf_may_leap,
};
