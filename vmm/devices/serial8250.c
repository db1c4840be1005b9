/* SPDX-License-Identifier: MIT */
/*
 * 16550A UART.  Transmission is instant: THR goes straight to out_fd, so
 * LSR always shows THRE|TEMT and a guest can print by polling (multiboot
 * stubs do).  With an interrupt line (Linux guests, in-kernel irqchip) the
 * UART also raises IRQ for "THR empty" and "data ready", as the kernel's
 * 8250 driver needs: it sends from its interrupt handler and receives only
 * there.  Received bytes come from serial8250_rx_push() (devices/console.c reads
 * stdin).  Registers not modelled just hold what the guest wrote, so that
 * probes reading them back see a UART.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/serial8250.h"

#include "core/vm.h"
#include "x86/kvm_x86.h"

#define UART_RBR 0          /* read: receive buffer; write: THR */
#define UART_IER 1
#define UART_IIR 2          /* read: interrupt identification; write: FCR */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_LCR_DLAB   0x80
#define UART_IER_RDI    0x01
#define UART_IER_THRI   0x02
#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI   0x02
#define UART_IIR_RDI    0x04
#define UART_IIR_FIFO   0xc0   /* "FIFOs enabled": what makes the driver say 16550A */
#define UART_FCR_ENABLE 0x01
#define UART_FCR_CLR_RX 0x02
#define UART_LSR_DR     0x01
#define UART_LSR_THRE   0x20
#define UART_LSR_TEMT   0x40

#define RX_FIFO 16

struct serial8250 {
    struct io_device dev;
    pthread_mutex_t lock;
    int out_fd;
    struct vm *vm;          /* for the interrupt line; NULL: polled only */
    int irq;
    int irq_level;
    void (*on_line)(void *ctx, const char *line);
    void *line_ctx;
    uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
    bool thr_ipending;      /* "THR empty" interrupt not yet acknowledged */
    uint8_t rx[RX_FIFO];
    unsigned rx_head, rx_count;
    char line[160];         /* the console line being printed, for on_line */
    size_t line_len;
};

static uint8_t iir(const struct serial8250 *s)
{
    uint8_t fifo = (s->fcr & UART_FCR_ENABLE) ? UART_IIR_FIFO : 0;
    if ((s->ier & UART_IER_RDI) && s->rx_count)
        return fifo | UART_IIR_RDI;
    if ((s->ier & UART_IER_THRI) && s->thr_ipending)
        return fifo | UART_IIR_THRI;
    return fifo | UART_IIR_NO_INT;
}

/* The line follows "an interrupt is pending", as on the chip; callers hold the lock. */
static void update_irq(struct serial8250 *s)
{
    int level = !(iir(s) & UART_IIR_NO_INT);
    if (!s->vm || level == s->irq_level)
        return;
    s->irq_level = level;
    kvm_x86_irq_line(s->vm, s->irq, level);
}

static void watch_line(struct serial8250 *s, uint8_t c)
{
    if (c == '\n' || s->line_len == sizeof(s->line) - 1) {
        s->line[s->line_len] = '\0';
        s->on_line(s->line_ctx, s->line);
        s->line_len = 0;
    }
    if (c != '\n' && c != '\r')
        s->line[s->line_len++] = (char)c;
}

static void transmit(struct serial8250 *s, uint8_t c)
{
    /* Console output is best effort: a closed stdout must not stop the guest. */
    ssize_t r;
    do
        r = write(s->out_fd, &c, 1);
    while (r < 0 && errno == EINTR);
    if (s->on_line)
        watch_line(s, c);
    /* Sent at once: the line drops for this write and rises again, an edge per burst. */
    s->thr_ipending = false;
    update_irq(s);
    s->thr_ipending = true;
    update_irq(s);
}

