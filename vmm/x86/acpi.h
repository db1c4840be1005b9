/* SPDX-License-Identifier: MIT */
/*
 * The firmware tables a Linux guest needs: ACPI RSDP, XSDT, FADT (+FACS),
 * a DSDT that only declares \_S5 (so the kernel can power off), and a MADT
 * listing every vCPU's local APIC and KVM's I/O APIC (so it starts the APs).
 */
#ifndef VBTS_X86_ACPI_H
#define VBTS_X86_ACPI_H

#include <stdint.h>

#include "core/gmem.h"

/* Where the tables go: the reserved BIOS area (boot/linux.h). */
#define ACPI_TABLES_ADDR    0xe0000ull
#define ACPI_TABLES_SIZE    0x10000ull

/* Fixed-feature PM registers (devices/acpi_pm.c), in I/O space. */
#define ACPI_PM1A_EVT_PORT  0x600     /* PM1 status (2 bytes) and enable (2 bytes) */
#define ACPI_PM1A_CNT_PORT  0x604     /* PM1 control (2 bytes) */
#define ACPI_SCI_IRQ        9
#define ACPI_S5_SLP_TYP     5         /* the value \_S5 gives for SLP_TYPa */


/* Builds the tables for `ncpus` vCPUs; returns the RSDP's address, or 0. */
uint64_t acpi_build(struct gmem *mem, int ncpus);

#endif
