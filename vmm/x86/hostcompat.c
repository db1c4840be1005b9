/* SPDX-License-Identifier: MIT */
/*
 * Completing instructions the host could not emulate (see x86/hostcompat.h
 * and docs/host-compat.md).  Software interrupts are completed as the CPU
 * would: RIP moves past the instruction, then the vector is injected with
 * KVM_SET_VCPU_EVENTS, so the guest's own IDT handler runs and sees the
 * return address after the instruction (the kernel's int3 self-test checks
 * exactly that).  fwait, with no x87 exception pending, does nothing and
 * is skipped.  Anything else stays an emulation failure: the run ends there
 * with RIP and the instruction bytes.
 */
#include "x86/hostcompat.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "vbts/le.h"
#include "x86/arch.h"
#include "x86/cpu.h"
#include "x86/debug.h"
#include "x86/deliver.h"
#include "x86/event.h"
#include "x86/fpu.h"
#include "x86/host.h"
#include "x86/x87.h"

enum { HC_INT3, HC_INTN, HC_INTO, HC_IRETD, HC_GATE, HC_FWAIT, HC_X87, HC_UD, HC_SYSCALL, HC_SYSRET,
       HC_RETRY, HC_HALT, HC_INT1, HC_COUNT };
static const char *const hc_name[HC_COUNT] = { "int3", "int n", "into", "iretd", "far branch through a call gate",
                                               "fwait", "x87 instruction", "#UD, #NM or bound", "syscall",
                                               "sysret", "patched-away retry", "stale HLT state", "int1 (icebp)" };
static const char *const hc_verb[HC_COUNT] = { "emulated", "emulated", "emulated", "emulated", "emulated",
                                               "emulated", "completed on the host's x87", "emulated",
                                               "completed", "emulated", "done", "cleared", "emulated" };
static atomic_ulong hc_fired[HC_COUNT];



/*
 * SYSCALL from user mode on kvm_pvm: the host loads RCX, R11 and RIP =
 * LSTAR but does not switch to CPL0; it delivers a page fault at LSTAR
 * "from user mode" to the guest instead, and the kernel kills the task.
 * vbts puts an execution breakpoint on the guest's #PF handler (IDT
 * vector 14) and, when the frame there says "user mode, RIP = LSTAR",
 * finishes the SYSCALL as the SDM describes: RSP back to the user's (the
 * fault switched stacks), CS = STAR[47:32], SS = CS + 8, CPL 0,
 * RIP = LSTAR, RFLAGS = the user's RFLAGS (in R11) & ~FMASK.  Other page faults
 * continue untouched.  The breakpoint yields to single-stepping (x86/debug.c
 * drops it while the trace engine steps; CPL3 is not traced on this host
 * anyway) and comes back when stepping ends.
 */
static bool arm(struct vcpu *cpu, uint64_t handler)
{
    struct hostcompat_vcpu *hc = &arch_vcpu(cpu)->hc;
    hc->pf_bp = handler;
    hc->stepping_over = false;
    struct debug_want w = { .unless_stepped = true, .nbp = 1, .bp = { handler } };
    return debug_set(cpu, DEBUG_HOSTCOMPAT, &w) == 0;
}

/*
 * Past the breakpoint: this host does not honour RFLAGS.RF for it, so the
 * breakpoint goes off for one single-step and comes back after it.
 */
static bool step_over(struct vcpu *cpu)
{
    arch_vcpu(cpu)->hc.stepping_over = true;
    struct debug_want w = { .step = true, .unless_stepped = true };
    return debug_set(cpu, DEBUG_HOSTCOMPAT, &w) == 0;
}

void hostcompat_follow(struct vcpu *cpu, bool on)
{
    struct hostcompat_vcpu *hc = &arch_vcpu(cpu)->hc;
    if (on && !hc->followed)
        hc->recheck = true;         /* what ran untraced is not known */
    hc->followed = on;
}

void hostcompat_recheck(struct vcpu *cpu)
{
    arch_vcpu(cpu)->hc.recheck = true;
}

