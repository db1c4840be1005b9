/* SPDX-License-Identifier: MIT */
/*
 * CMOS RTC at 0x70 (index) / 0x71 (data), reading the host's UTC clock.
 * Why: without it the kernel reads 0xff for register A, whose "update in
 * progress" bit never clears, and waits on it.  Time registers are BCD,
 * 24-hour (register B = 0x02), and "valid RAM and time" (register D).
 * Other bytes are plain CMOS RAM.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "devices/cmos_rtc.h"

#include "core/vm.h"

struct cmos {
    struct io_device dev;
    pthread_mutex_t lock;
    uint8_t index;
    uint8_t ram[128];
};

static uint8_t bcd(int v) { return (uint8_t)((v / 10) << 4 | (v % 10)); }

static uint8_t cmos_read(struct cmos *c, uint8_t i)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    switch (i) {
    case 0x00: return bcd(tm.tm_sec > 59 ? 59 : tm.tm_sec);
    case 0x02: return bcd(tm.tm_min);
    case 0x04: return bcd(tm.tm_hour);
    case 0x06: return bcd(tm.tm_wday + 1);
    case 0x07: return bcd(tm.tm_mday);
    case 0x08: return bcd(tm.tm_mon + 1);
    case 0x09: return bcd(tm.tm_year % 100);
    case 0x32: return bcd(19 + tm.tm_year / 100);       /* century */
    case 0x0a: return 0x26;         /* 32.768 kHz, 1024 Hz; no update in progress */
    case 0x0b: return 0x02;         /* 24-hour, BCD, no interrupts */
    case 0x0c: return 0x00;         /* no interrupt flags */
    case 0x0d: return 0x80;         /* valid RAM and time */
    default: return c->ram[i & 0x7f];
    }
}

static void cmos_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size)
{
    struct cmos *c = dev->opaque;
    (void)cpu;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < size; i++)
        data[i] = off + i == 1 ? cmos_read(c, c->index) : 0xff;
    pthread_mutex_unlock(&c->lock);
}

static void cmos_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data, int size)
{
    struct cmos *c = dev->opaque;
    (void)cpu;
    (void)size;
    pthread_mutex_lock(&c->lock);
    if (off == 0)
        c->index = data[0] & 0x7f;      /* bit 7 is the NMI mask */
    else
        c->ram[c->index] = data[0];
    pthread_mutex_unlock(&c->lock);
}

static void cmos_release(struct io_device *dev)
{
    struct cmos *c = dev->opaque;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int cmos_rtc_register(struct iobus *bus)
{
    struct cmos *c = calloc(1, sizeof(*c));
    if (!c)
        return error_fail("out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->dev = (struct io_device){ .name = "CMOS RTC", .base = 0x70, .len = 2, .opaque = c,
                                 .in = cmos_in, .out = cmos_out, .release = cmos_release };
    if (iobus_register(bus, &c->dev) < 0) {
        cmos_release(&c->dev);
        return -1;
    }
    return 0;
}
