/* SPDX-License-Identifier: MIT */
#include "devices/lapic.h"

#include <stdlib.h>
#include <string.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "x86/event.h"
#include "x86/pc.h"

#define APIC_ID      0x020
#define APIC_VERSION 0x030
#define APIC_EOI     0x0b0
#define APIC_SVR     0x0f0
#define APIC_LVT_PMI 0x340
#define LVT_MASKED   (1u << 16)
#define LVT_DM_MASK  (7u << 8)
#define LVT_DM_NMI   (4u << 8)

struct lapic {
    uint32_t reg[LAPIC_SIZE / 16];   /* registers sit on 16-byte boundaries */
    int pending_vector;              /* fixed interrupt waiting for IF=1, or -1 */
};

struct lapic_dev {
    struct mmio_device mmio;
    int ncpus;
    struct lapic cpu[];
};

static void reset(struct lapic *a, int apic_id)
{
    memset(a, 0, sizeof(*a));
    a->reg[APIC_ID / 16] = (uint32_t)apic_id << 24;
    a->reg[APIC_VERSION / 16] = 0x50014;   /* integrated APIC, 6 LVT entries */
    a->reg[APIC_SVR / 16] = 0xff;
    a->reg[APIC_LVT_PMI / 16] = LVT_MASKED;
    a->pending_vector = -1;
}

static void access(struct mmio_device *dev, struct vcpu *cpu, uint64_t off, uint8_t *data,
                   uint32_t len, bool is_write)
{
    struct lapic_dev *d = dev->opaque;
    /* Registers are 32-bit, aligned; other accesses read zero and write nothing. */
    if (len != 4 || (off & 15)) {
        if (!is_write)
            memset(data, 0, len);
        return;
    }
    uint32_t *r = &d->cpu[cpu->index].reg[off / 16];
    if (!is_write) {
        memcpy(data, r, 4);
        return;
    }
    if (off != APIC_ID && off != APIC_VERSION && off != APIC_EOI)
        memcpy(r, data, 4);
}

/* Before KVM_RUN: inject a pending interrupt once the guest can take it. */
static int inject_pending(struct vcpu *cpu, void *ctx)
{
    struct lapic *a = &((struct lapic_dev *)ctx)->cpu[cpu->index];
    struct kvm_run *run = cpu->run;
    if (a->pending_vector < 0)
        return 0;
    if (run->ready_for_interrupt_injection && run->if_flag) {
        struct event ev = { .kind = EVENT_INTERRUPT, .vector = (uint8_t)a->pending_vector };
        if (event_raise(cpu, &ev) == 0)
            a->pending_vector = -1;
        run->request_interrupt_window = 0;
    } else {
        run->request_interrupt_window = 1;
    }
    return 0;
}

void lapic_raise_pmi(struct lapic_dev *d, struct vcpu *cpu)
{
    struct lapic *a = &d->cpu[cpu->index];
    uint32_t *lvt = &a->reg[APIC_LVT_PMI / 16];
    if (*lvt & LVT_MASKED)
        return;
    if ((*lvt & LVT_DM_MASK) == LVT_DM_NMI) {
        struct event ev = { .kind = EVENT_NMI, .vector = 2 };
        event_raise(cpu, &ev);
    } else {
        a->pending_vector = *lvt & 0xff;
    }
    /* As Intel CPUs do on a PMI: the handler unmasks to get the next one. */
    *lvt |= LVT_MASKED;
}

struct lapic_dev *lapic_attach(struct vm *vm)
{
    struct lapic_dev *d = calloc(1, sizeof(*d) + (size_t)vm->ncpus * sizeof(d->cpu[0]));
    if (!d) {
        error_fail("out of memory");
        return NULL;
    }
    d->ncpus = vm->ncpus;
    for (int i = 0; i < vm->ncpus; i++)
        reset(&d->cpu[i], i);
    d->mmio = (struct mmio_device){ .name = "local APIC", .base = LAPIC_BASE, .len = LAPIC_SIZE,
                                    .opaque = d, .access = access };
    if (mmio_register(&vm->mmio, &d->mmio) < 0 ||
        vcpu_on_hook(vm, VCPU_HOOK_PRE_RUN, inject_pending, d) < 0) {
        free(d);
        return NULL;
    }
    return d;
}

void lapic_free(struct lapic_dev *d)
{
    free(d);
}
