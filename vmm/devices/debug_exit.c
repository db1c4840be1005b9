/* SPDX-License-Identifier: MIT */
/*
 * QEMU's isa-debug-exit: a write of V ends the run with status (V << 1) | 1,
 * so test guests report pass/fail the same way under vbts and under QEMU.
 */
#include <stdlib.h>
#include <string.h>

#include "devices/debug_exit.h"

#include "core/vm.h"

static void debug_exit_out(struct io_device *dev, struct vcpu *cpu, uint16_t off,
                           const uint8_t *data, int size)
{
    uint32_t v = 0;
    (void)dev;
    (void)off;
    memcpy(&v, data, size);
    vm_request_end(cpu->vm, VM_END_DEBUG_EXIT, (int)(((v << 1) | 1) & 0xff),
                   "guest wrote 0x%x to the debug-exit port", v);
}

int debug_exit_register(struct iobus *bus, uint16_t base)
{
    static struct io_device dev = { .name = "debug-exit", .len = 1, .out = debug_exit_out };
    dev.base = base;
    return iobus_register(bus, &dev);
}
