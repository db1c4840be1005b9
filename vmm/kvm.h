/* SPDX-License-Identifier: MIT */
/* KVM plumbing: every failing ioctl is reported by name. */
#ifndef VBTS_KVM_H
#define VBTS_KVM_H

#include <linux/kvm.h>

#include "vbts.h"

int kvm_vm_create(struct vm *vm, const char *kvm_path, uint64_t mem_size, int ncpus);
void kvm_vm_destroy(struct vm *vm);

/* 32-bit protected mode, flat segments, paging off: the multiboot entry state. */
int kvm_x86_enter_protected32(struct vcpu *cpu, uint32_t eip, uint32_t eax, uint32_t ebx);

/* 64-bit mode, paging on, boot GDT, RSI = zero page: the Linux 64-bit entry state. */
struct linux_boot;
int kvm_x86_enter_long64(struct vcpu *cpu, const struct linux_boot *lb);

/* Set the level of an in-kernel irqchip input (ISA IRQ / GSI). */
int kvm_irq_line(struct vm *vm, int irq, int level);

/* Run every vCPU on its own thread until the VM ends; returns the exit status. */
int vcpu_run_all(struct vm *vm);

/* True on hosts known to reflect single-step #DB at CPL3 into the guest. */
bool kvm_host_cannot_step_user(void);

#endif