static int before_run(struct vcpu *cpu, void *ctx)
{
    (void)ctx;
    struct hostcompat_vcpu *hc = &arch_vcpu(cpu)->hc;
    if (hc->pf_bp || !host_is_pvm() || (hc->followed && !hc->recheck))
        return 0;
    hc->recheck = false;
    struct deliver_syscall_msrs m;
    if (event_syscall_msrs(cpu, &m) < 0 || !m.lstar)
        return 0;                   /* the kernel has not set up SYSCALL (nor its IDT) yet */
    struct kvm_sregs sr;
    uint8_t gate[16];
    if (ioctl(cpu->fd, KVM_GET_SREGS, &sr) < 0 || sr.idt.limit < 14 * 16 + 15)
        return 0;
    struct gmem_paging pg;
    cpu_paging(&sr, &pg);
    if (gmem_read_linear(&cpu->vm->mem, &pg, sr.idt.base + 14 * 16, gate, 16) != GMEM_OK)
        return 0;
    uint64_t handler = vbts_le16(gate) | (uint64_t)vbts_le16(gate + 6) << 16 |
                       (uint64_t)vbts_le32(gate + 8) << 32;
    return handler && !arm(cpu, handler) ? -1 : 0;
}

/* NOPs, ENDBR64 and CLD at RIP, done by moving RIP (and clearing DF); true if any. */
static bool skip_handler_prologue(const struct cpu_view *v, struct kvm_regs *regs)
{
    uint64_t start = regs->rip;
    for (int i = 0; i < 8; i++) {
        ZydisDecodedInstruction in;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        const char *why;
        if (cpu_decode(v, cpu_linear_ip(regs, v->sregs), &in, ops, &why))
            break;
        if (in.mnemonic == ZYDIS_MNEMONIC_CLD)
            regs->rflags &= ~(1ull << 10);
        else if (in.mnemonic != ZYDIS_MNEMONIC_NOP && in.mnemonic != ZYDIS_MNEMONIC_ENDBR64)
            break;
        regs->rip += in.length;
    }
    return regs->rip != start;
}

/* The #PF handler's breakpoint fired: a user-mode SYSCALL to finish, or a page fault. */
static bool on_pf_breakpoint(struct vcpu *cpu, uint64_t bp, uint64_t pc)
{
    if (pc != bp)
        return false;
    struct kvm_regs regs;
    struct kvm_sregs sr;
    struct deliver_syscall_msrs m;
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &sr) < 0 ||
        event_syscall_msrs(cpu, &m) < 0)
        return false;
    /* The #PF frame: error code, RIP, CS, RFLAGS, RSP, SS. */
    uint64_t f[6];
    struct gmem_paging pg;
    cpu_paging(&sr, &pg);
    if (gmem_read_linear(&cpu->vm->mem, &pg, regs.rsp, f, sizeof(f)) == GMEM_OK &&
        f[1] == m.lstar && (f[2] & 3) == 3) {
        uint16_t kcs = (uint16_t)(m.star >> 32) & 0xfffc;
        cpu_flat64_segment(&sr.cs, kcs, true, 0);
        cpu_flat64_segment(&sr.ss, kcs + 8, false, 0);
        if (ioctl(cpu->fd, KVM_SET_SREGS, &sr) < 0)
            return false;
        regs.rsp = f[4];
        regs.rip = m.lstar;
        /* R11 holds the user's RFLAGS (the host set it, as SYSCALL does; the frame's is not). */
        regs.rflags = (regs.r11 & ~m.fmask & ~(1ull << 16)) | 2;
        if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
            return false;
        atomic_fetch_add(&hc_fired[HC_SYSCALL], 1);
        return true;                /* RIP moved: the breakpoint is behind us */
    }
    /*
     * An ordinary page fault: get past the breakpoint.  The handler starts
     * with what needs no CPU state but RIP and DF: CLAC and ENDBR patched
     * into NOPs where the CPU lacks SMAP/IBT, then CLD.  Doing those here
     * moves RIP off the breakpoint without a single-step, whose exit this
     * host can lose (a lost one would leave the vCPU stepping into user
     * mode, where the host reflects the #DB to the guest).
     */
    struct cpu_view v = { &cpu->vm->mem, &regs, &sr };
    if (skip_handler_prologue(&v, &regs))
        return ioctl(cpu->fd, KVM_SET_REGS, &regs) == 0;
    return step_over(cpu);
}

