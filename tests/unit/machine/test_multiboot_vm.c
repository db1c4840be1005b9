/* SPDX-License-Identifier: MIT */
/* A multiboot machine: the image loaded, the entry state, COM1, debug-exit, the APIC page. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "devices/lapic.h"
#include "machine/multiboot_vm.h"
#include "vbts/le.h"
#include "x86/kvm_x86.h"
#include "../tiny_guest.h"

/* A flat a.out-kludge image at 1 MiB: header, then hlt. */
static size_t image(uint8_t *img)
{
    tiny_guest_header(img);
    img[0x20] = 0xf4;
    return 64;
}

Test(multiboot_vm, builds_the_machine)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    struct vm vm;
    vm_init(&vm);
    struct kvm_x86_config c = { 0 };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &c), 0, "%s", error_last());
    uint8_t img[64];
    struct lapic_dev *a = multiboot_vm_setup(&vm, img, image(img), "console");
    cr_assert_not_null(a, "%s", error_last());
    struct kvm_regs r;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &r), 0);
    cr_assert_eq(r.rip, 0x100020);
    cr_assert_eq(r.rax, 0x2badb002);
    cr_assert_eq(*(uint8_t *)gmem_ptr(&vm.mem, 0x100020, 1), 0xf4);
    cr_assert_eq(vm.io.n, 2, "COM1 and debug-exit");
    cr_assert_eq(vm.mmio.n, 1, "the APIC page");
    iobus_destroy(&vm.io);
    lapic_free(a);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

Test(multiboot_vm, bad_image_is_refused)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    struct vm vm;
    vm_init(&vm);
    struct kvm_x86_config c = { 0 };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &c), 0, "%s", error_last());
    uint8_t img[64] = { 0 };
    cr_assert_null(multiboot_vm_setup(&vm, img, sizeof(img), ""));
    cr_assert_str_eq(error_last(), "not a multiboot image (no multiboot header in the first 8192 bytes)");
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}
