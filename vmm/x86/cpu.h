/* SPDX-License-Identifier: MIT */
/*
 * An x86 vCPU's state as an instruction sees it: mode, privilege, linear
 * addresses, the guest's page tables, segment descriptors, the IDT, and
 * the instruction bytes at an address decoded by Zydis.  Pure functions of
 * a register snapshot and guest memory; nothing here touches KVM.
 */
#ifndef VBTS_X86_CPU_H
#define VBTS_X86_CPU_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

#include "core/gmem.h"

/* The guest state an instruction is decoded and evaluated in. */
struct cpu_view {
    const struct gmem *mem;
    const struct kvm_regs *regs;
    const struct kvm_sregs *sregs;
};

enum cpu_mode { MODE_REAL16, MODE_PROT16, MODE_PROT32, MODE_COMPAT32, MODE_LONG64 };

#define RFLAGS_CF (1u << 0)
#define RFLAGS_PF (1u << 2)
#define RFLAGS_ZF (1u << 6)
#define RFLAGS_SF (1u << 7)
#define RFLAGS_TF (1u << 8)
#define RFLAGS_IF (1u << 9)
#define RFLAGS_DF (1u << 10)
#define RFLAGS_OF (1u << 11)
#define RFLAGS_RF (1u << 16)
#define EFER_SCE  (1ull << 0)
#define EFER_LMA  (1ull << 10)
#define CR0_PG    (1ull << 31)
#define CR4_LA57  (1ull << 12)
#define CR4_PKE   (1ull << 22)
#define CR4_CET   (1ull << 23)
#define CR4_PKS   (1ull << 24)
#define MSR_STAR  0xc0000081u
#define MSR_LSTAR 0xc0000082u
#define MSR_CSTAR 0xc0000083u
#define MSR_FMASK 0xc0000084u

/* The planner asks for these at every instruction: inline. */
static inline enum cpu_mode cpu_mode(const struct kvm_sregs *s)
{
    if (!(s->cr0 & 1))
        return MODE_REAL16;
    if (s->efer & EFER_LMA)
        return s->cs.l ? MODE_LONG64 : MODE_COMPAT32;
    return s->cs.db ? MODE_PROT32 : MODE_PROT16;
}
/* A flat 64-bit code segment (code) or data/stack segment, as SYSCALL and SYSRET load them. */
void cpu_flat64_segment(struct kvm_segment *s, uint16_t sel, bool code, unsigned dpl);
uint64_t cpu_linear_ip(const struct kvm_regs *r, const struct kvm_sregs *s);
/* A linear address is canonical for the paging depth CR4.LA57 selects (57 or 48 bits). */
static inline bool cpu_canonical(const struct kvm_sregs *s, uint64_t a)
{
    int bits = (s->cr4 & CR4_LA57) ? 57 : 48;
    return (uint64_t)((int64_t)(a << (64 - bits)) >> (64 - bits)) == a;
}
/* A branch may go to offset ip: canonical in 64-bit mode, within CS's limit elsewhere (else #GP at the branch). */
bool cpu_ip_allowed(const struct kvm_sregs *s, uint64_t ip);
/* What CS adds to an offset to make it linear: nothing in 64-bit mode. */
uint64_t cpu_code_base(const struct kvm_sregs *s);
uint64_t cpu_stack_base(const struct kvm_sregs *s);
/* The linear address SS:RSP names, as wide as the stack segment makes it. */
uint64_t cpu_stack_top(const struct kvm_regs *r, const struct kvm_sregs *s);
/* TF set or cleared in the RFLAGS image a PUSHF left at SS:RSP (guest memory): 0, or -1 if unreachable. */
int cpu_pushed_tf(const struct cpu_view *v, bool tf);
unsigned cpu_stack_width(const struct kvm_sregs *s);
/* Stack pointer arithmetic masked to the width this mode uses. */
static inline uint64_t cpu_sp_add(const struct kvm_sregs *s, uint64_t sp, int64_t d)
{
    uint64_t r = sp + (uint64_t)d;
    return cpu_stack_width(s) == 64 ? r : (uint32_t)r;
}
static inline int cpu_cpl(const struct kvm_sregs *s)
{
    return (s->cr0 & 1) ? (s->cs.selector & 3) : 0;
}
static inline void cpu_paging(const struct kvm_sregs *s, struct gmem_paging *pg)
{
    *pg = (struct gmem_paging){ s->cr0, s->cr3, s->cr4, s->efer };
}
/*
 * Does fetching the instruction at linear `lin` take a byte from the
 * guest-physical page `page`?  Its first byte, or the last an instruction
 * may have where that lies on the next page.
 */
bool cpu_fetch_touches(const struct cpu_view *v, uint64_t lin, uint64_t page);
/* len bytes at linear `lin` through the guest's page tables; 0 or -1. */
int cpu_read_linear(const struct cpu_view *v, uint64_t lin, void *buf, size_t len);
/*
 * Up to ZYDIS_MAX_INSTRUCTION_LENGTH bytes at linear `lin`, through the
 * guest's page tables; fewer where the code runs into an unmapped page.
 * Returns how many (0: none readable).
 */
