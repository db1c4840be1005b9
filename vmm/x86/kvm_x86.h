/* SPDX-License-Identifier: MIT */
/* KVM on x86: the VM and vCPUs as a PC, and the CPU states guests start in. */
#ifndef VBTS_X86_KVM_X86_H
#define VBTS_X86_KVM_X86_H

#include <stdbool.h>
#include <stdint.h>

struct vm;
struct vcpu;

struct kvm_x86_config {
    bool irqchip;               /* in-kernel PIC, I/O APIC, local APICs and PIT */
    bool ds_cpuid;              /* CPUID announces DS/DTES64 (guest BTS) */
    bool no_steal_time;         /* CPUID hides KVM's steal time (a traced guest: docs/engine.md) */
};

/* The VM, its RAM and ncpus vCPUs with CPUID; the x86 state in vm->arch. */
int kvm_x86_create(struct vm *vm, const char *kvm_path, uint64_t mem_size, int ncpus,
                   const struct kvm_x86_config *c);
void kvm_x86_destroy(struct vm *vm);
/* CPUID hides the PV features that make hypercalls: this host never completes one. */
bool kvm_x86_hypercalls_hidden(const struct vm *vm);

/* 32-bit protected mode, flat segments, paging off: the multiboot entry state. */
int kvm_x86_enter_protected32(struct vcpu *cpu, uint32_t eip, uint32_t eax, uint32_t ebx);

/* 64-bit mode with paging, a GDT of the caller's, RSI set: Linux's 64-bit entry. */
struct kvm_x86_long64 {
    uint64_t rip, rsi, cr3, gdt_base;
    uint16_t gdt_limit, cs, ds;
};
int kvm_x86_enter_long64(struct vcpu *cpu, const struct kvm_x86_long64 *e);

/*
 * Guest memory KVM itself writes when it enters this vCPU: the kvmclock
 * page, steal time, async page faults, PV EOI, each where the guest put
 * it (their MSRs).  Up to max ranges, guest-physical; how many, or -1.
 */
struct kvm_x86_area {
    uint64_t gpa, len;
};
#define KVM_X86_MAX_AREAS 5
int kvm_x86_host_writes(struct vcpu *cpu, struct kvm_x86_area *a, int max);

/* Set the level of an in-kernel irqchip input (ISA IRQ / GSI). */
int kvm_x86_irq_line(struct vm *vm, int irq, int level);

#endif