/* The breakpoint (hits), or the step past it (hits 0). */
static enum vcpu_verdict on_debug(struct vcpu *cpu, unsigned hits, void *ctx)
{
    (void)ctx;
    struct hostcompat_vcpu *hc = &arch_vcpu(cpu)->hc;
    uint64_t bp = hc->pf_bp;
    const struct kvm_debug_exit_arch *d = &cpu->run->debug.arch;
    if (!bp)
        return VCPU_EXIT_PASS;
    if (!hits)
        return hc->stepping_over && arm(cpu, bp) ? VCPU_EXIT_DONE : VCPU_EXIT_PASS;
    return on_pf_breakpoint(cpu, bp, d->pc) ? VCPU_EXIT_DONE : VCPU_EXIT_PASS;
}

/*
 * kvm_pvm leaves a vCPU that an interrupt woke from HLT while it was
 * single-stepped in KVM_MP_STATE_HALTED, though it went on running (seen:
 * halted at a NOP in pvclock_clocksource_read, IF=0).  Once stepping
 * stops, KVM blocks it as halted with interrupts off, for good: the other
 * vCPU's IPIs time out (soft lockup in smp_call_function); under a
 * stretch's breakpoints KVM honours the state the same way.  A vCPU that
 * is really halted sits right after a HLT (F4): with interrupts on an
 * interrupt wakes it, with them off an NMI, an INIT or a PV kick (as on
 * the CPU, trace/wait.c); any other halted vCPU is made runnable again.
 */
bool hostcompat_halted(struct vcpu *cpu, const struct cpu_view *v)
{
    struct kvm_mp_state mp;
    if (ioctl(cpu->fd, KVM_GET_MP_STATE, &mp) < 0 || mp.mp_state != KVM_MP_STATE_HALTED)
        return false;
    struct kvm_regs regs;
    struct kvm_sregs sr;
    struct cpu_view own = { &cpu->vm->mem, &regs, &sr };
    if (!v) {
        if (ioctl(cpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &sr) < 0)
            return true;
        v = &own;
    }
    uint8_t before[ZYDIS_MAX_INSTRUCTION_LENGTH];
    if (cpu_fetch(v, cpu_linear_ip(v->regs, v->sregs) - 1, before) == 0 || before[0] == 0xf4)
        return true;
    mp.mp_state = KVM_MP_STATE_RUNNABLE;
    if (ioctl(cpu->fd, KVM_SET_MP_STATE, &mp) < 0)
        return true;
    atomic_fetch_add(&hc_fired[HC_HALT], 1);
    return false;
}

static void after_stepping(struct vcpu *cpu, void *ctx)
{
    (void)ctx;
    hostcompat_halted(cpu, NULL);
}

/*
 * The instruction is complete: its state to KVM, and to the registers the
 * exit reported (which the trace engine reads), and observers learn that
 * it ran (a step ends here: the next KVM_RUN runs the next instruction).
 */
static bool finish(struct vcpu *cpu, const struct kvm_regs *regs, const struct kvm_sregs *sr)
{
    struct kvm_run *run = cpu->run;
    if ((sr && ioctl(cpu->fd, KVM_SET_SREGS, sr) < 0) || ioctl(cpu->fd, KVM_SET_REGS, regs) < 0)
        return false;
    if (run->kvm_valid_regs & KVM_SYNC_X86_REGS)
        run->s.regs.regs = *regs;
    if (sr && (run->kvm_valid_regs & KVM_SYNC_X86_SREGS))
        run->s.regs.sregs = *sr;
    event_completed(cpu);
    return true;
}

