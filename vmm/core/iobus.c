/* SPDX-License-Identifier: MIT */
#include "core/iobus.h"

#include <string.h>

#include "core/error.h"

int iobus_register(struct iobus *bus, struct io_device *dev)
{
    for (int i = 0; i < bus->n; i++) {
        const struct io_device *o = bus->dev[i];
        if (dev->base < o->base + o->len && o->base < dev->base + dev->len)
            return error_fail("I/O ports 0x%x-0x%x of %s overlap %s", dev->base,
                             dev->base + dev->len - 1, dev->name, o->name);
    }
    if (bus->n == IOBUS_MAX_DEVICES)
        return error_fail("I/O bus full registering %s", dev->name);
    bus->dev[bus->n++] = dev;
    return 0;
}

void iobus_destroy(struct iobus *bus)
{
    for (int i = 0; i < bus->n; i++)
        if (bus->dev[i]->release)
            bus->dev[i]->release(bus->dev[i]);
    bus->n = 0;
}

void iobus_access(struct iobus *bus, struct vcpu *cpu, uint16_t port, int is_out,
                  uint8_t *data, int size)
{
    for (int i = 0; i < bus->n; i++) {
        struct io_device *d = bus->dev[i];
        if (port < d->base || port - d->base >= d->len)
            continue;
        if (is_out) {
            if (d->out)
                d->out(d, cpu, port - d->base, data, size);
        } else if (d->in) {
            d->in(d, cpu, port - d->base, data, size);
        } else {
            memset(data, 0xff, size);
        }
        return;
    }
    if (!is_out)
        memset(data, 0xff, size);
}
