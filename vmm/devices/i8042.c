/* SPDX-License-Identifier: MIT */
/*
 * The keyboard controller's one job here: reset.  Linux reboots (reboot=k,
 * and its fallback after ACPI) by writing 0xfe to port 0x64, and reboots
 * that way on a panic with panic=-1; machine/linux_vm.c tells the two apart.  The
 * status register reads 0 (nothing to read, ready for a command), so the
 * kernel's kb_wait() does not spin.  The FADT says there is no 8042, so the
 * kernel's i8042 driver does not probe for a keyboard.
 */
#include "devices/i8042.h"

#include "core/vm.h"

#define I8042_DATA    0x60
#define I8042_CMD     0x64
#define CMD_PULSE_RESET 0xfe

static void i8042_in(struct io_device *dev, struct vcpu *cpu, uint16_t off, uint8_t *data, int size)
{
    (void)dev;
    (void)cpu;
    /* 0x61-0x63 are not ours (KVM's PIT has the speaker port). */
    for (int i = 0; i < size; i++)
        data[i] = (off == 0 || off == I8042_CMD - I8042_DATA) ? 0 : 0xff;
}

static void i8042_out(struct io_device *dev, struct vcpu *cpu, uint16_t off, const uint8_t *data, int size)
{
    (void)dev;
    (void)size;
    if (off == I8042_CMD - I8042_DATA && data[0] == CMD_PULSE_RESET)
        vm_guest_event(cpu->vm, VM_GUEST_RESET, "keyboard controller reset");
}

int i8042_register(struct iobus *bus)
{
    static struct io_device dev = { .name = "i8042", .base = I8042_DATA, .len = 5,
                                    .in = i8042_in, .out = i8042_out };
    return iobus_register(bus, &dev);
}
