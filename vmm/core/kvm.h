/* SPDX-License-Identifier: MIT */
/* KVM plumbing common to every architecture: every failing ioctl is named. */
#ifndef VBTS_CORE_KVM_H
#define VBTS_CORE_KVM_H

#include <stdint.h>

struct vm;

/* Open the KVM device, check the API, create the VM and its RAM (memory slots). */
int kvm_open_vm(struct vm *vm, const char *kvm_path, uint64_t mem_size);
/* Create the vCPUs and map their kvm_run pages. */
int kvm_create_vcpus(struct vm *vm, int ncpus);
/* Close everything kvm_open_vm and kvm_create_vcpus made (idempotent). */
void kvm_close_vm(struct vm *vm);
/* KVM_CHECK_EXTENSION on the VM: the capability's value, 0 if absent. */
int kvm_extension(const struct vm *vm, long cap);

#endif
