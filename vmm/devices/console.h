/* SPDX-License-Identifier: MIT */
/*
 * The guest's console input: stdin feeds the UART's receive FIFO.  On a
 * terminal, stdin is put in raw mode (restored at exit, however vbts ends)
 * and Ctrl-A x quits, as in QEMU; Ctrl-A Ctrl-A sends one Ctrl-A.  When
 * stdin is not a terminal its bytes are fed as they come and EOF simply
 * ends the input: the guest runs on, headless.
 */
#ifndef VBTS_DEVICES_CONSOLE_H
#define VBTS_DEVICES_CONSOLE_H

struct io_device;
struct vm;

int console_start(struct vm *vm, struct io_device *uart, int in_fd);
/* Stops the reader and restores the terminal (idempotent). */
void console_stop(void);

#endif