/* SYSRETQ (48 0f 07): the host's emulator has none. */
static bool sysret(struct vcpu *cpu, struct kvm_regs *regs, struct kvm_sregs *sr)
{
    struct deliver_syscall_msrs m;
    if (event_syscall_msrs(cpu, &m) < 0)
        return false;
    uint16_t base = (uint16_t)(m.star >> 48) & 0xfffc;
    cpu_flat64_segment(&sr->cs, (base + 16) | 3, true, 3);
    cpu_flat64_segment(&sr->ss, (base + 8) | 3, false, 3);
    regs->rip = regs->rcx;
    regs->rflags = (regs->r11 & 0x3c7fd7) | 2;
    return finish(cpu, regs, sr);
}

const char *hostcompat_cmdline(void)
{
    /*
     * kvm_pvm (docs/host-compat.md) fails on `lock cmpxchg16b` and on XRSTOR in
     * FPU init.  KVM_SET_CPUID2 cannot hide CX16/XSAVE there (the guest
     * sees host CPUID), so the kernel is told not to use them.
     *
     * Without XSAVE the kernel saves only x87/SSE state (FXSAVE) at a
     * context switch, but user mode runs natively and its CPUID and XGETBV
     * report the host's AVX/AVX-512 and XCR0, so glibc picks AVX-512
     * string functions whose YMM/ZMM registers the kernel does not
     * preserve: a task that page-faults inside memcpy and resumes on the
     * other vCPU stores that vCPU's registers (seen: static busybox's TLS
     * block copied as zeros, then a segfault reading it).  The kernel hands
     * NAME=VALUE parameters to init as environment, so every glibc program
     * below it is told not to use AVX; a GLIBC_TUNABLES in --append comes
     * later and wins.
     */
    if (host_is_pvm())
        return "clearcpuid=cx16,popcnt,smap,fsgsbase,invpcid,pcid,rdpid,ssse3 noxsave "
               "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,"
               "-AVX512CD,-AVX2,-AVX";
    return NULL;
}

static bool soft_interrupt(struct vcpu *cpu, unsigned len, unsigned vector)
{
    struct event ev = { .kind = EVENT_SOFT_INT, .vector = (uint8_t)vector, .insn_len = (uint8_t)len };
    return event_raise(cpu, &ev) == 0;
}

static bool skip(struct vcpu *cpu, struct kvm_regs *regs, unsigned len)
{
    regs->rip += len;
    return finish(cpu, regs, NULL);
}

/*
 * IRETD in 32-bit protected mode to the same privilege: EIP, CS and EFLAGS
 * from the stack, CS through its descriptor.  Anything else (a task
 * return, an outer privilege, virtual-8086 mode) is left to fail.
 */
static bool iretd(struct vcpu *cpu, struct kvm_regs *regs, struct kvm_sregs *sr)
{
    struct cpu_view v = { &cpu->vm->mem, regs, sr };
    uint32_t f[3];
    const char *why;
    struct kvm_segment cs;
    unsigned cpl = (unsigned)cpu_cpl(sr);
    if (cpu_mode(sr) != MODE_PROT32 || (regs->rflags & (1u << 14)) ||
        cpu_read_linear(&v, cpu_stack_base(sr) + (uint32_t)regs->rsp, f, sizeof(f)) < 0 ||
        (f[1] & 3) != cpl || (f[2] & (1u << 17)) ||
        deliver_segment(&cpu->vm->mem, sr, (uint16_t)f[1], &cs, &why) < 0 || !(cs.type & 8))
        return false;
    /* IOPL and IF change only where the privilege allows (CPL0: both). */
    uint32_t keep = cpl == 0 ? 0 : (3u << 12) | (cpl > ((regs->rflags >> 12) & 3) ? (1u << 9) : 0);
    sr->cs = cs;
    regs->rip = f[0];
    regs->rflags = (((uint32_t)regs->rflags & keep) | (f[2] & ~keep & 0x257fd5)) | 2;
    regs->rsp = (uint32_t)(regs->rsp + 12);
    return event_iret_done(cpu) == 0 && finish(cpu, regs, sr);
}

/*
 * Bytes that are no instruction in this mode, UD0 and UD1: #UD, as a CPU
 * raises it; an FPU or SIMD instruction with CR0.TS: #NM; BOUND: #BR if
 * the index is outside its bounds, else nothing.
 * 1: done; -1: that, and it failed; 0: neither.
 */
