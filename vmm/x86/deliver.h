/* SPDX-License-Identifier: MIT */
/*
 * Delivering an exception or interrupt as the CPU does, in software: the
 * guest's IDT gate, the handler's code segment, the stack (the TSS's for a
 * privilege change or an IST), the frame, and the new RIP, RSP, RFLAGS,
 * CS, SS (and CR2 for #PF), on a register snapshot and guest memory.
 *
 * Why: on hosts that single-step with RFLAGS.TF (VMX, SVM), delivering an
 * event clears TF and the handler runs with no step exits until its IRET.
 * Delivered here, the vCPU stands at the handler's first instruction and
 * every branch of the handler is stepped (docs/engine.md).
 *
 * Long mode (64-bit gates), protected mode (32- and 16-bit interrupt and
 * trap gates) and real mode (the IVT).  What is not modelled (task gates,
 * virtual-8086 mode, LDT selectors; a delivery that itself faults, but
 * for deliver_nested) is refused with a reason, never approximated.
 */
#ifndef VBTS_X86_DELIVER_H
#define VBTS_X86_DELIVER_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/gmem.h"

enum deliver_kind {
    DELIVER_FAULT,          /* an exception the instruction raised: the frame returns to it */
    DELIVER_TRAP,           /* int3, into, int1: the frame returns after it */
    DELIVER_SOFT,           /* int n: after it, and the gate's DPL is checked */
    DELIVER_INTERRUPT,      /* external: the frame returns to the next instruction */
    DELIVER_NMI,
};

struct delivery {
    enum deliver_kind kind;
    uint8_t vector;
    bool has_error;
    uint32_t error;
    uint64_t cr2;           /* #PF: the faulting linear address */
    uint8_t insn_len;       /* TRAP, SOFT: the instruction's length */
};

/* Whether an exception pushes an error code (outside real mode). */
bool deliver_has_error_code(unsigned vector);

/*
 * Deliver on r and s, writing the frame into guest memory: 0 and the
 * handler's linear address in *handler, or -1 with *why set (nothing
 * written).  A software interrupt through a gate whose DPL is below CPL
 * becomes the #GP the CPU raises instead (d is not changed; *vector says
 * which vector was delivered).
 */
int deliver_event(const struct gmem *mem, struct kvm_regs *r, struct kvm_sregs *s,
                  const struct delivery *d, uint64_t *handler, unsigned *vector,
                  const char **why);

/*
 * deliver_event, and where the delivery faults on the way in (its gate,
 * its code segment, its stack's page) the fault the CPU raises instead,
 * as the CPU delivers it: serially, or as a double fault (SDM vol. 3,
 * 6.15).  -2 (nothing changed) where the CPU shuts down: a fault while
 * delivering #DF.  What deliver_event does not model and a #PF on a frame
 * across pages are refused (-1).
 */
int deliver_nested(const struct gmem *mem, struct kvm_regs *r, struct kvm_sregs *s,
                   const struct delivery *d, uint64_t *handler, unsigned *vector,
                   const char **why);

/* Does delivering d fault on the way in with an exception the CPU raises (not one refused as not modelled)? */
bool deliver_raises(const struct gmem *mem, const struct kvm_regs *r, const struct kvm_sregs *s,
                    const struct delivery *d);

/*
 * Would delivering exception `vector` on r and s fault on the way in (its
 * gate, its code segment, its stack), or is it one deliver_event does not
 * model?  Then *why says which.  Nothing is changed.
 */
bool deliver_would_fault(const struct gmem *mem, const struct kvm_regs *r, const struct kvm_sregs *s,
                         unsigned vector, const char **why);

/* The MSRs SYSCALL reads, and the vendor, which decides compatibility mode's. */
struct deliver_syscall_msrs {
    uint64_t star, lstar, fmask, cstar;
    bool compat_cstar;      /* AMD: from compatibility mode to CSTAR (Intel raises #UD) */
};

/*
 * SYSCALL in long mode, as the CPU runs it, on r and s: RCX the next
 * instruction, R11 RFLAGS (RF clear), RFLAGS masked with FMASK, CS and SS
 * from STAR at CPL0 (64-bit code), RIP = LSTAR, or CSTAR from
 * compatibility mode on AMD.  0, or -1 with *why (nothing changed) in
 * compatibility mode on Intel (#UD), outside long mode (legacy SYSCALL:
 * not modelled) or when EFER.SCE is clear (#UD).
 */
int deliver_syscall(struct kvm_regs *r, struct kvm_sregs *s, const struct deliver_syscall_msrs *m,
                    uint8_t insn_len, const char **why);

/* What a step started from, to look for a frame the CPU pushed during it. */
struct deliver_before {
    const struct kvm_regs *regs;    /* registers and segments before the step */
    const struct kvm_sregs *sregs;
    uint64_t next_rip;              /* the instruction's end (a trap's return address) */
    uint64_t wrote, wrote_len;      /* linear bytes the instruction itself stored, which are its data */
    uint64_t guest_frame;           /* a frame (its RIP slot) whose TF is the guest's own, or 0 */
    /*
     * What a frame the CPU pushed holds in its RFLAGS image, where the
     * caller knows it (false: anything): one returning to the instruction
     * (a fault, an event before it), RFLAGS as they were but RF and TF;
     * one returning after it, their system flags (IF, IOPL, NT, VM, AC,
     * VIF, VIP, ID).  Old bytes below the stack are told from a frame by
     * these: a far call's return address over a pushed value has the
     * shape of a frame.
     */
    bool fault_flags_exact;
    bool trap_flags_kept;
};

/*
 * The CPU delivered an event during the step, on its own: a frame returning
 * to the instruction (or after it) with TF set in its RFLAGS image, where
 * the CPU pushes frames for this privilege (the stack, RSP0, the ISTs),
 * and the image valid (bit 1 set, the reserved bits clear).
 * While a host steps with RFLAGS.TF, only such a delivery leaves TF in a
 * frame: frames delivered in software have it clear, and vbts clears it
 * where PUSHF and SYSCALL copied it.  That handler ran unseen.  A frame
 * over bytes the instruction itself stored (wrote_len) is not one: after a
 * handler returned to the instruction, its push can put a TF-like value
 * into an old frame's RFLAGS slot.
 */
bool deliver_seen(const struct gmem *mem, const struct deliver_before *b);
/*
 * The same frame, and TF cleared in it: an event the CPU delivered while
 * the monitor had set TF (kvm_pvm's user-mode steps, trace/ustep.c), so
 * that the handler's IRET does not bring the monitor's TF back.
 */
bool deliver_untrap(const struct gmem *mem, const struct deliver_before *b);

/* The segment register a GDT selector loads, as KVM holds it.  0, or -1 with *why. */
int deliver_segment(const struct gmem *mem, const struct kvm_sregs *s, uint16_t sel,
                    struct kvm_segment *seg, const char **why);

#endif
