/* SPDX-License-Identifier: MIT */
/*
 * What this host's KVM can and cannot do, found once (docs/host-compat.md).
 * kvm_pvm, a software nested hypervisor, emulates CPL0 code and cannot
 * single-step CPL3 code; stock KVM (kvm_intel, kvm_amd) can.
 */
#ifndef VBTS_X86_HOST_H
#define VBTS_X86_HOST_H

#include <stdbool.h>

/* The CPU is AMD's (CPUID's vendor; KVM's guests see the same). */
bool host_is_amd(void);
/* The host's KVM is kvm_pvm. */
bool host_is_pvm(void);
/* The host can single-step CPL3 code. */
bool host_steps_user(void);
/* The name of the host's KVM module, for messages: kvm_pvm, kvm_amd, kvm_intel or kvm. */
const char *host_kvm_name(void);

/*
 * KVM maps guest memory with nested paging (kvm_amd npt, kvm_intel ept):
 * then the monitor may write guest page tables' pages behind KVM's back,
 * which shadow paging (kvm_pvm, npt=0) would not notice.
 */
bool host_tdp(void);
/*
 * Does a hardware breakpoint (KVM_GUESTDBG_USE_HW_BP) fire in a guest of
 * this host?  Asked once, of a throwaway VM made with the open KVM device:
 * 1 yes, 0 no, -1 the probe failed (error set).  QEMU's TCG emulation of
 * SVM never fires them (docs/host-compat.md).
 */
int host_breakpoints_fire(int kvm_fd);

/*
 * Does a hypercall (VMCALL or VMMCALL at CPL0) return to the guest?  Asked
 * once, of a throwaway VM: 1 yes, 0 no (it had not returned after 2 s:
 * kvm_pvm never completes one, and the vCPU spins in KVM_RUN), -1 the
 * probe failed (error set).  Linux's PV spinlocks, IPIs and yield use them.
 */
int host_hypercalls_complete(int kvm_fd);

#endif
