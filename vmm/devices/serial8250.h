/* SPDX-License-Identifier: MIT */
/*
 * A 16550A UART on the port bus: transmit straight to a file descriptor,
 * receive from serial8250_rx_push(), and with an interrupt line the
 * "THR empty" and "data ready" interrupts the Linux driver needs.
 */
#ifndef VBTS_DEVICES_SERIAL8250_H
#define VBTS_DEVICES_SERIAL8250_H

#include <stddef.h>
#include <stdint.h>

#include "core/iobus.h"

struct vm;

struct serial_config {
    int out_fd;
    struct vm *vm;
    int irq;                /* ISA IRQ raised through KVM_IRQ_LINE, or -1: polled only */
    void (*on_line)(void *ctx, const char *line);   /* each line printed, or NULL */
    void *line_ctx;
};

struct io_device *serial8250_attach(struct iobus *bus, uint16_t base,
                                    const struct serial_config *cfg);
/* A polled UART with no interrupt line (multiboot guests). */
int serial8250_register(struct iobus *bus, uint16_t base, int out_fd);
/* Bytes received from the console; returns how many fitted in the FIFO. */
size_t serial8250_rx_push(struct io_device *dev, const uint8_t *buf, size_t n);

#endif
