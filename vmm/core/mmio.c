/* SPDX-License-Identifier: MIT */
#include "core/mmio.h"

#include <string.h>

#include "core/error.h"

int mmio_register(struct mmio_bus *bus, struct mmio_device *dev)
{
    if (dev->len == 0 || dev->base + dev->len < dev->base)
        return error_fail("MMIO range of %s is empty or wraps", dev->name);
    for (int i = 0; i < bus->n; i++) {
        const struct mmio_device *o = bus->dev[i];
        if (dev->base < o->base + o->len && o->base < dev->base + dev->len)
            return error_fail("MMIO 0x%llx+0x%llx of %s overlaps %s",
                              (unsigned long long)dev->base, (unsigned long long)dev->len,
                              dev->name, o->name);
    }
    if (bus->n == MMIO_MAX_DEVICES)
        return error_fail("MMIO bus full registering %s", dev->name);
    bus->dev[bus->n++] = dev;
    return 0;
}

void mmio_access(struct mmio_bus *bus, struct vcpu *cpu, uint64_t gpa, uint8_t *data,
                 uint32_t len, bool is_write)
{
    if (len > 8)
        len = 8;
    for (int i = 0; i < bus->n; i++) {
        struct mmio_device *d = bus->dev[i];
        if (gpa < d->base || gpa - d->base >= d->len)
            continue;
        d->access(d, cpu, gpa - d->base, data, len, is_write);
        return;
    }
    if (!is_write)
        memset(data, 0xff, len);
}
