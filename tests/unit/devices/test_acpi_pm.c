/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>

#include "core/vm.h"
#include "devices/acpi_pm.h"
#include "x86/acpi.h"

static int poweroffs;

static void on_event(struct vm *vm, enum vm_guest_event ev, const char *how, void *ctx)
{
    (void)vm;
    (void)ctx;
    cr_assert_eq(ev, VM_GUEST_POWEROFF);
    cr_assert_str_eq(how, "ACPI S5");
    poweroffs++;
}

Test(acpi_pm, s5_powers_off)
{
    struct vm vm;
    vm_init(&vm);
    vm.on_guest_event = on_event;
    struct vcpu cpu = { .vm = &vm };
    cr_assert_eq(acpi_pm_register(&vm.io), 0);
    uint8_t v[2];
    iobus_access(&vm.io, &cpu, ACPI_PM1A_CNT_PORT, 0, v, 2);
    cr_assert_eq(v[0] & 1, 1, "SCI_EN: always in ACPI mode");
    uint16_t s3 = (3u << 10) | (1u << 13);
    v[0] = (uint8_t)s3;
    v[1] = (uint8_t)(s3 >> 8);
    iobus_access(&vm.io, &cpu, ACPI_PM1A_CNT_PORT, 1, v, 2);
    cr_assert_eq(poweroffs, 0, "only S5 powers off");
    uint16_t s5 = (ACPI_S5_SLP_TYP << 10) | (1u << 13);
    v[0] = (uint8_t)s5;
    v[1] = (uint8_t)(s5 >> 8);
    iobus_access(&vm.io, &cpu, ACPI_PM1A_CNT_PORT, 1, v, 2);
    cr_assert_eq(poweroffs, 1);
    iobus_access(&vm.io, &cpu, ACPI_PM1A_CNT_PORT, 0, v, 2);
    cr_assert_eq(v[1] & 0x20, 0, "SLP_EN reads as zero");
    iobus_destroy(&vm.io);
    vm_fini(&vm);
}
