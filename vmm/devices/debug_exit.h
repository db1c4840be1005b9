/* SPDX-License-Identifier: MIT */
/*
 * QEMU's isa-debug-exit: a write of V ends the run with status (V << 1) | 1,
 * so test guests report pass/fail the same way under vbts and under QEMU.
 */
#ifndef VBTS_DEVICES_DEBUG_EXIT_H
#define VBTS_DEVICES_DEBUG_EXIT_H

#include <stdint.h>

#include "core/iobus.h"

int debug_exit_register(struct iobus *bus, uint16_t base);

#endif
