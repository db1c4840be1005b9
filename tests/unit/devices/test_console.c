/* SPDX-License-Identifier: MIT */
/* Console input that is not a terminal: bytes reach the UART; EOF only ends the input. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "core/vm.h"
#include "devices/console.h"
#include "devices/serial8250.h"

Test(console, pipe_input_reaches_the_uart)
{
    struct vm vm;
    vm_init(&vm);
    int out[2], in[2];
    cr_assert_eq(pipe(out), 0);
    cr_assert_eq(pipe(in), 0);
    struct serial_config c = { .out_fd = out[1], .irq = -1 };
    struct io_device *uart = serial8250_attach(&vm.io, 0x3f8, &c);
    cr_assert_not_null(uart);
    cr_assert_eq(console_start(&vm, uart, in[0]), 0, "%s", error_last());
    cr_assert_eq(write(in[1], "hi", 2), 2);
    close(in[1]);
    uint8_t lsr = 0;
    for (int i = 0; i < 500 && !(lsr & 1); i++) {
        usleep(2000);
        iobus_access(&vm.io, NULL, 0x3fd, 0, &lsr, 1);
    }
    cr_assert_eq(lsr & 1, 1, "data ready");
    uint8_t ch;
    iobus_access(&vm.io, NULL, 0x3f8, 0, &ch, 1);
    cr_assert_eq(ch, 'h');
    console_stop();
    console_stop();         /* idempotent */
    cr_assert(!vm_ending(&vm), "EOF on stdin does not end the run");
    iobus_destroy(&vm.io);
    close(in[0]);
    close(out[0]);
    close(out[1]);
    vm_fini(&vm);
}
