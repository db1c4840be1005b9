/* SPDX-License-Identifier: MIT */
/*
 * ACPI fixed-feature PM1a event and control registers (ports from the
 * FADT, x86/acpi.h).  The kernel powers off by writing SLP_TYP (the value
 * \_S5 gives) with SLP_EN to PM1a_CNT; that ends the run with status 0.
 * SCI_EN reads as set: the machine is always in ACPI mode.
 */
#include <stdlib.h>
#include <string.h>

#include "devices/acpi_pm.h"

#include "core/vm.h"
#include "x86/acpi.h"

#define PM1_CNT_SCI_EN    (1u << 0)
#define PM1_CNT_SLP_TYP(v) (((v) >> 10) & 7u)
#define PM1_CNT_SLP_EN    (1u << 13)

struct acpi_pm {
    struct io_device dev;
    uint8_t reg[6];         /* PM1 status, PM1 enable, PM1 control (16 bits each) */
};

static void pm_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size)
{
    struct acpi_pm *pm = dev->opaque;
    (void)cpu;
    for (int i = 0; i < size; i++) {
        unsigned o = off + i;
        data[i] = o < sizeof(pm->reg) ? pm->reg[o] : 0xff;
        if (o == 4)
            data[i] |= PM1_CNT_SCI_EN;
    }
}

static void pm_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data, int size)
{
    struct acpi_pm *pm = dev->opaque;
    for (int i = 0; i < size; i++) {
        unsigned o = off + i;
        if (o < 2)
            pm->reg[o] &= ~data[i];         /* status bits are write-1-to-clear */
        else if (o < sizeof(pm->reg))
            pm->reg[o] = data[i];
    }
    uint16_t cnt = pm->reg[4] | pm->reg[5] << 8;
    if (off + size > 5 && (cnt & PM1_CNT_SLP_EN)) {
        pm->reg[5] &= ~(PM1_CNT_SLP_EN >> 8);   /* SLP_EN reads as zero */
        if (PM1_CNT_SLP_TYP(cnt) == ACPI_S5_SLP_TYP)
            vm_guest_event(cpu->vm, VM_GUEST_POWEROFF, "ACPI S5");
    }
}

static void pm_release(struct io_device *dev)
{
    free(dev->opaque);
}

int acpi_pm_register(struct iobus *bus)
{
    struct acpi_pm *pm = calloc(1, sizeof(*pm));
    if (!pm)
        return error_fail("out of memory");
    pm->dev = (struct io_device){ .name = "ACPI PM1", .base = ACPI_PM1A_EVT_PORT, .len = 6,
                                  .opaque = pm, .in = pm_in, .out = pm_out,
                                  .release = pm_release };
    if (iobus_register(bus, &pm->dev) < 0) {
        free(pm);
        return -1;
    }
    return 0;
}
