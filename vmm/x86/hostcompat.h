/* SPDX-License-Identifier: MIT */
/*
 * Host compatibility (docs/host-compat.md): some KVM hosts cannot run a few
 * instructions a Linux guest executes at CPL0 (kvm_pvm emulates CPL0 code
 * and fails on them with KVM_EXIT_INTERNAL_ERROR, "emulation failure").
 * vbts works around them in two ways, only on such hosts:
 *  - kernel command line options that keep the kernel off an instruction
 *    (clearcpuid=cx16, noxsave): hostcompat_cmdline();
 *  - completing the failed instruction as the CPU would (int3, int n: the
 *    guest's own handler runs): hostcompat_complete(), called on the
 *    emulation failure, which counts what it did for hostcompat_summary();
 *  - the SYSCALL breakpoint (user-mode SYSCALL never reaches CPL0 there)
 *    and a halted state the host leaves behind single-stepping.
 */
#ifndef VBTS_X86_HOSTCOMPAT_H
#define VBTS_X86_HOSTCOMPAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vm;
struct vcpu;
struct cpu_view;

/* What host-compat keeps per vCPU (x86/arch.h). */
struct hostcompat_vcpu {
    uint64_t retried_rip;       /* RIP last retried, so that a real failure is not retried forever */
    uint64_t pf_bp;             /* the #PF handler the SYSCALL breakpoint watches, 0 if none yet */
    bool stepping_over;         /* one single-step past that breakpoint */
    bool followed;              /* a tracer sees every instruction the vCPU runs (hostcompat_follow)... */
    bool recheck;               /* ...and has seen it load an MSR or the IDT since LSTAR was last read */
};

/*
 * Until the kernel has set LSTAR and its IDT, host-compat reads them
 * before every KVM_RUN (a vCPU ioctl, as dear as an exit on kvm_pvm).  A
 * tracer that sees every instruction says so (on) and says when one
 * loaded an MSR or the IDT (hostcompat_recheck, once it has run): then
 * they are read only after such an instruction.
 */
void hostcompat_follow(struct vcpu *cpu, bool on);
void hostcompat_recheck(struct vcpu *cpu);

/* Options this host needs on a Linux command line, or NULL if none. */
const char *hostcompat_cmdline(void);

/*
 * Registers host-compat's handlers on a Linux guest's VM: emulation
 * failures it can complete, the SYSCALL breakpoint (armed before a
 * KVM_RUN once the kernel has set LSTAR; it yields to single-stepping,
 * x86/debug.c), and the stale-halt repair when stepping ends.
 */
int hostcompat_install(struct vm *vm);

/*
 * Only the completion of what the host's emulator fails and a CPU runs
 * (int3, int n, into, fwait, sysret), for any guest: a multiboot kernel's
 * software interrupts on kvm_pvm.
 */
int hostcompat_install_completion(struct vm *vm);

/*
 * Is the vCPU halted at a HLT, waiting for an interrupt?  A vCPU kvm_pvm
 * left halted though it runs on (a wake-up while single-stepped) is made
 * runnable here, and is not.  v: its registers, or NULL to read them.
 */
bool hostcompat_halted(struct vcpu *cpu, const struct cpu_view *v);

/* "vbts: host-compat: int3 emulated 3 times" on `f`, if any handler fired. */
void hostcompat_summary(FILE *f);

#endif
