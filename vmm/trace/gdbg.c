/* SPDX-License-Identifier: MIT */
/*
 * The guest's own debugging while vbts steps it (gdbg.h).  Every
 * instruction is decoded before its step anyway: what its accesses touch
 * and what it does to TF and RF is known there, and the #DB the CPU would
 * raise is delivered in software (x86/deliver.c), on every host alike.
 */
#include "trace/gdbg.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>

#include "export/sink.h"
#include "guest_bts/guest_bts.h"
#include "trace/backend.h"
#include "trace/engine.h"
#include "trace/window.h"
#include "x86/cpu.h"
#include "x86/deliver.h"
#include "x86/event.h"

#define DR6_BD      (1u << 13)
#define DR6_BS      (1u << 14)
#define DR7_GD      (1u << 13)
#define DR7_ENABLES 0xffu
/* #DB faults delivered in a row with no instruction between (a handler whose first instruction is a breakpoint) */
#define NESTED_MAX  64

static unsigned bp_len(uint64_t dr7, int n)
{
    static const unsigned len[4] = { 1, 2, 8, 4 };
    return len[(dr7 >> (18 + 4 * n)) & 3];
}

static unsigned bp_rw(uint64_t dr7, int n)
{
    return (dr7 >> (16 + 4 * n)) & 3;
}

unsigned gdbg_exec_hits(const uint64_t dr[4], uint64_t dr7, uint64_t lin)
{
    unsigned hits = 0;
    for (int n = 0; n < 4; n++)
        if ((dr7 >> (2 * n)) & 3 && bp_rw(dr7, n) == 0 && dr[n] == lin)
            hits |= 1u << n;
    return hits;
}

unsigned gdbg_data_hits(const uint64_t dr[4], uint64_t dr7, uint64_t lin, uint64_t len, bool write)
{
    unsigned hits = 0;
    for (int n = 0; n < 4; n++) {
        unsigned rw = bp_rw(dr7, n);
        if (!((dr7 >> (2 * n)) & 3) || !(rw == 3 || (rw == 1 && write)))
            continue;
        uint64_t size = bp_len(dr7, n), lo = dr[n] & ~(size - 1);
        if (lin < lo + size && lo < lin + len)
            hits |= 1u << n;
    }
    return hits;
}

bool gdbg_engaged(const struct trace_vcpu *t)
{
    const struct gdbg_state *g = &t->gd;
    return g->tf || g->held || g->held_bs || (g->dr7 & (DR7_ENABLES | DR7_GD));
}

/* The trace stops before the instruction at RIP, in one line: status 125. */
static int unsupported(struct trace_vcpu *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int unsupported(struct trace_vcpu *t, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (t->tr->sink)
        sink_stop(t->tr->sink, t->cpu->index, VBTS_STOP_UNSUPPORTED);
    vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "trace stopped at 0x%llx on vCPU %d: %s",
                   (unsigned long long)t->pred.from, t->cpu->index, why);
    return -1;
}

static int get_debugregs(struct trace_vcpu *t)
{
    struct kvm_debugregs d;
    if (ioctl(t->cpu->fd, KVM_GET_DEBUGREGS, &d) < 0)
        return error_fail_errno("KVM_GET_DEBUGREGS");
    for (int n = 0; n < 4; n++)
        t->gd.dr[n] = d.db[n];
    t->gd.dr6 = d.dr6;
    t->gd.dr7 = d.dr7;
    return debug_hide_guest(t->cpu, (d.dr7 & DR7_ENABLES) != 0);
}

static int set_debugregs(struct trace_vcpu *t)
{
    struct kvm_debugregs d = { .dr6 = t->gd.dr6, .dr7 = t->gd.dr7 };
    for (int n = 0; n < 4; n++)
        d.db[n] = t->gd.dr[n];
    if (ioctl(t->cpu->fd, KVM_SET_DEBUGREGS, &d) < 0)
        return error_fail_errno("KVM_SET_DEBUGREGS");
    return 0;
}

int gdbg_start(struct trace_vcpu *t)
{
    struct gdbg_state *g = &t->gd;
    *g = (struct gdbg_state){ .tf = (t->cpu->run->s.regs.regs.rflags & RFLAGS_TF) != 0, .events = t->events };
    return get_debugregs(t);
}

