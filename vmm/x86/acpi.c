/* SPDX-License-Identifier: MIT */
/*
 * Minimal ACPI for a Linux guest.  Why ACPI rather than an MP table: the
 * MADT gives the kernel its CPUs and I/O APIC just as an MP table would, and
 * the FADT + \_S5 also give it a way to power off (SLP_EN in PM1a_CNT),
 * which is how `poweroff` ends a run with status 0.
 *
 * Layout in the reserved area at 0xe0000: RSDP, XSDT, FADT, FACS, DSDT,
 * MADT.  Interrupts: KVM's default GSI routing maps ISA IRQ n to I/O APIC
 * pin n, which is also what the kernel assumes without overrides, so the
 * only override is the SCI's (IRQ 9, level, active high: active low would
 * read the idle line as asserted).
 */
#include <string.h>

#include "x86/acpi.h"
#include "vbts/le.h"
#include "x86/pc.h"

#define OFF_RSDP 0x000
#define OFF_XSDT 0x040
#define OFF_FADT 0x100
#define OFF_FACS 0x240     /* 64-byte aligned */
#define OFF_DSDT 0x300
#define OFF_MADT 0x400

#define HDR_LEN 36

static uint8_t checksum(const uint8_t *p, size_t len)
{
    uint8_t s = 0;
    while (len--)
        s += *p++;
    return (uint8_t)-s;
}

static void header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev)
{
    memcpy(t, sig, 4);
    vbts_put32(t + 4, len);
    t[8] = rev;
    memcpy(t + 10, "VBTS  ", 6);         /* OEM ID */
    memcpy(t + 16, "VBTSVM  ", 8);       /* OEM table ID */
    vbts_put32(t + 24, 1);                    /* OEM revision */
    memcpy(t + 28, "VBTS", 4);           /* creator ID */
    vbts_put32(t + 32, 1);
}

static void finish(uint8_t *t)
{
    uint32_t len = vbts_le32(t + 4);
    t[9] = 0;
    t[9] = checksum(t, len);
}

static uint32_t build_madt(uint8_t *t, int ncpus)
{
    uint8_t *p = t + HDR_LEN;
    vbts_put32(p, (uint32_t)LAPIC_BASE);
    vbts_put32(p + 4, 1);                     /* PCAT_COMPAT: there are 8259s (KVM's) */
    p += 8;
    for (int i = 0; i < ncpus; i++, p += 8) {
        p[0] = 0;                        /* processor local APIC */
        p[1] = 8;
        p[2] = (uint8_t)i;               /* ACPI processor UID */
        p[3] = (uint8_t)i;               /* APIC ID: CPUID leaf 1 EBX[31:24] */
        vbts_put32(p + 4, 1);                 /* enabled */
    }
    p[0] = 1;                            /* I/O APIC */
    p[1] = 12;
    p[2] = (uint8_t)ncpus;               /* its ID, after the CPUs' */
    p[3] = 0;
    vbts_put32(p + 4, IOAPIC_ADDR);
    vbts_put32(p + 8, 0);                     /* GSI base */
    p += 12;
    p[0] = 2;                            /* interrupt source override */
    p[1] = 10;
    p[2] = 0;                            /* ISA */
    p[3] = ACPI_SCI_IRQ;
    vbts_put32(p + 4, ACPI_SCI_IRQ);
    vbts_put16(p + 8, 0x000d);                /* active high, level triggered */
    p += 10;
    uint32_t len = (uint32_t)(p - t);
    header(t, "APIC", len, 4);
    finish(t);
    return len;
}

