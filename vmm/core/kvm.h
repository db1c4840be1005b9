/* SPDX-License-Identifier: MIT */
/* KVM plumbing common to every architecture: every failing ioctl is named. */
#ifndef VBTS_CORE_KVM_H
#define VBTS_CORE_KVM_H

#include <stdbool.h>
#include <stdint.h>

struct vm;

/* Open the KVM device, check the API, create the VM and its RAM (memory slots). */
int kvm_open_vm(struct vm *vm, const char *kvm_path, uint64_t mem_size);
/* Create the vCPUs and map their kvm_run pages. */
int kvm_create_vcpus(struct vm *vm, int ncpus);
/* Close everything kvm_open_vm and kvm_create_vcpus made (idempotent). */
void kvm_close_vm(struct vm *vm);
/*
 * Give the RAM page at `gpa` a memory slot of its own, before any vCPU runs,
 * so that kvm_mem_hide() can take it from the guest and give it back.
 */
int kvm_mem_isolate(struct vm *vm, uint64_t gpa);
/*
 * Hide the isolated page or show it again.  While it is hidden the guest's
 * reads and writes of it exit as MMIO, which the core serves from RAM as if
 * nothing happened, and an instruction fetched from it fails in KVM's
 * emulator (KVM_EXIT_INTERNAL_ERROR): the only access that stands out.
 */
int kvm_mem_hide(struct vm *vm, bool hide);
/*
 * An instruction KVM's emulator cannot fetch or run exits to the monitor
 * (KVM_CAP_EXIT_ON_EMULATION_FAILURE): how a hidden page's fetches are
 * caught.  0, or -1 with the error set.
 */
int kvm_exit_on_emulation_failure(struct vm *vm, bool on);
/* KVM_CHECK_EXTENSION on the VM: the capability's value, 0 if absent. */
int kvm_extension(const struct vm *vm, long cap);

#endif