static int undefined_or_bound(struct vcpu *cpu, const struct cpu_view *v, struct kvm_regs *regs)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    uint64_t lin = cpu_linear_ip(v->regs, v->sregs), ea;
    struct event ud = { .kind = EVENT_EXCEPTION, .vector = 6 };
    if (cpu_decode(v, lin, &in, ops, &why) < 0) {
        if (cpu_undecodable_vector(v, lin) != 6)
            return 0;
        return event_raise(cpu, &ud) < 0 ? -1 : 1;
    }
    if (in.mnemonic == ZYDIS_MNEMONIC_UD0 || in.mnemonic == ZYDIS_MNEMONIC_UD1)
        return event_raise(cpu, &ud) < 0 ? -1 : 1;
    /* x87 with CR0.EM or TS, MMX and SSE with TS: #NM before anything else. */
    bool x87 = in.meta.isa_ext == ZYDIS_ISA_EXT_X87, simd = in.meta.isa_ext == ZYDIS_ISA_EXT_MMX ||
               in.meta.isa_ext == ZYDIS_ISA_EXT_SSE || in.meta.isa_ext == ZYDIS_ISA_EXT_SSE2;
    uint64_t cr0 = v->sregs->cr0;
    if ((x87 && (cr0 & 0xc)) || (simd && (cr0 & 0x8) && !(cr0 & 0x4))) {
        struct event nm = { .kind = EVENT_EXCEPTION, .vector = 7 };
        return event_raise(cpu, &nm) < 0 ? -1 : 1;
    }
    if (in.mnemonic != ZYDIS_MNEMONIC_BOUND || ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY ||
        cpu_operand_address(v, &in, &ops[1], &ea) < 0)
        return 0;
    unsigned w = in.operand_width / 8;
    uint64_t idx, lo = 0, hi = 0;
    if (cpu_register(v->regs, ops[0].reg.value, &idx) < 0 || cpu_read_linear(v, ea, &lo, w) < 0 ||
        cpu_read_linear(v, ea + w, &hi, w) < 0)
        return 0;
    int64_t i = w == 2 ? (int16_t)idx : (int32_t)idx, l = w == 2 ? (int16_t)lo : (int32_t)lo,
            h = w == 2 ? (int16_t)hi : (int32_t)hi;
    if (i < l || i > h) {
        struct event br = { .kind = EVENT_EXCEPTION, .vector = 5 };
        return event_raise(cpu, &br) < 0 ? -1 : 1;
    }
    return skip(cpu, regs, in.length) ? 1 : -1;
}

/*
 * A far JMP or CALL through memory to a 64-bit call gate, at CPL0 in
 * 64-bit mode: CS and RIP from the gate; CALL pushes CS and the return
 * address, 8 bytes each.  1: done; -1: that, and it failed; 0: not one.
 */
static int call_gate(struct vcpu *cpu, const struct cpu_view *v, struct kvm_regs *regs,
                     struct kvm_sregs *sr)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    uint64_t lin = cpu_linear_ip(regs, sr), ea, off = 0, sel = 0;
    if (cpu_mode(sr) != MODE_LONG64 || cpu_cpl(sr) != 0 || cpu_decode(v, lin, &in, ops, &why) < 0 ||
        in.meta.branch_type != ZYDIS_BRANCH_TYPE_FAR || ops[0].type != ZYDIS_OPERAND_TYPE_MEMORY ||
        (in.mnemonic != ZYDIS_MNEMONIC_JMP && in.mnemonic != ZYDIS_MNEMONIC_CALL) ||
        cpu_operand_address(v, &in, &ops[0], &ea) < 0 ||
        cpu_read_linear(v, ea, &off, in.operand_width / 8) < 0 ||
        cpu_read_linear(v, ea + in.operand_width / 8, &sel, 2) < 0)
        return 0;
    uint8_t g[16];
    unsigned idx = (unsigned)sel & ~7u;
    if ((sel & 4) || idx == 0 || idx + 15 > sr->gdt.limit || cpu_read_linear(v, sr->gdt.base + idx, g, 16) < 0 ||
        g[5] != 0x8c || (g[13] & 0x1f) != 0)
        return 0;                   /* not a present 64-bit call gate, DPL 0 */
    struct kvm_segment cs;
    if (deliver_segment(v->mem, sr, vbts_le16(g + 2), &cs, &why) < 0 || !cs.l || cs.dpl != 0)
        return 0;
    uint64_t target = vbts_le16(g) | (uint64_t)vbts_le16(g + 6) << 16 |
                      (uint64_t)(g[8] | g[9] << 8 | g[10] << 16 | (uint32_t)g[11] << 24) << 32;
    if (in.mnemonic == ZYDIS_MNEMONIC_CALL) {
        uint64_t frame[2] = { regs->rip + in.length, sr->cs.selector }, fault;
        struct gmem_paging pg;
        cpu_paging(sr, &pg);
        if (gmem_write_linear(v->mem, &pg, regs->rsp - 16, frame, sizeof(frame), &fault) != GMEM_OK)
            return 0;
        regs->rsp -= 16;
    }
    sr->cs = cs;
    regs->rip = target;
    return finish(cpu, regs, sr) ? 1 : -1;
}

