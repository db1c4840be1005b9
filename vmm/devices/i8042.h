/* SPDX-License-Identifier: MIT */
/* The keyboard controller, for its one job here: reset (vm_guest_event). */
#ifndef VBTS_DEVICES_I8042_H
#define VBTS_DEVICES_I8042_H

#include "core/iobus.h"

int i8042_register(struct iobus *bus);

#endif
