/* SPDX-License-Identifier: MIT */
/* A Linux machine refuses what it cannot boot, naming the image. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "core/vm.h"
#include "machine/linux_vm.h"
#include "x86/kvm_x86.h"

Test(linux_vm, not_a_bzimage)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    struct vm vm;
    vm_init(&vm);
    struct kvm_x86_config c = { .irqchip = true };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 32 << 20, 1, &c), 0, "%s", error_last());
    static uint8_t img[4096];
    struct linux_guest g = { .path = "x.bz", .image = img, .image_size = sizeof(img) };
    cr_assert_null(linux_vm_setup(&vm, &g));
    cr_assert(strncmp(error_last(), "x.bz: ", 6) == 0, "%s", error_last());
    g.initrd = "/nonexistent/initrd";
    cr_assert_null(linux_vm_setup(&vm, &g));
    cr_assert_str_eq(error_last(), "cannot open /nonexistent/initrd: No such file or directory");
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}