/* fwait: #NM with CR0.TS and MP, else #MF for a pending unmasked x87 exception (FSW.ES, CR0.NE), else nothing. */
static bool fwait(struct vcpu *cpu, struct kvm_regs *regs, const struct kvm_sregs *sr)
{
    struct kvm_fpu fpu;
    if (fpu_get(cpu, &fpu) < 0)
        return false;
    bool nm = (sr->cr0 & 0xa) == 0xa, mf = (fpu.fsw & 0x80) && (sr->cr0 & (1u << 5));
    if (!nm && !mf)
        return skip(cpu, regs, 1);
    struct event ev = { .kind = EVENT_EXCEPTION, .vector = nm ? 7 : 16 };
    return event_raise(cpu, &ev) == 0;
}

/* An x87 instruction (x86/x87.h).  1: done; -1: that, and it failed; 0: not one. */
static int x87(struct vcpu *cpu, const struct cpu_view *v, struct kvm_regs *regs)
{
    struct kvm_fpu fpu;
    struct delivery d;
    unsigned len = 0;
    if (fpu_get(cpu, &fpu) < 0)
        return -1;
    switch (x87_emulate(v, &fpu, &regs->rax, &len, &d)) {
    case X87_RAISE: {
        struct event ev = { .kind = EVENT_EXCEPTION, .vector = d.vector, .has_error = d.has_error,
                            .error = d.error, .cr2 = d.cr2 };
        return event_raise(cpu, &ev) == 0 ? 1 : -1;
    }
    case X87_DONE:
        return fpu_set(cpu, &fpu) == 0 && skip(cpu, regs, len) ? 1 : -1;
    default:
        return 0;
    }
}

/* r: 1 done (counted as `which`), -1 that and it failed, 0 not one. */
static int tally(int r, int which)
{
    if (r > 0)
        atomic_fetch_add(&hc_fired[which], 1);
    return r;
}

