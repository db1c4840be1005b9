/* SPDX-License-Identifier: MIT */
/*
 * Just enough of a local APIC, at its MMIO page, for the performance
 * monitoring interrupt: the guest programs LVT PMI (vector, delivery mode,
 * mask) and guest BTS raises it when the guest's buffer reaches its
 * threshold.  Used when KVM has no in-kernel irqchip (multiboot guests).
 */
#ifndef VBTS_DEVICES_LAPIC_H
#define VBTS_DEVICES_LAPIC_H

struct vm;
struct vcpu;
struct lapic_dev;

/* One APIC per vCPU: the MMIO page, and a hook that injects a pending PMI. */
struct lapic_dev *lapic_attach(struct vm *vm);
void lapic_free(struct lapic_dev *a);
/* The PMI, as LVT PMI says: an NMI, or a fixed interrupt when IF allows. */
void lapic_raise_pmi(struct lapic_dev *a, struct vcpu *cpu);

#endif
