/* SPDX-License-Identifier: MIT */
/* A PC VM on /dev/kvm for the x86/ tests that need a real vCPU; the test is skipped where there is none. */
#ifndef VBTS_TEST_X86_KVM_VM_H
#define VBTS_TEST_X86_KVM_VM_H

#include <criterion/criterion.h>
#include <unistd.h>

#include "core/error.h"
#include "core/vm.h"
#include "x86/kvm_x86.h"

static inline void kvm_vm_create(struct vm *vm, int ncpus, bool irqchip)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    vm_init(vm);
    struct kvm_x86_config c = { .irqchip = irqchip };
    cr_assert_eq(kvm_x86_create(vm, "/dev/kvm", 8 << 20, ncpus, &c), 0, "%s", error_last());
}

static inline void kvm_vm_destroy(struct vm *vm)
{
    kvm_x86_destroy(vm);
    vm_fini(vm);
}

#endif