size_t cpu_fetch(const struct cpu_view *v, uint64_t lin, uint8_t *buf);
/* The instruction at `lin`, decoded in the vCPU's mode; -1 with *why set. */
int cpu_decode(const struct cpu_view *v, uint64_t lin, ZydisDecodedInstruction *in,
               ZydisDecodedOperand *ops, const char **why);
/*
 * The same, not copied: valid until this thread's next decode of another
 * address (the planner's, under gmem_memo_begin, where the bytes cannot
 * change).
 */
int cpu_decode_ref(const struct cpu_view *v, uint64_t lin, const ZydisDecodedInstruction **in,
                   const ZydisDecodedOperand **ops, const char **why);
/*
 * The exception fetching and decoding the instruction at `lin` raises when
 * it does not decode: 14 (#PF) where its bytes run into memory that cannot
 * be read, 13 (#GP) past 15 bytes, 6 (#UD) for an encoding that is no
 * instruction (a lock prefix it cannot take, an opcode that does not exist
 * in this mode); -1 when it decodes.
 */
int cpu_undecodable_vector(const struct cpu_view *v, uint64_t lin);
/* A general-purpose register's value (64/32/16 bits, AL..BL, RIP): 0, or -1 if not one. */
int cpu_register(const struct kvm_regs *r, ZydisRegister reg, uint64_t *val);
/* The segment register Zydis names (DS for none). */
const struct kvm_segment *cpu_segment(const struct kvm_sregs *s, ZydisRegister r);
/*
 * The linear address a memory operand names, as it reads: effective address
 * (RIP-relative from the instruction at regs->rip), plus the segment's base
 * where the mode applies one, truncated to 32 bits outside 64-bit mode.
 */
int cpu_operand_address(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                        const ZydisDecodedOperand *op, uint64_t *lin);
/*
 * Zydis gives a push's or a call's store as [rsp] (a hidden operand): its
 * bytes land below RSP, up to two slots for a far call's.
 */
bool cpu_store_below_sp(const ZydisDecodedOperand *op);
/* A REP-prefixed instruction: true, and its count (RCX, ECX or CX by address size) in *n. */
bool cpu_rep_count(const struct cpu_view *v, const ZydisDecodedInstruction *in, uint64_t *n);
/*
 * The linear address maps onto the local APIC's or the I/O APIC's page
 * (x86/pc.h): a store there may make an interrupt deliverable at once.
 */
bool cpu_lin_irqchip(const struct cpu_view *v, uint64_t lin);
/*
 * ...and so may this instruction: such a store, a WRMSR to an x2APIC
 * register, MOV to CR8, OUT (CPU_IRQ_ANY); CPU_IRQ_RAISE where the guest
 * raises an interrupt itself or lowers its priority: a write to the local
 * APIC's ICR or TPR (either mode), SELF IPI, CR8.  An EOI is only ANY: a
 * guest that took its timer's interrupt and ends it gets the next one when
 * the tracer paces it, not at once (eventinj's self-IPIs are RAISE).
 */
enum cpu_irq { CPU_IRQ_NONE, CPU_IRQ_ANY, CPU_IRQ_RAISE };
enum cpu_irq cpu_irq_change(const struct cpu_view *v, const ZydisDecodedInstruction *in,
                            const ZydisDecodedOperand *ops);
/*
 * The linear bytes the instruction at `lin` stores, as one range over all
 * its memory writes (a push's and a call's below the stack pointer, two
 * slots for a far call's): [*lo, *lo + *len), *len 0 if it stores nothing
 * or does not decode.
 */
void cpu_stores(const struct cpu_view *v, uint64_t lin, uint64_t *lo, uint64_t *len);
/* Base of a code segment named by selector, as a far transfer would load it. */
int cpu_selector_base(const struct cpu_view *v, uint16_t sel, uint64_t *base);
/* Linear address of the handler for `vector` from the guest's IDT, or -1. */
int cpu_idt_handler(const struct cpu_view *v, unsigned vector, uint64_t *handler);
/*
 * Where a far JMP or CALL to sel:off goes, from the descriptor the selector
 * names: a code segment (its base + off) or a call gate (the gate's
 * target).  0: *target; 1: the branch raises *vector before it is taken
 * (a null or out-of-table selector, a data or system segment: #GP; not
 * present: #NP), with the selector as its error code; -1: not known (an
 * LDT, a task switch, unreadable tables).  Privilege checks are left out.
 */
int cpu_far_destination(const struct cpu_view *v, uint16_t sel, uint64_t off, uint64_t *target,
                        int *vector);
/* The privilege level a gate lets INT n in from (its DPL), or -1 (none, not present, real mode). */
int cpu_idt_gate_dpl(const struct cpu_view *v, unsigned vector);
/* The IST slot a 64-bit gate switches to (1-7), 0 for none, -1 outside long mode or unreadable. */
int cpu_idt_gate_ist(const struct cpu_view *v, unsigned vector);

#endif
