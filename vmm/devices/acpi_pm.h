/* SPDX-License-Identifier: MIT */
/* ACPI PM1 registers: power-off through S5 (vm_guest_event). */
#ifndef VBTS_DEVICES_ACPI_PM_H
#define VBTS_DEVICES_ACPI_PM_H

#include "core/iobus.h"

int acpi_pm_register(struct iobus *bus);

#endif
