/* SPDX-License-Identifier: MIT */
/* What the firmware leaves: the IVT's entries and handlers, the PICs' bases and masks, the PIT. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "vbts/le.h"
#include "x86/bios.h"
#include "x86/kvm_x86.h"

static uint32_t vector(struct vm *vm, unsigned v)
{
    return vbts_le32(gmem_ptr(&vm->mem, 4 * v, 4));
}

static const uint8_t *handler(struct vm *vm, unsigned v)
{
    uint32_t e = vector(vm, v);
    return gmem_ptr(&vm->mem, ((e >> 16) << 4) + (e & 0xffff), 16);
}

Test(bios, ivt_pics_and_pit)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    struct vm vm;
    vm_init(&vm);
    struct kvm_x86_config c = { .irqchip = true };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &c), 0, "%s", error_last());
    cr_assert_eq(bios_setup(&vm), 0, "%s", error_last());

    cr_assert_eq(vector(&vm, 0x08), 0xf000fea5, "IRQ0: the timer's handler");
    cr_assert_eq(memcmp(handler(&vm, 0x08), "\x50\x1e\x31\xc0\x8e\xd8\xff\x06\x6c\x04", 10), 0,
                 "push ax, push ds, ds = 0, inc word [0x46c]");
    cr_assert_eq(vector(&vm, 0x09), 0xf000fec0);
    cr_assert_eq(memcmp(handler(&vm, 0x09), "\x50\xb0\x20\xe6\x20\x58\xcf", 7), 0, "EOI to the master");
    cr_assert_eq(vector(&vm, 0x73), 0xf000fed0);
    cr_assert_eq(memcmp(handler(&vm, 0x73), "\x50\xb0\x20\xe6\xa0\xe6\x20\x58\xcf", 9), 0, "EOI to both");
    for (unsigned v = 0; v < 256; v += 0x11)
        if (v < 0x08 || (v > 0x0f && (v < 0x70 || v > 0x77)))
            cr_assert_eq(*handler(&vm, v), 0xcf, "vector 0x%x: iret", v);

    struct kvm_irqchip pic = { .chip_id = KVM_IRQCHIP_PIC_MASTER };
    cr_assert_eq(ioctl(vm.vm_fd, KVM_GET_IRQCHIP, &pic), 0);
    cr_assert_eq(pic.chip.pic.irq_base, 0x08);
    cr_assert_eq(pic.chip.pic.imr, 0xfa, "the timer and the cascade unmasked");
    pic.chip_id = KVM_IRQCHIP_PIC_SLAVE;
    cr_assert_eq(ioctl(vm.vm_fd, KVM_GET_IRQCHIP, &pic), 0);
    cr_assert_eq(pic.chip.pic.irq_base, 0x70);
    cr_assert_eq(pic.chip.pic.imr, 0xff);
    struct kvm_pit_state2 pit;
    cr_assert_eq(ioctl(vm.vm_fd, KVM_GET_PIT2, &pit), 0);
    cr_assert_eq(pit.channels[0].mode, 2);
    cr_assert_eq(pit.channels[0].count, 0x10000, "18.2 Hz");
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}