/* An emulation failure: true if the instruction was completed here. */
static bool complete(struct vcpu *cpu)
{
    struct kvm_regs regs;
    struct kvm_sregs sr;
    uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) < 0 || ioctl(cpu->fd, KVM_GET_SREGS, &sr) < 0)
        return false;
    /* Read through the guest's page tables: the bytes in the exit are not always current. */
    struct cpu_view v = { &cpu->vm->mem, &regs, &sr };
    size_t n = cpu_fetch(&v, cpu_linear_ip(&regs, &sr), b);
    uint64_t *last = &arch_vcpu(cpu)->hc.retried_rip;
    bool retried = *last == regs.rip;
    *last = 0;
    /* int3: #BP, a trap; int1 (icebp): #DB, a trap, no DPL check */
    if (n >= 1 && (b[0] == 0xcc || b[0] == 0xf1)) {
        if (!soft_interrupt(cpu, 1, b[0] == 0xcc ? 3 : 1))
            return false;
        atomic_fetch_add(&hc_fired[b[0] == 0xcc ? HC_INT3 : HC_INT1], 1);
        return true;
    }
    if (n >= 3 && b[0] == 0x48 && b[1] == 0x0f && b[2] == 0x07 && (sr.efer & (1u << 10))) {
        if (!sysret(cpu, &regs, &sr))
            return false;
        atomic_fetch_add(&hc_fired[HC_SYSRET], 1);
        return true;
    }
    if (n >= 2 && b[0] == 0xcd) {                   /* int imm8 */
        if (!soft_interrupt(cpu, 2, b[1]))
            return false;
        atomic_fetch_add(&hc_fired[HC_INTN], 1);
        return true;
    }
    int gate = tally(call_gate(cpu, &v, &regs, &sr), HC_GATE);
    if (gate != 0)
        return gate > 0;
    if (n >= 1 && b[0] == 0xcf && cpu_mode(&sr) == MODE_PROT32) {
        if (!iretd(cpu, &regs, &sr))
            return false;
        atomic_fetch_add(&hc_fired[HC_IRETD], 1);
        return true;
    }
    if (n >= 1 && b[0] == 0xce && !((sr.efer & (1u << 10)) && sr.cs.l)) {
        /* into: #OF, a trap, if OF is set; else nothing. */
        if (regs.rflags & (1u << 11) ? !soft_interrupt(cpu, 1, 4) : !skip(cpu, &regs, 1))
            return false;
        atomic_fetch_add(&hc_fired[HC_INTO], 1);
        return true;
    }
    if (n >= 1 && b[0] == 0x9b) {
        if (!fwait(cpu, &regs, &sr))
            return false;
        atomic_fetch_add(&hc_fired[HC_FWAIT], 1);
        return true;
    }
    int x = tally(x87(cpu, &v, &regs), HC_X87);
    if (x != 0)
        return x > 0;
    /*
     * None of those is there (any more): another vCPU patched the code
     * (text_poke_bp replaces an int3 it planted) between the host's fetch
     * and ours.  Running it again fetches the new bytes, as a CPU could
     * have; a second failure at the same RIP is a real one.
     */
    if (n >= 1 && !retried) {
        *last = regs.rip;
        atomic_fetch_add(&hc_fired[HC_RETRY], 1);
        return true;
    }
    if (retried)
        atomic_fetch_sub(&hc_fired[HC_RETRY], 1);   /* it was not patched away after all */
    /* Failed twice at the same RIP: no instruction there, or BOUND. */
    int r = undefined_or_bound(cpu, &v, &regs);
    if (r > 0)
        atomic_fetch_add(&hc_fired[HC_UD], 1);
    return r > 0;
}

static enum vcpu_verdict on_internal_error(struct vcpu *cpu, void *ctx)
{
    (void)ctx;
    if (cpu->run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION && complete(cpu))
        return VCPU_EXIT_DONE;
    return VCPU_EXIT_PASS;
}

int hostcompat_install_completion(struct vm *vm)
{
    return vcpu_on_exit(vm, KVM_EXIT_INTERNAL_ERROR, on_internal_error, NULL);
}

int hostcompat_install(struct vm *vm)
{
    arch_vm(vm)->hostcompat = true;
    if (hostcompat_install_completion(vm) < 0 ||
        vcpu_on_hook(vm, VCPU_HOOK_PRE_RUN, before_run, NULL) < 0 ||
        debug_on_exit(vm, DEBUG_HOSTCOMPAT, on_debug, NULL) < 0 ||
        debug_on_step_off(vm, after_stepping, NULL) < 0)
        return -1;
    return 0;
}

void hostcompat_summary(FILE *f)
{
    char line[160];
    size_t n = 0;
    for (int i = 0; i < HC_COUNT; i++) {
        unsigned long c = atomic_load(&hc_fired[i]);
        if (c && n < sizeof(line))
            n += snprintf(line + n, sizeof(line) - n, "%s%s %s %lu time%s", n ? ", " : "",
                          hc_name[i], hc_verb[i], c, c == 1 ? "" : "s");
    }
    if (n)
        fprintf(f, "vbts: host-compat: %s\n", line);
}
