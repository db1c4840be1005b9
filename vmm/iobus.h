/* SPDX-License-Identifier: MIT */
/* A tiny port-I/O bus: devices claim a port range, the vCPU loop dispatches. */
#ifndef VBTS_IOBUS_H
#define VBTS_IOBUS_H

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

/* The devices this monitor has (one file each). */
int serial8250_register(struct iobus *bus, uint16_t base, int out_fd);
int debug_exit_register(struct iobus *bus, uint16_t base);

/* A UART with an interrupt line and a console watcher (Linux guests). */
struct vm;
struct serial_config {
    int out_fd;
    struct vm *vm;
    int irq;                /* ISA IRQ raised through KVM_IRQ_LINE, or -1: polled only */
    void (*on_line)(struct vm *vm, const char *line);   /* each line printed, or NULL */
};
struct io_device *serial8250_attach(struct iobus *bus, uint16_t base,
                                    const struct serial_config *cfg);
/* Bytes received from the console; returns how many fitted in the FIFO. */
size_t serial8250_rx_push(struct io_device *dev, const uint8_t *buf, size_t n);

/* PC platform devices a Linux guest uses (dev_*.c). */
int acpi_pm_register(struct iobus *bus);        /* PM1 registers: power-off (S5) */
int i8042_register(struct iobus *bus);          /* keyboard controller: reset */
int cmos_rtc_register(struct iobus *bus);       /* CMOS clock at 0x70/0x71 */

#endif
