/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <sys/ioctl.h>

#include "kvm.h"
#include "lapic.h"
#include "trace.h"

#define APIC_ID      0x020
#define APIC_VERSION 0x030
#define APIC_EOI     0x0b0
#define APIC_SVR     0x0f0
#define APIC_LVT_PMI 0x340
#define LVT_MASKED   (1u << 16)
#define LVT_DM_MASK  (7u << 8)
#define LVT_DM_NMI   (4u << 8)

void lapic_init(struct lapic *a, int apic_id)
{
    memset(a, 0, sizeof(*a));
    a->reg[APIC_ID / 16] = (uint32_t)apic_id << 24;
    a->reg[APIC_VERSION / 16] = 0x50014;   /* integrated APIC, 6 LVT entries */
    a->reg[APIC_SVR / 16] = 0xff;
    a->reg[APIC_LVT_PMI / 16] = LVT_MASKED;
    a->pending_vector = -1;
}

bool lapic_mmio(struct vcpu *cpu, uint64_t gpa, uint8_t *data, uint32_t len, bool is_write)
{
    if (gpa < LAPIC_BASE || gpa >= LAPIC_BASE + LAPIC_SIZE)
        return false;
    uint32_t off = gpa - LAPIC_BASE;
    /* Registers are 32-bit, aligned; other accesses read zero and write nothing. */
    if (len != 4 || (off & 15)) {
        if (!is_write)
            memset(data, 0, len > 8 ? 8 : len);
        return true;
    }
    uint32_t *r = &cpu->lapic.reg[off / 16];
    if (!is_write) {
        memcpy(data, r, 4);
        return true;
    }
    uint32_t v;
    memcpy(&v, data, 4);
    switch (off) {
    case APIC_ID:
    case APIC_VERSION:
    case APIC_EOI:
        break;
    default:
        *r = v;
        break;
    }
    return true;
}

void lapic_raise_pmi(struct vcpu *cpu)
{
    uint32_t *lvt = &cpu->lapic.reg[APIC_LVT_PMI / 16];
    if (*lvt & LVT_MASKED)
        return;
    if ((*lvt & LVT_DM_MASK) == LVT_DM_NMI) {
        if (ioctl(cpu->fd, KVM_NMI) == 0)
            trace_note_event(cpu, 2);
    } else {
        cpu->lapic.pending_vector = *lvt & 0xff;
    }
    /* As Intel CPUs do on a PMI: the handler unmasks to get the next one. */
    *lvt |= LVT_MASKED;
}

void lapic_inject_pending(struct vcpu *cpu)
{
    struct kvm_run *run = cpu->run;
    if (cpu->lapic.pending_vector < 0)
        return;
    if (run->ready_for_interrupt_injection && run->if_flag) {
        struct kvm_interrupt irq = { .irq = (uint32_t)cpu->lapic.pending_vector };
        if (ioctl(cpu->fd, KVM_INTERRUPT, &irq) == 0) {
            trace_note_event(cpu, cpu->lapic.pending_vector);
            cpu->lapic.pending_vector = -1;
        }
        run->request_interrupt_window = 0;
    } else {
        run->request_interrupt_window = 1;
    }
}