/* The guest's TF back in the CPU's RFLAGS, its DR7 back in the CPU. */
static int give_back(struct trace_vcpu *t)
{
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    bool tf = t->gd.tf;
    t->gd = (struct gdbg_state){ .events = t->events };
    if (debug_hide_guest(t->cpu, false) < 0)
        return -1;
    if (!tf)
        return 0;
    r->rflags |= RFLAGS_TF;
    if (ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 0;
}

int gdbg_end(struct trace_vcpu *t)
{
    /* An instruction whose step is being read: its TF, its trap, then (gdbg_after). */
    if (t->gd.ready)
        return 0;
    return give_back(t);
}

int gdbg_after_wait(struct trace_vcpu *t)
{
    if (!(t->gd.dr7 & DR7_ENABLES))
        return 0;
    /* Before any prediction: the stop names the RIP the window opens at. */
    t->pred.from = cpu_linear_ip(&t->cpu->run->s.regs.regs, &t->cpu->run->s.regs.sregs);
    return unsupported(t, "the guest armed breakpoints of its own while --trace-start waited in the debug "
                       "registers, where KVM did not fire them (VBTS_START_TRIGGER=page leaves them to the "
                       "guest)");
}

/* #DB now, at RIP, DR6's B0-3 and BD/BS from bits: 1, or -1 when the trace stops. */
static int raise_db(struct trace_vcpu *t, unsigned bits)
{
    struct gdbg_state *g = &t->gd;
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    g->dr6 = (g->dr6 & ~0xfull) | bits;
    if (set_debugregs(t) < 0)
        return unsupported(t, "%s", error_last());
    /* The frame's RFLAGS image holds the guest's TF; the delivery clears it. */
    if (g->tf)
        r->rflags |= RFLAGS_TF;
    int cpl = cpu_cpl(&t->cpu->run->s.regs.sregs);
    struct delivery d = { .kind = DELIVER_FAULT, .vector = 1 };
    uint64_t from, to;
    unsigned vector;
    if (event_deliver(t->cpu, &d, &from, &to, &vector) < 0) {
        r->rflags &= ~(uint64_t)RFLAGS_TF;
        return unsupported(t, "the guest's own #DB cannot be delivered: %s", error_last());
    }
    if (g->tf) {
        const struct kvm_sregs *s = &t->cpu->run->s.regs.sregs;
        g->frame = cpu_stack_top(r, s);
    }
    g->tf = g->rf = false;
    g->ready = false;
    window_emit_branch(t, from, to, VBTS_KIND_EXCEPTION, cpl);
    g->events = t->events;
    return 1;
}

static int write_byte(const struct cpu_view *v, uint64_t lin, uint8_t b)
{
    struct gmem_paging pg;
    uint64_t fault;
    cpu_paging(v->sregs, &pg);
    return gmem_write_linear(v->mem, &pg, lin, &b, 1, &fault) == GMEM_OK ? 0 : -1;
}

static unsigned slot_width(const struct cpu_view *v)
{
    enum cpu_mode m = cpu_mode(v->sregs);
    return m == MODE_LONG64 ? 8 : m == MODE_REAL16 ? 2 : 4;
}

/*
 * An event came while the guest's TF was set: the frame the handler got
 * shows RFLAGS as the event found it, TF included.  The frame is the one
 * at RSP that returns to the instruction the event came at (or after it),
 * with or without an error code: exactly one must fit.
 */
static int frame_tf(struct trace_vcpu *t, const struct cpu_view *v)
{
    const struct gdbg_state *g = &t->gd;
    unsigned w = slot_width(v);
    uint64_t sp = cpu_stack_top(v->regs, v->sregs), at = 0;
    int found = 0;
    for (unsigned k = 0; k < 2; k++) {
        uint64_t ip = 0, cs = 0, fl = 0, base;
        if (cpu_read_linear(v, sp + k * w, &ip, w) < 0 || cpu_read_linear(v, sp + (k + 1) * w, &cs, w) < 0 ||
            cpu_read_linear(v, sp + (k + 2) * w, &fl, w) < 0 || (uint16_t)cs != g->cs || !(fl & 2))
            continue;
        if (w == 2)
            base = (cs & 0xffff) << 4;
        else if (cpu_selector_base(v, (uint16_t)cs, &base) < 0)
            continue;
        if (base + ip == g->at || base + ip == g->at + g->len) {
            found++;
            at = sp + (k + 2) * w + 1;
            t->gd.frame = sp + k * w;
        }
    }
    uint8_t b;
    if (found != 1 || cpu_read_linear(v, at, &b, 1) < 0 || write_byte(v, at, b | 1) < 0)
        return unsupported(t, "an event came while the guest's own single-step was on, and vbts %s the "
                           "frame it pushed (to show TF there)", found > 1 ? "cannot tell which is" :
                           "does not find");
    return 0;
}

/*
 * The stack an IRET reads: RIP, CS, RFLAGS and, in 64-bit mode or to
 * another privilege, RSP and SS (Zydis names all five slots).
 */
static uint64_t iret_reads(const struct cpu_view *v, const ZydisDecodedInstruction *in)
{
    uint64_t w = in->operand_width / 8, cs = 0;
    if (cpu_mode(v->sregs) == MODE_LONG64)
        return 5 * w;
    uint64_t sp = cpu_stack_top(v->regs, v->sregs);
    if (cpu_read_linear(v, (uint32_t)(sp + w), &cs, 2) < 0 || (cs & 3) != (uint64_t)cpu_cpl(v->sregs))
        return 5 * w;
    return 3 * w;
}

/* What the accesses of the instruction at lin, with v's registers, hit of the guest's data breakpoints. */
static unsigned access_hits(const struct trace_vcpu *t, const struct cpu_view *v, uint64_t lin)
{
    const struct gdbg_state *g = &t->gd;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    unsigned hits = 0;
    if (cpu_decode(v, lin, &in, ops, &why) < 0)
        return 0;
    bool iret = in.mnemonic == ZYDIS_MNEMONIC_IRET || in.mnemonic == ZYDIS_MNEMONIC_IRETD ||
                in.mnemonic == ZYDIS_MNEMONIC_IRETQ;
    for (unsigned i = 0; i < in.operand_count; i++) {
        uint64_t ea, n = ops[i].size / 8;
        if (ops[i].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[i].mem.type != ZYDIS_MEMOP_TYPE_MEM ||
            cpu_operand_address(v, &in, &ops[i], &ea) < 0)
            continue;
        bool wr = ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE;
        bool rd = ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_READ;
        /* The stack's hidden operand names RSP: a push stores below it. */
        if (cpu_store_below_sp(&ops[i]) && wr)
            ea -= n;
        if (iret && cpu_store_below_sp(&ops[i]))
            n = iret_reads(v, &in);
        if (wr)
            hits |= gdbg_data_hits(g->dr, g->dr7, ea, n, true);
        if (rd)
            hits |= gdbg_data_hits(g->dr, g->dr7, ea, n, false);
    }
    return hits;
}

static bool is_pushf(unsigned m)
{
    return m == ZYDIS_MNEMONIC_PUSHF || m == ZYDIS_MNEMONIC_PUSHFD || m == ZYDIS_MNEMONIC_PUSHFQ;
}

int gdbg_before(struct trace_vcpu *t, const struct cpu_view *v)
{
    struct gdbg_state *g = &t->gd;
    const struct branch_pred *p = &t->pred;
    if (t->events != g->events) {
        g->events = t->events;
        if (g->tf && frame_tf(t, v) < 0)
            return -1;
        g->tf = g->rf = g->held_bs = false;
        g->held = 0;
    }
    g->ready = false;
    /* An IRET into user mode where user mode is stepped by TF: the image's TF is the monitor's (ustep.c). */
    g->monitors_tf = p->kind == VBTS_KIND_IRET && p->to_user && t->tr->be->user_by_tf;
    bool arms = p->dr_write || (p->loads_flags && (p->flags_image & RFLAGS_TF) && !g->monitors_tf);
    if (!gdbg_engaged(t) && !arms)
        return 0;
    unsigned m = p->mnemonic;
    if ((p->cpl == 3 || p->to_user) && t->tr->be->user_by_tf)
        return unsupported(t, "the guest's own single-step or breakpoints in user mode, where this host "
                           "(%s) is stepped through the guest's TF itself", t->tr->be->name);
    if (g->tf && (m == ZYDIS_MNEMONIC_SYSENTER || m == ZYDIS_MNEMONIC_SYSEXIT || m == ZYDIS_MNEMONIC_HLT))
        return unsupported(t, "the guest's own single-step across %s is not modelled",
                           m == ZYDIS_MNEMONIC_SYSENTER ? "SYSENTER" : m == ZYDIS_MNEMONIC_SYSEXIT ? "SYSEXIT" :
                           "HLT");
    if ((p->dr >= 0 && (g->dr7 & DR7_GD)) || (!g->rf && gdbg_exec_hits(g->dr, g->dr7, p->from))) {
        if (++g->nested > NESTED_MAX)
            return unsupported(t, "%d #DB faults in a row and no instruction runs (the CPU would "
                               "overflow its stack)", NESTED_MAX);
        if (p->dr >= 0 && (g->dr7 & DR7_GD)) {
            g->dr7 &= ~(uint64_t)DR7_GD;    /* the CPU clears it, so that the handler may use them */
            return raise_db(t, DR6_BD);
        }
        return raise_db(t, gdbg_exec_hits(g->dr, g->dr7, p->from));
    }
    g->ready = true;
    g->pred = *p;
    g->at = p->from;
    g->len = p->len;
    g->cs = v->sregs->cs.selector;
    g->tf_before = g->tf;
    g->r11 = v->regs->r11;
    g->regs = *v->regs;
    if (p->kind == VBTS_KIND_IRET) {
        unsigned w = cpu_mode(v->sregs) == MODE_LONG64 ? 8 : 4;
        uint64_t sp = cpu_stack_top(v->regs, v->sregs), cs = 0, rsp = 0;
        cpu_read_linear(v, sp + w, &cs, 2);
        g->iret_cs = (uint16_t)cs;
        g->iret_rsp = w == 8 && cpu_read_linear(v, sp + 3 * w, &rsp, w) == 0 ? rsp : v->regs->rsp + 3 * w;
    }
    g->data_hits = (g->dr7 & DR7_ENABLES) ? access_hits(t, v, p->from) : 0;
    return 0;
}

/*
 * SYSCALL saves RFLAGS in R11 and masks it with FMASK, SYSRET loads it
 * from R11; each traps after itself by the TF it leaves (TCG's
 * gen_eob_worker, as entry_64.S says silicon does), not the one it found.
 */
static int system_tf(struct trace_vcpu *t, const struct branch_pred *p, bool *bs)
{
    struct gdbg_state *g = &t->gd;
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    if (p->mnemonic == ZYDIS_MNEMONIC_SYSRET) {
        g->tf = g->r11 & RFLAGS_TF;
    } else if (g->tf_before) {
        struct deliver_syscall_msrs m;
        if (event_syscall_msrs(t->cpu, &m) < 0)
            return unsupported(t, "%s", error_last());
        r->r11 |= RFLAGS_TF;
        t->cpu->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
        g->tf = !(m.fmask & RFLAGS_TF);
    }
    *bs = g->tf;
    return 0;
}

static bool btf(const struct trace_vcpu *t)
{
    uint64_t debugctl = 0;
    return t->tr->gbts && guest_bts_rdmsr(t->tr->gbts, t->cpu, MSR_IA32_DEBUGCTL, &debugctl) &&
           (debugctl & DEBUGCTL_BTF);
}

/*
 * The host ran the instruction after the one predicted in the same step
 * (kvm_pvm after IRET, any host after MOV SS, whose trap is inhibited):
 * 1 if that second one explains rip and does nothing the guest's
 * debugging sees but end the step (a PUSHF's image is at RSP, a POPF's
 * just below); its accesses are read with the first one's registers (it
 * loaded RIP and RSP only), in *hits, and it must not stand on an
 * instruction breakpoint.
 */
static int second(const struct trace_vcpu *t, const struct cpu_view *v, uint64_t at, uint64_t rip,
                  bool rf, struct branch_pred *s, unsigned *hits)
{
    const struct gdbg_state *g = &t->gd;
    const struct branch_pred *p = &g->pred;
    const char *why;
    if (branch_predict_at(v, at, s, &why) < 0)
        return 0;
    bool branch = s->kind != VBTS_KIND_UNKNOWN && s->taken;
    /* A conditional one reads as taken: its end says whether it was. */
    if (s->kind == VBTS_KIND_JCC && rip == at + s->len)
        s->taken = branch = false;
    else if (branch ? !s->target_known || s->target != rip : at + s->len != rip)
        return 0;
    /* Its registers: those of the first, which loaded RSP (IRET, POP SS) and RIP only. */
    struct kvm_regs r = g->regs;
    struct cpu_view at_view = { v->mem, &r, v->sregs };
    r.rip = at - cpu_code_base(v->sregs);
    if (p->kind == VBTS_KIND_IRET)
        r.rsp = g->iret_rsp;
    else if (p->mnemonic == ZYDIS_MNEMONIC_POP)
        r.rsp += cpu_stack_width(v->sregs) / 8;
    *hits = (g->dr7 & DR7_ENABLES) ? access_hits(t, &at_view, at) : 0;
    return (rf || !gdbg_exec_hits(g->dr, g->dr7, at)) && s->dr < 0;
}

/*
 * An event came in the step: gdbg_before reads its frame.  Came it after
 * an IRET the host ran in the same step (kvm_pvm), the frame shows the TF
 * that IRET loaded, and returns to the instruction after it.
 */
static void event_after_iret(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    struct gdbg_state *g = &t->gd;
    const struct branch_pred *p = &g->pred;
    g->ready = false;
    if (p->kind == VBTS_KIND_IRET && p->loads_flags && p->target_known && rip != p->target) {
        struct branch_pred s;
        const char *why;
        g->tf = (p->flags_image & RFLAGS_TF) && !g->monitors_tf;
        g->at = p->target;
        g->len = branch_predict_at(v, p->target, &s, &why) == 0 ? s.len : 0;
        g->cs = g->iret_cs;
    }
}

static int after_step(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    struct gdbg_state *g = &t->gd;
    const struct branch_pred *p = &g->pred;    /* a backend may have predicted on since */
    if (!g->ready)
        return 0;
    if (t->events != g->events) {
        event_after_iret(t, v, rip);
        return 0;
    }
    g->ready = false;
    g->nested = 0;
    if (p->kind == VBTS_KIND_IRET && p->loads_flags && (p->flags_image & RFLAGS_TF)) {
        /* The frame it loaded the guest's TF from is not one the CPU pushed (deliver_seen). */
        g->frame = cpu_stack_top(&g->regs, &t->cpu->run->s.regs.sregs);
    }
    bool branch = p->kind != VBTS_KIND_UNKNOWN && p->taken;
    uint64_t next = branch ? (p->target_known ? p->target : rip) : p->from + p->len;
    bool again = !branch && rip == p->from;     /* a REP iteration */
    struct branch_pred s;
    unsigned hits2 = 0;
    bool both = rip != next && !again && (p->shadow || p->kind == VBTS_KIND_IRET);
    bool rf1 = p->kind == VBTS_KIND_IRET && p->loads_flags && (p->flags_image & RFLAGS_RF);
    if (rip != next && !again && !(both && second(t, v, next, rip, rf1, &s, &hits2)))
        return unsupported(t, "the host ran on to 0x%llx in one step while the guest's own debugging "
                           "was on, which vbts does not follow", (unsigned long long)rip);
    if (p->loads_flags && !again) {
        g->tf = (p->flags_image & RFLAGS_TF) && !g->monitors_tf;
        g->rf = p->kind == VBTS_KIND_IRET && (p->flags_image & RFLAGS_RF);
    } else {
        g->rf = false;
    }
    bool tf_second = g->tf;
    if (((g->tf_before && is_pushf(p->mnemonic) && !again) || (both && tf_second && is_pushf(s.mnemonic))) &&
        cpu_pushed_tf(v, true) < 0)
        return unsupported(t, "PUSHF's image cannot be given the guest's TF");
    if (p->dr_write && get_debugregs(t) < 0)
        return unsupported(t, "%s", error_last());
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    if (r->rflags & RFLAGS_TF) {
        /* The CPU's TF is the monitor's (a POPF or IRET loaded the guest's into it). */
        r->rflags &= ~(uint64_t)RFLAGS_TF;
        t->cpu->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
    }
    unsigned bits = g->held | g->data_hits;
    bool bs = g->held_bs || (g->tf_before && (branch || !btf(t)));
    if ((p->mnemonic == ZYDIS_MNEMONIC_SYSCALL || p->mnemonic == ZYDIS_MNEMONIC_SYSRET) && system_tf(t, p, &bs) < 0)
        return -1;
    if (both) {
        bool branch2 = s.kind != VBTS_KIND_UNKNOWN && s.taken;
        g->rf = false;
        if (s.loads_flags)
            g->tf = s.flags_image & RFLAGS_TF;
        /* After MOV SS the trap waits for this one; after IRET this one traps by the TF it loaded. */
        bs = (p->shadow && bs) || (tf_second && (branch2 || !btf(t)));
        bits |= hits2;
        if (s.shadow) {
            g->held = 0;
            g->held_bs = bs;
            return 0;
        }
    }
    g->held = 0;
    g->held_bs = false;
    if (p->shadow && !both) {
        /* MOV SS, POP SS: their #DB comes after the next instruction. */
        g->held = bits;
        g->held_bs = bs;
        return 0;
    }
    if (!bits && !bs)
        return 0;
    return raise_db(t, bits | (bs ? DR6_BS : 0)) < 0 ? -1 : 0;
}

int gdbg_after(struct trace_vcpu *t, const struct cpu_view *v, uint64_t rip)
{
    bool was = t->gd.ready;
    int r = after_step(t, v, rip);
    if (r == 0 && was && !t->stepping && t->events != t->gd.events && t->gd.tf) {
        r = frame_tf(t, v);     /* an event at the window's last instruction: its frame shows TF */
        t->gd.tf = false;
    }
    /* The window closed on the way (gdbg_end waited for this instruction): the CPU's now. */
    if (r == 0 && was && !t->stepping)
        r = give_back(t);
    return r;
}
