/* SPDX-License-Identifier: MIT */
/* KVM plumbing: errors name what failed; with a KVM device, a VM and its vCPUs. */
#include <criterion/criterion.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/kvm.h"
#include "core/vm.h"

Test(kvm, missing_device)
{
    struct vm vm;
    vm_init(&vm);
    cr_assert_eq(kvm_open_vm(&vm, "/nonexistent/kvm", 1 << 20), -1);
    cr_assert_str_eq(error_last(), "cannot open /nonexistent/kvm (KVM unavailable): No such file or directory");
    kvm_close_vm(&vm);
    vm_fini(&vm);
}

Test(kvm, vm_with_vcpus)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    struct vm vm;
    vm_init(&vm);
    cr_assert_eq(kvm_open_vm(&vm, "/dev/kvm", 4 << 20), 0, "%s", error_last());
    cr_assert_gt(kvm_extension(&vm, KVM_CAP_SYNC_REGS), 0);
    cr_assert_eq(kvm_create_vcpus(&vm, 2), 0, "%s", error_last());
    cr_assert_eq(vm.ncpus, 2);
    cr_assert_eq(vm.vcpus[1].index, 1);
    cr_assert_not_null(vm.vcpus[1].run);
    kvm_close_vm(&vm);
    cr_assert_eq(vm.vcpus, NULL);
    kvm_close_vm(&vm);      /* idempotent */
    vm_fini(&vm);
}
