/* SPDX-License-Identifier: MIT */
/* A tiny MMIO bus: devices claim guest-physical ranges, the vCPU loop dispatches. */
#ifndef VBTS_CORE_MMIO_H
#define VBTS_CORE_MMIO_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;

struct mmio_device {
    const char *name;
    uint64_t base;
    uint64_t len;
    void *opaque;
    /* data holds len (1..8) bytes, little-endian; fill it on a read. */
    void (*access)(struct mmio_device *dev, struct vcpu *cpu, uint64_t off, uint8_t *data,
                   uint32_t len, bool is_write);
};

#define MMIO_MAX_DEVICES 8

struct mmio_bus {
    int n;
    struct mmio_device *dev[MMIO_MAX_DEVICES];
};

int mmio_register(struct mmio_bus *bus, struct mmio_device *dev);
/* Unclaimed addresses read as all ones and ignore writes, as on an empty bus. */
void mmio_access(struct mmio_bus *bus, struct vcpu *cpu, uint64_t gpa, uint8_t *data,
                 uint32_t len, bool is_write);

#endif
