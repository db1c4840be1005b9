/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE            /* pipe2 */
#include "devices/console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "core/vm.h"
#include "devices/serial8250.h"

#define CTRL_A 0x01

static struct {
    struct vm *vm;
    struct io_device *uart;
    int in_fd;
    int stop_pipe[2];
    pthread_t thread;
    bool running;
    bool raw;
    struct termios saved;
} con = { .stop_pipe = { -1, -1 } };

static void restore_tty(void)
{
    if (con.raw) {
        tcsetattr(con.in_fd, TCSAFLUSH, &con.saved);
        con.raw = false;
    }
}

/* Hands bytes to the UART, waiting while its FIFO is full (the guest reads slowly). */
static bool deliver(const uint8_t *buf, size_t n)
{
    while (n) {
        if (vm_ending(con.vm))
            return false;
        size_t k = serial8250_rx_push(con.uart, buf, n);
        buf += k;
        n -= k;
        if (n) {
            struct pollfd p = { .fd = con.stop_pipe[0], .events = POLLIN };
            if (poll(&p, 1, 5) > 0)
                return false;
        }
    }
    return true;
}

static void *reader(void *arg)
{
    (void)arg;
    bool escape = false;
    for (;;) {
        struct pollfd p[2] = { { .fd = con.in_fd, .events = POLLIN },
                               { .fd = con.stop_pipe[0], .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        if (p[1].revents)
            return NULL;
        uint8_t buf[64], out[64];
        ssize_t r = read(con.in_fd, buf, sizeof(buf));
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return NULL;            /* EOF or error: no more input, the guest goes on */
        size_t n = 0;
        for (ssize_t i = 0; i < r; i++) {
            if (!con.raw) {
                out[n++] = buf[i];
            } else if (escape) {
                escape = false;
                if (buf[i] == 'x' || buf[i] == 'X') {
                    vm_request_end(con.vm, VM_END_SIGNAL, 130, "quit from the console (Ctrl-A x)");
                    return NULL;
                }
                out[n++] = buf[i];  /* Ctrl-A Ctrl-A, or Ctrl-A then anything: passed on */
            } else if (buf[i] == CTRL_A) {
                escape = true;
            } else {
                out[n++] = buf[i];
            }
        }
        if (!deliver(out, n))
            return NULL;
    }
}

int console_start(struct vm *vm, struct io_device *uart, int in_fd)
{
    con.vm = vm;
    con.uart = uart;
    con.in_fd = in_fd;
    if (pipe2(con.stop_pipe, O_CLOEXEC) < 0)
        return error_fail_errno("pipe");
    if (isatty(in_fd) && tcgetattr(in_fd, &con.saved) == 0) {
        struct termios t = con.saved;
        cfmakeraw(&t);
        t.c_oflag |= OPOST | ONLCR;    /* our own messages still start lines properly */
        if (tcsetattr(in_fd, TCSAFLUSH, &t) == 0) {
            con.raw = true;
            atexit(restore_tty);        /* die() and every other exit path */
        }
    }
    int e = pthread_create(&con.thread, NULL, reader, NULL);
    if (e) {
        restore_tty();
        errno = e;
        return error_fail_errno("cannot start the console thread");
    }
    con.running = true;
    return 0;
}

void console_stop(void)
{
    if (con.running) {
        ssize_t r = write(con.stop_pipe[1], "x", 1);
        (void)r;
        pthread_join(con.thread, NULL);
        con.running = false;
    }
    for (int i = 0; i < 2; i++) {
        if (con.stop_pipe[i] >= 0)
            close(con.stop_pipe[i]);
        con.stop_pipe[i] = -1;
    }
    restore_tty();
}
