/* SPDX-License-Identifier: MIT */
/* The UART: transmit to the fd, the console watcher, receive FIFO, registers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "devices/serial8250.h"

static struct iobus bus;
static int fds[2];

static void setup(void)
{
    memset(&bus, 0, sizeof(bus));
    cr_assert_eq(pipe(fds), 0);
}

static void teardown(void)
{
    iobus_destroy(&bus);
    close(fds[0]);
    close(fds[1]);
}

TestSuite(serial8250, .init = setup, .fini = teardown);

static uint8_t in(uint16_t port)
{
    uint8_t v;
    iobus_access(&bus, NULL, port, 0, &v, 1);
    return v;
}

static void out(uint16_t port, uint8_t v)
{
    iobus_access(&bus, NULL, port, 1, &v, 1);
}

static char lines[4][64];
static int nlines;

static void on_line(void *ctx, const char *line)
{
    (void)ctx;
    snprintf(lines[nlines++ % 4], sizeof(lines[0]), "%s", line);
}

Test(serial8250, transmit_and_lines)
{
    nlines = 0;
    struct serial_config c = { .out_fd = fds[1], .irq = -1, .on_line = on_line };
    cr_assert_not_null(serial8250_attach(&bus, 0x3f8, &c));
    cr_assert_eq(in(0x3fd) & 0x60, 0x60, "THR empty and transmitter idle: polling works");
    const char *msg = "Kernel panic - not syncing\r\nok\n";
    for (const char *p = msg; *p; p++)
        out(0x3f8, (uint8_t)*p);
    char got[64] = "";
    cr_assert_eq(read(fds[0], got, sizeof(got)), (ssize_t)strlen(msg));
    cr_assert_str_eq(got, msg);
    cr_assert_eq(nlines, 2);
    cr_assert_str_eq(lines[0], "Kernel panic - not syncing");
    cr_assert_str_eq(lines[1], "ok");
}

Test(serial8250, receive_fifo)
{
    struct io_device *d;
    struct serial_config c = { .out_fd = fds[1], .irq = -1 };
    cr_assert_not_null(d = serial8250_attach(&bus, 0x3f8, &c));
    cr_assert_eq(in(0x3fd) & 1, 0, "nothing received");
    uint8_t buf[20];
    memset(buf, 'a', sizeof(buf));
    cr_assert_eq(serial8250_rx_push(d, buf, sizeof(buf)), 16, "a 16-byte FIFO");
    cr_assert_eq(in(0x3fd) & 1, 1, "data ready");
    cr_assert_eq(in(0x3f8), 'a');
    out(0x3fa, 0x03);                 /* FCR: enable, clear the receive FIFO */
    cr_assert_eq(in(0x3fd) & 1, 0);
    cr_assert_eq(in(0x3fa) & 0xc0, 0xc0, "FIFOs enabled: a 16550A");
}

Test(serial8250, divisor_latch_and_scratch)
{
    struct serial_config c = { .out_fd = fds[1], .irq = -1 };
    cr_assert_not_null(serial8250_attach(&bus, 0x3f8, &c));
    out(0x3fb, 0x80);
    out(0x3f8, 0x01);
    out(0x3f9, 0x02);
    cr_assert_eq(in(0x3f8), 0x01);
    cr_assert_eq(in(0x3f9), 0x02);
    out(0x3fb, 0x03);
    out(0x3ff, 0x5a);
    cr_assert_eq(in(0x3ff), 0x5a);
    char c0;
    cr_assert_eq(write(fds[1], "x", 1), 1);
    cr_assert_eq(read(fds[0], &c0, 1), 1, "DLL writes with DLAB set transmitted nothing");
    cr_assert_eq(c0, 'x');
}
