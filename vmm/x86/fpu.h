/* SPDX-License-Identifier: MIT */
/*
 * A vCPU's x87 and SSE state as struct kvm_fpu, read and written through
 * KVM's XSAVE image where the host has one.
 *
 * KVM_GET_FPU and KVM_SET_FPU read and write the legacy area of that image
 * and leave its XSTATE_BV alone.  While the x87 state is in its initial
 * configuration (before the guest first loads a register, and again after
 * FNINIT) its XSTATE_BV bit is 0: XRSTOR then loads the initial state
 * whatever KVM_SET_FPU wrote, and KVM_GET_FPU shows what the area held
 * before.  Measured on kvm_pvm, whose emulator runs fninit and fnstsw on
 * the live state: a state set with KVM_SET_FPU before the guest's first
 * x87 load was not what its fnstsw read, and its fninit did not show in
 * KVM_GET_FPU.  Here the image's XSTATE_BV says which part is live.
 */
#ifndef VBTS_X86_FPU_H
#define VBTS_X86_FPU_H

#include <linux/kvm.h>

struct vcpu;

/* The vCPU's x87/SSE state.  0, or -1 with the error set (naming the ioctl). */
int fpu_get(struct vcpu *cpu, struct kvm_fpu *f);
/* Makes *f the vCPU's x87/SSE state, live for its next instruction.  0 or -1. */
int fpu_set(struct vcpu *cpu, const struct kvm_fpu *f);

/*
 * The x87/SSE state an XSAVE image in KVM's (standard) layout holds: a part
 * its XSTATE_BV marks initial is the initial state, whatever its area holds.
 */
void fpu_from_xsave(const void *image, struct kvm_fpu *f);
/* Writes *f into the image's legacy area and marks x87 and SSE live in its XSTATE_BV. */
void fpu_into_xsave(const struct kvm_fpu *f, void *image);

#endif
