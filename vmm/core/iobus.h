/* SPDX-License-Identifier: MIT */
/* A tiny port-I/O bus: devices claim a port range, the vCPU loop dispatches. */
#ifndef VBTS_CORE_IOBUS_H
#define VBTS_CORE_IOBUS_H

#include <stddef.h>
#include <stdint.h>

struct vcpu;

struct io_device {
    const char *name;
    uint16_t base;
    uint16_t len;
    void *opaque;
    /* size is 1, 2 or 4; data is the KVM I/O buffer, little-endian. */
    void (*in)(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size);
    void (*out)(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data, int size);
    void (*release)(struct io_device *dev);     /* frees the device, if it owns memory */
};

#define IOBUS_MAX_DEVICES 16

struct iobus {
    int n;
    struct io_device *dev[IOBUS_MAX_DEVICES];
};

int iobus_register(struct iobus *bus, struct io_device *dev);
void iobus_destroy(struct iobus *bus);
/* Unclaimed ports read as all ones and ignore writes, as on a PC. */
void iobus_access(struct iobus *bus, struct vcpu *cpu, uint16_t port, int is_out,
                  uint8_t *data, int size);

#endif
