/* SPDX-License-Identifier: MIT */
/*
 * 8250 UART, output only for now: enough for a guest to print through COM1
 * by polling LSR.  Registers other than THR/LSR/IIR just hold what the guest
 * wrote so that probes reading them back see a UART.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iobus.h"
#include "vbts.h"

#define UART_THR 0
#define UART_IIR 2
#define UART_LCR 3
#define UART_LSR 5
#define UART_MSR 6
#define UART_LCR_DLAB 0x80
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_IIR_NO_INT 0x01

struct serial8250 {
    struct io_device dev;
    int out_fd;
    uint8_t regs[8];
    uint8_t dll, dlm;
};

static void serial_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size)
{
    struct serial8250 *s = dev->opaque;
    (void)cpu;
    memset(data, 0, size);
    if (off <= 1 && (s->regs[UART_LCR] & UART_LCR_DLAB)) {
        data[0] = off == 0 ? s->dll : s->dlm;
        return;
    }
    switch (off) {
    case UART_THR: data[0] = 0; break;  /* no input yet: receive buffer empty */
    case UART_IIR: data[0] = UART_IIR_NO_INT; break;
    case UART_LSR: data[0] = UART_LSR_THRE | UART_LSR_TEMT; break;
    case UART_MSR: data[0] = 0xb0; break; /* DCD, DSR, CTS: a cable is there */
    default: data[0] = s->regs[off]; break;
    }
}

static void serial_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data, int size)
{
    struct serial8250 *s = dev->opaque;
    (void)cpu;
    (void)size;
    if (off <= 1 && (s->regs[UART_LCR] & UART_LCR_DLAB)) {
        if (off == 0)
            s->dll = data[0];
        else
            s->dlm = data[0];
        return;
    }
    if (off == UART_THR) {
        /* Console output is best effort: a closed stdout must not stop the guest. */
        ssize_t r;
        do
            r = write(s->out_fd, data, 1);
        while (r < 0 && errno == EINTR);
        return;
    }
    s->regs[off] = data[0];
}

static void serial_release(struct io_device *dev)
{
    free(dev->opaque);
}

int serial8250_register(struct iobus *bus, uint16_t base, int out_fd)
{
    struct serial8250 *s = calloc(1, sizeof(*s));
    if (!s)
        return vbts_fail("out of memory");
    s->out_fd = out_fd;
    s->dev = (struct io_device){ .name = "8250 serial", .base = base, .len = 8,
                                 .opaque = s, .in = serial_in, .out = serial_out,
                                 .release = serial_release };
    if (iobus_register(bus, &s->dev) < 0) {
        free(s);
        return -1;
    }
    return 0;
}
