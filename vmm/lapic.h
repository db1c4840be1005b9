/* SPDX-License-Identifier: MIT */
/*
 * Just enough of a local APIC, at its MMIO page, for the performance
 * monitoring interrupt: the guest programs LVT PMI (vector, delivery mode,
 * mask) and vbts raises it when the guest's BTS buffer reaches its threshold.
 * Used when KVM has no in-kernel irqchip (multiboot guests).
 */
#ifndef VBTS_LAPIC_H
#define VBTS_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#define LAPIC_BASE   0xfee00000ull
#define LAPIC_SIZE   0x1000

struct vcpu;

struct lapic {
    uint32_t reg[LAPIC_SIZE / 16];   /* registers sit on 16-byte boundaries */
    int pending_vector;              /* fixed interrupt waiting for IF=1, or -1 */
};

void lapic_init(struct lapic *a, int apic_id);
/* true if `gpa` is the APIC page and the access was handled. */
bool lapic_mmio(struct vcpu *cpu, uint64_t gpa, uint8_t *data, uint32_t len, bool is_write);
void lapic_raise_pmi(struct vcpu *cpu);
/* Before KVM_RUN: inject a pending interrupt if the guest can take it. */
void lapic_inject_pending(struct vcpu *cpu);

#endif
