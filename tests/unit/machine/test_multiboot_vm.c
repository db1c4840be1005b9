/* SPDX-License-Identifier: MIT */
/* A multiboot machine: the image loaded, the entry state, COM1, debug-exit, the APIC page. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A VM of 8 MiB with ncpus vCPUs (a PC's irqchip with pc), or the test skips. */
static void new_vm(struct vm *vm, int ncpus, bool pc)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    vm_init(vm);
    struct kvm_x86_config c = { .irqchip = pc };
    cr_assert_eq(kvm_x86_create(vm, "/dev/kvm", 8 << 20, ncpus, &c), 0, "%s", error_last());
}

Test(multiboot_vm, builds_the_machine)
{
    struct vm vm;
    new_vm(&vm, 1, false);
    uint8_t img[64];
    struct multiboot_guest g = { .path = "k.bin", .image = img, .image_size = image(img),
                                 .append = "console" };
    struct lapic_dev *a;
    cr_assert_eq(multiboot_vm_setup(&vm, &g, &a), 0, "%s", error_last());
    cr_assert_not_null(a);
    struct kvm_regs r;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &r), 0);
    cr_assert_eq(r.rip, 0x100020);
    cr_assert_eq(r.rax, 0x2badb002);
    cr_assert_eq(*(uint8_t *)gmem_ptr(&vm.mem, 0x100020, 1), 0xf4);
    cr_assert_eq(vm.io.n, 3, "COM1, debug-exit and fw_cfg");
    const uint32_t *info = gmem_ptr(&vm.mem, r.rbx, 96);
    cr_assert_str_eq((const char *)gmem_ptr(&vm.mem, info[4], 16), "k.bin console",
                     "QEMU's command line: the kernel's name first");
    cr_assert_eq(vm.mmio.n, 1, "the APIC page");
    iobus_destroy(&vm.io);
    lapic_free(a);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

Test(multiboot_vm, bad_image_is_refused)
{
    struct vm vm;
    new_vm(&vm, 1, false);
    uint8_t img[64] = { 0 };
    struct multiboot_guest g = { .path = "bad", .image = img, .image_size = sizeof(img) };
    struct lapic_dev *a;
    cr_assert_eq(multiboot_vm_setup(&vm, &g, &a), -1);
    cr_assert_str_eq(error_last(), "not a multiboot image (no multiboot header in the first 8192 bytes)");
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

static uint64_t fw_cfg_read(struct vm *vm, uint16_t key, int bytes)
{
    uint8_t sel[2] = { (uint8_t)key, (uint8_t)(key >> 8) }, b;
    uint64_t v = 0;
    iobus_access(&vm->io, NULL, 0x510, 1, sel, 2);
    for (int i = 0; i < bytes; i++) {
        iobus_access(&vm->io, NULL, 0x511, 0, &b, 1);
        v |= (uint64_t)b << (8 * i);
    }
    return v;
}

/* --cpus 2: KVM's irqchip, the PC's devices, ACPI with two CPUs, fw_cfg saying so; a module. */
Test(multiboot_vm, a_pc_with_modules)
{
    struct vm vm;
    new_vm(&vm, 2, true);
    char path[] = "/tmp/vbts-mod-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "NR_CPUS=2\n", 10), 10);
    close(fd);
    uint8_t img[64];
    char spec[64];
    snprintf(spec, sizeof(spec), "%s x=1", path);
    struct multiboot_guest g = { .path = "k.bin", .image = img, .image_size = image(img),
                                 .modules = spec, .pc = true };
    struct lapic_dev *a = (struct lapic_dev *)1;
    cr_assert_eq(multiboot_vm_setup(&vm, &g, &a), 0, "%s", error_last());
    unlink(path);
    cr_assert_null(a, "KVM's APICs, not the monitor's page");
    cr_assert_eq(vm.mmio.n, 1, "pc-testdev's memory");
    cr_assert_eq(vm.io.n, 8, "COM1, ACPI PM, i8042, RTC, pc-testdev's ports and IRQ lines, debug-exit, fw_cfg");
    struct kvm_regs r;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &r), 0);
    const uint32_t *info = gmem_ptr(&vm.mem, r.rbx, 96);
    cr_assert_str_eq((const char *)gmem_ptr(&vm.mem, info[4], 7), "k.bin ");
    cr_assert_eq(info[5], 1);
    const uint32_t *m = gmem_ptr(&vm.mem, info[6], 16);
    cr_assert_eq(m[1] - m[0], 10);
    cr_assert_eq(memcmp(gmem_ptr(&vm.mem, m[0], 10), "NR_CPUS=2\n", 10), 0);
    cr_assert_str_eq((const char *)gmem_ptr(&vm.mem, m[2], strlen(spec) + 1), spec);
    cr_assert_eq(memcmp(gmem_ptr(&vm.mem, 0xe0000, 8), "RSD PTR ", 8), 0, "ACPI at 0xe0000");
    cr_assert_eq(fw_cfg_read(&vm, 0x05, 2), 2, "nb_cpus");
    cr_assert_eq(fw_cfg_read(&vm, 0x03, 8), 8 << 20, "ram_size");
    iobus_destroy(&vm.io);
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

Test(multiboot_vm, a_module_that_cannot_be_read)
{
    struct vm vm;
    new_vm(&vm, 1, false);
    uint8_t img[64];
    struct multiboot_guest g = { .path = "k.bin", .image = img, .image_size = image(img),
                                 .modules = "/nonexistent/env a" };
    struct lapic_dev *a;
    cr_assert_eq(multiboot_vm_setup(&vm, &g, &a), -1);
    cr_assert_str_eq(error_last(), "--initrd: cannot open /nonexistent/env: No such file or directory");
    g.modules = "x,";
    cr_assert_eq(multiboot_vm_setup(&vm, &g, &a), -1);
    cr_assert_str_eq(error_last(), "--initrd: a module without a file name in 'x,'");
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}