static void serial_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size)
{
    struct serial8250 *s = dev->opaque;
    (void)cpu;
    memset(data, 0, size);
    pthread_mutex_lock(&s->lock);
    if (off <= 1 && (s->lcr & UART_LCR_DLAB)) {
        data[0] = off == 0 ? s->dll : s->dlm;
        goto out;
    }
    switch (off) {
    case UART_RBR:
        if (s->rx_count) {
            data[0] = s->rx[s->rx_head];
            s->rx_head = (s->rx_head + 1) % RX_FIFO;
            s->rx_count--;
            update_irq(s);
        }
        break;
    case UART_IER: data[0] = s->ier; break;
    case UART_IIR:
        data[0] = iir(s);
        /* Reading IIR acknowledges "THR empty" when that is what it reports. */
        if ((data[0] & 0x0f) == UART_IIR_THRI) {
            s->thr_ipending = false;
            update_irq(s);
        }
        break;
    case UART_LCR: data[0] = s->lcr; break;
    case UART_MCR: data[0] = s->mcr; break;
    case UART_LSR: data[0] = UART_LSR_THRE | UART_LSR_TEMT | (s->rx_count ? UART_LSR_DR : 0); break;
    case UART_MSR: data[0] = 0xb0; break; /* DCD, DSR, CTS: a cable is there */
    default: data[0] = s->scr; break;
    }
out:
    pthread_mutex_unlock(&s->lock);
}

static void serial_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data, int size)
{
    struct serial8250 *s = dev->opaque;
    (void)cpu;
    (void)size;
    pthread_mutex_lock(&s->lock);
    if (off <= 1 && (s->lcr & UART_LCR_DLAB)) {
        if (off == 0)
            s->dll = data[0];
        else
            s->dlm = data[0];
        goto out;
    }
    switch (off) {
    case UART_RBR:
        transmit(s, data[0]);
        break;
    case UART_IER:
        /* Enabling "THR empty" while it is empty raises it at once, as on the chip. */
        if ((data[0] & UART_IER_THRI) && !(s->ier & UART_IER_THRI))
            s->thr_ipending = true;
        s->ier = data[0] & 0x0f;
        update_irq(s);
        break;
    case UART_IIR:
        s->fcr = data[0];
        if (data[0] & UART_FCR_CLR_RX)
            s->rx_head = s->rx_count = 0;
        update_irq(s);
        break;
    case UART_LCR: s->lcr = data[0]; break;
    case UART_MCR: s->mcr = data[0] & 0x1f; break;
    case UART_SCR: s->scr = data[0]; break;
    default: break;     /* LSR, MSR: read-only */
    }
out:
    pthread_mutex_unlock(&s->lock);
}

size_t serial8250_rx_push(struct io_device *dev, const uint8_t *buf, size_t n)
{
    struct serial8250 *s = dev->opaque;
    size_t done = 0;
    pthread_mutex_lock(&s->lock);
    /*
     * Held back until the driver enables receive interrupts: the kernel
     * clears the FIFO while it sets the port up, and piped input that came
     * early would be lost there.
     */
    if (s->vm && !(s->ier & UART_IER_RDI)) {
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    while (done < n && s->rx_count < RX_FIFO) {
        s->rx[(s->rx_head + s->rx_count) % RX_FIFO] = buf[done++];
        s->rx_count++;
    }
    update_irq(s);
    pthread_mutex_unlock(&s->lock);
    return done;
}

static void serial_release(struct io_device *dev)
{
    struct serial8250 *s = dev->opaque;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

struct io_device *serial8250_attach(struct iobus *bus, uint16_t base,
                                    const struct serial_config *cfg)
{
    struct serial8250 *s = calloc(1, sizeof(*s));
    if (!s) {
        error_fail("out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->out_fd = cfg->out_fd;
    s->vm = cfg->irq >= 0 ? cfg->vm : NULL;
    s->irq = cfg->irq;
    s->on_line = cfg->on_line;
    s->line_ctx = cfg->line_ctx;
    s->thr_ipending = true;     /* THR is empty from the start */
    s->dev = (struct io_device){ .name = "8250 serial", .base = base, .len = 8,
                                 .opaque = s, .in = serial_in, .out = serial_out,
                                 .release = serial_release };
    if (iobus_register(bus, &s->dev) < 0) {
        serial_release(&s->dev);
        return NULL;
    }
    return &s->dev;
}

int serial8250_register(struct iobus *bus, uint16_t base, int out_fd)
{
    struct serial_config cfg = { .out_fd = out_fd, .irq = -1 };
    return serial8250_attach(bus, base, &cfg) ? 0 : -1;
}
