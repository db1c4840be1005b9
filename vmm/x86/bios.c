/* SPDX-License-Identifier: MIT */
#include "x86/bios.h"

#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "vbts/le.h"

/* Where the handlers sit in the BIOS segment (the classic IBM offsets for the first two). */
#define OFF_IRET    0xff53u     /* any vector without a device */
#define OFF_TIMER   0xfea5u     /* IRQ0: ticks, EOI */
#define OFF_MASTER  0xfec0u     /* IRQ1-7: EOI to the master PIC */
#define OFF_SLAVE   0xfed0u     /* IRQ8-15: EOI to both */

#define VEC_MASTER  0x08        /* SeaBIOS's bases for IRQ0-7 and IRQ8-15 */
#define VEC_SLAVE   0x70

/* 16-bit code. */
static const uint8_t timer[] = {
    0x50,                           /* push ax */
    0x1e,                           /* push ds */
    0x31, 0xc0,                     /* xor ax, ax */
    0x8e, 0xd8,                     /* mov ds, ax */
    0xff, 0x06, 0x6c, 0x04,         /* inc word [0x46c] */
    0x75, 0x04,                     /* jnz .eoi */
    0xff, 0x06, 0x6e, 0x04,         /* inc word [0x46e] */
    0xb0, 0x20,                     /* .eoi: mov al, 0x20 */
    0xe6, 0x20,                     /* out 0x20, al */
    0x1f,                           /* pop ds */
    0x58,                           /* pop ax */
    0xcf,                           /* iret */
};
static const uint8_t master[] = { 0x50, 0xb0, 0x20, 0xe6, 0x20, 0x58, 0xcf };
static const uint8_t slave[] = { 0x50, 0xb0, 0x20, 0xe6, 0xa0, 0xe6, 0x20, 0x58, 0xcf };

static void code(struct gmem *mem, uint16_t off, const uint8_t *c, size_t n)
{
    memcpy(gmem_ptr(mem, ((uint64_t)BIOS_SEGMENT << 4) + off, n), c, n);
}

static void ivt(struct gmem *mem)
{
    uint8_t *t = gmem_ptr(mem, 0, 1024);
    for (unsigned v = 0; v < 256; v++) {
        uint16_t off = OFF_IRET;
        if (v == VEC_MASTER)
            off = OFF_TIMER;
        else if (v > VEC_MASTER && v < VEC_MASTER + 8)
            off = OFF_MASTER;
        else if (v >= VEC_SLAVE && v < VEC_SLAVE + 8)
            off = OFF_SLAVE;
        vbts_put16(t + 4 * v, off);
        vbts_put16(t + 4 * v + 2, BIOS_SEGMENT);
    }
    memset(gmem_ptr(mem, BIOS_TICKS, 4), 0, 4);
    static const uint8_t iret = 0xcf;
    code(mem, OFF_IRET, &iret, 1);
    code(mem, OFF_TIMER, timer, sizeof(timer));
    code(mem, OFF_MASTER, master, sizeof(master));
    code(mem, OFF_SLAVE, slave, sizeof(slave));
}

/* Both PICs past their initialisation words: bases, cascade on line 2, 8086 mode, masks. */
static int pics(struct vm *vm)
{
    for (uint32_t id = KVM_IRQCHIP_PIC_MASTER; id <= KVM_IRQCHIP_PIC_SLAVE; id++) {
        struct kvm_irqchip c = { .chip_id = id };
        if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &c) < 0)
            return error_fail_errno("KVM_GET_IRQCHIP");
        c.chip.pic.irq_base = id == KVM_IRQCHIP_PIC_MASTER ? VEC_MASTER : VEC_SLAVE;
        c.chip.pic.imr = id == KVM_IRQCHIP_PIC_MASTER ? 0xfa : 0xff;   /* timer and cascade */
        c.chip.pic.init_state = 0;
        c.chip.pic.init4 = 1;
        if (ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &c) < 0)
            return error_fail_errno("KVM_SET_IRQCHIP");
    }
    return 0;
}

/* Channel 0: mode 2, 16-bit binary count 0 (65536): IRQ0 at 18.2 Hz. */
static int pit(struct vm *vm)
{
    struct kvm_pit_state2 s;
    if (ioctl(vm->vm_fd, KVM_GET_PIT2, &s) < 0)
        return error_fail_errno("KVM_GET_PIT2");
    struct kvm_pit_channel_state *c = &s.channels[0];
    c->count = 0x10000;
    c->mode = 2;
    c->bcd = 0;
    c->rw_mode = c->read_state = c->write_state = 3;    /* low byte, then high */
    c->gate = 1;
    if (ioctl(vm->vm_fd, KVM_SET_PIT2, &s) < 0)
        return error_fail_errno("KVM_SET_PIT2");
    return 0;
}

int bios_setup(struct vm *vm)
{
    if (!gmem_contains(&vm->mem, 0, 0x100000))
        return error_fail("a PC needs the first MiB of RAM (use a larger --memory)");
    ivt(&vm->mem);
    return pics(vm) < 0 ? -1 : pit(vm);
}
