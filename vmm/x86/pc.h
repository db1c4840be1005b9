/* SPDX-License-Identifier: MIT */
/* Where a PC's interrupt controllers sit in guest-physical memory. */
#ifndef VBTS_X86_PC_H
#define VBTS_X86_PC_H

#define LAPIC_BASE   0xfee00000ull
#define LAPIC_SIZE   0x1000
#define IOAPIC_ADDR  0xfec00000u

#endif