static void build_fadt(uint8_t *t, uint64_t base)
{
    const uint32_t len = 276;            /* ACPI 6.0 FADT */
    memset(t, 0, len);
    header(t, "FACP", len, 6);
    vbts_put32(t + 36, (uint32_t)(base + OFF_FACS));   /* FIRMWARE_CTRL */
    vbts_put32(t + 40, (uint32_t)(base + OFF_DSDT));   /* DSDT */
    vbts_put16(t + 46, ACPI_SCI_IRQ);
    /* SMI_CMD = 0: ACPI mode is always on, there is nothing to switch. */
    vbts_put32(t + 56, ACPI_PM1A_EVT_PORT);
    vbts_put32(t + 64, ACPI_PM1A_CNT_PORT);
    t[88] = 4;                           /* PM1_EVT_LEN */
    t[89] = 2;                           /* PM1_CNT_LEN */
    vbts_put16(t + 96, 0x0fff);               /* P_LVL2_LAT > 100: no C2 */
    vbts_put16(t + 98, 0x0fff);               /* P_LVL3_LAT > 1000: no C3 */
    /* IAPC_BOOT_ARCH: VGA not present (no 8042 bit: no keyboard to probe). */
    vbts_put16(t + 109, 1u << 2);
    /* Flags: WBINVD, PROC_C1, no fixed power and sleep buttons. */
    vbts_put32(t + 112, (1u << 0) | (1u << 2) | (1u << 4) | (1u << 5));
    vbts_put64(t + 132, base + OFF_FACS);     /* X_FIRMWARE_CTRL */
    vbts_put64(t + 140, base + OFF_DSDT);     /* X_DSDT */
    /* X_PM1a blocks left zero: ACPICA derives them from the 32-bit ones. */
    finish(t);
}

static uint32_t build_dsdt(uint8_t *t)
{
    /* Name (_S5, Package (4) { 5, 5, 0, 0 }): SLP_TYPa/b for soft-off. */
    static const uint8_t aml[] = {
        0x08, '_', 'S', '5', '_',
        0x12, 0x08, 0x04,
        0x0a, ACPI_S5_SLP_TYP, 0x0a, ACPI_S5_SLP_TYP, 0x00, 0x00,
    };
    uint32_t len = HDR_LEN + sizeof(aml);
    header(t, "DSDT", len, 2);
    memcpy(t + HDR_LEN, aml, sizeof(aml));
    finish(t);
    return len;
}

uint64_t acpi_build(struct gmem *mem, int ncpus)
{
    uint64_t base = ACPI_TABLES_ADDR;
    uint8_t *a = gmem_ptr(mem, base, ACPI_TABLES_SIZE);
    if (!a || ncpus < 1 || OFF_MADT + HDR_LEN + 8 + 8ull * ncpus + 22 > ACPI_TABLES_SIZE)
        return 0;
    memset(a, 0, ACPI_TABLES_SIZE);

    build_fadt(a + OFF_FADT, base);

    uint8_t *facs = a + OFF_FACS;
    memcpy(facs, "FACS", 4);
    vbts_put32(facs + 4, 64);
    facs[32] = 2;                        /* version */

    build_dsdt(a + OFF_DSDT);
    build_madt(a + OFF_MADT, ncpus);

    uint8_t *xsdt = a + OFF_XSDT;
    header(xsdt, "XSDT", HDR_LEN + 16, 1);
    vbts_put64(xsdt + HDR_LEN, base + OFF_FADT);
    vbts_put64(xsdt + HDR_LEN + 8, base + OFF_MADT);
    finish(xsdt);

    uint8_t *rsdp = a + OFF_RSDP;
    memcpy(rsdp, "RSD PTR ", 8);
    memcpy(rsdp + 9, "VBTS  ", 6);
    rsdp[15] = 2;                        /* ACPI 2.0+: use the XSDT */
    vbts_put32(rsdp + 16, 0);                 /* no RSDT */
    vbts_put32(rsdp + 20, 36);
    vbts_put64(rsdp + 24, base + OFF_XSDT);
    rsdp[8] = checksum(rsdp, 20);
    rsdp[32] = checksum(rsdp, 36);
    return base + OFF_RSDP;
}
