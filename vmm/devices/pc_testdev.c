/* SPDX-License-Identifier: MIT */
#include "devices/pc_testdev.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/vm.h"
#include "x86/kvm_x86.h"

#define PORT_BASE    0xe0      /* data 0xe0-0xe3, flush 0xe4-0xe7, data byte-wise 0xe8-0xeb */
#define PORT_FLUSH   4
#define PORT_BYTES   8
#define IRQ_BASE     0x2000
#define IRQ_LINES    24
#define IOMEM_BASE   0xff000000ull
#define IOMEM_LEN    0x10000

struct testdev {
    struct io_device ports, irq;
    struct mmio_device iomem;
    struct vm *vm;
    int refs;                   /* the port bus's entries for it: the last one released frees it */
    pthread_mutex_t lock;
    uint32_t data;
    uint8_t buf[IOMEM_LEN];
};

/* The data register as QEMU's has it: the access's bytes at its offset within the register. */
static uint32_t lane(uint16_t off, int size, int *shift)
{
    *shift = (off & 3) * 8;
    return (uint32_t)((size == 4 ? 0xffffffffull : (1ull << (size * 8)) - 1) << *shift);
}

static void ports_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size)
{
    struct testdev *d = dev->opaque;
    (void)cpu;
    uint32_t v = 0;
    if (off < PORT_FLUSH || off >= PORT_BYTES) {
        int shift;
        uint32_t mask = lane(off, size, &shift);
        pthread_mutex_lock(&d->lock);
        v = (d->data & mask) >> shift;
        pthread_mutex_unlock(&d->lock);
    }
    memcpy(data, &v, (size_t)size);
}

static void ports_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data,
                      int size)
{
    struct testdev *d = dev->opaque;
    (void)cpu;
    if (off >= PORT_FLUSH && off < PORT_BYTES)
        return;     /* QEMU drops the page's host mapping once: nothing the guest can see */
    uint32_t v = 0;
    memcpy(&v, data, (size_t)size);
    int shift;
    uint32_t mask = lane(off, size, &shift);
    pthread_mutex_lock(&d->lock);
    d->data = (d->data & ~mask) | (uint32_t)((uint64_t)v << shift);
    pthread_mutex_unlock(&d->lock);
}

static void irq_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data,
                    int size)
{
    struct testdev *d = dev->opaque;
    (void)cpu;
    if (size == 1)          /* byte accesses only, as QEMU's */
        kvm_x86_irq_line(d->vm, off, data[0] != 0);
}

static void iomem_access(struct mmio_device *dev, struct vcpu *cpu, uint64_t off, uint8_t *data,
                         uint32_t len, bool is_write)
{
    struct testdev *d = dev->opaque;
    (void)cpu;
    if (off >= IOMEM_LEN || len > IOMEM_LEN - off) {
        if (!is_write)
            memset(data, 0, len);
        return;
    }
    pthread_mutex_lock(&d->lock);
    if (is_write)
        memcpy(d->buf + off, data, len);
    else
        memcpy(data, d->buf + off, len);
    pthread_mutex_unlock(&d->lock);
}

static void release(struct io_device *dev)
{
    struct testdev *d = dev->opaque;
    if (--d->refs > 0)
        return;
    pthread_mutex_destroy(&d->lock);
    free(d);
}

int pc_testdev_register(struct vm *vm)
{
    struct testdev *d = calloc(1, sizeof(*d));
    if (!d)
        return error_fail("out of memory");
    pthread_mutex_init(&d->lock, NULL);
    d->vm = vm;
    d->ports = (struct io_device){ .name = "pc-testdev", .base = PORT_BASE, .len = 12, .opaque = d,
                                   .in = ports_in, .out = ports_out, .release = release };
    d->irq = (struct io_device){ .name = "pc-testdev IRQ lines", .base = IRQ_BASE, .len = IRQ_LINES,
                                 .opaque = d, .out = irq_out, .release = release };
    d->iomem = (struct mmio_device){ .name = "pc-testdev memory", .base = IOMEM_BASE, .len = IOMEM_LEN,
                                     .opaque = d, .access = iomem_access };
    d->refs = 1;
    if (iobus_register(&vm->io, &d->ports) < 0) {
        release(&d->ports);
        return -1;
    }
    /* From here the port bus frees it, at its last entry's release. */
    if (iobus_register(&vm->io, &d->irq) < 0)
        return -1;
    d->refs++;
    return mmio_register(&vm->mmio, &d->iomem);
}
