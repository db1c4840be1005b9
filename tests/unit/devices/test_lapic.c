/* SPDX-License-Identifier: MIT */
/* The monitor's local APIC page: registers, LVT PMI masking on a PMI. */
#include <criterion/criterion.h>
#include <string.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "devices/lapic.h"
#include "x86/pc.h"

static uint32_t rd(struct vm *vm, struct vcpu *c, uint32_t off)
{
    uint8_t v[4];
    mmio_access(&vm->mmio, c, LAPIC_BASE + off, v, 4, false);
    return (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
}

static void wr(struct vm *vm, struct vcpu *c, uint32_t off, uint32_t x)
{
    uint8_t v[4] = { (uint8_t)x, (uint8_t)(x >> 8), (uint8_t)(x >> 16), (uint8_t)(x >> 24) };
    mmio_access(&vm->mmio, c, LAPIC_BASE + off, v, 4, true);
}

Test(lapic, registers_and_pmi_masking)
{
    struct vm vm;
    vm_init(&vm);
    struct kvm_run run[2];
    memset(run, 0, sizeof(run));
    struct vcpu cpus[2] = { { .vm = &vm, .index = 0, .fd = -1, .run = &run[0] },
                            { .vm = &vm, .index = 1, .fd = -1, .run = &run[1] } };
    vm.vcpus = cpus;
    vm.ncpus = 2;
    struct lapic_dev *a = lapic_attach(&vm);
    cr_assert_not_null(a);
    cr_assert_eq(rd(&vm, &cpus[1], 0x20), 1u << 24, "APIC ID per vCPU");
    cr_assert_eq(rd(&vm, &cpus[0], 0x340) & (1u << 16), 1u << 16, "LVT PMI masked after reset");
    wr(&vm, &cpus[0], 0x340, 0x41);
    cr_assert_eq(rd(&vm, &cpus[0], 0x340), 0x41);
    cr_assert_eq(rd(&vm, &cpus[1], 0x340) & (1u << 16), 1u << 16, "per vCPU");
    lapic_raise_pmi(a, &cpus[0]);
    cr_assert_eq(rd(&vm, &cpus[0], 0x340), 0x41 | (1u << 16), "a PMI masks LVT PMI, as Intel's");
    wr(&vm, &cpus[0], 0x20, 0x12345678);
    cr_assert_eq(rd(&vm, &cpus[0], 0x20), 0, "APIC ID is read-only");
    lapic_free(a);
    vm_fini(&vm);
}
