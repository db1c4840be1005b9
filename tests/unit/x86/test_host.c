/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <linux/kvm_para.h>

#include "core/error.h"
#include "core/vm.h"
#include "x86/host.h"
#include "x86/kvm_x86.h"
#include "kvm_vm.h"

Test(host, names_the_module_it_finds)
{
    const char *n = host_kvm_name();
    if (access("/sys/module/kvm_pvm", F_OK) == 0) {
        cr_assert_str_eq(n, "kvm_pvm");
        cr_assert(host_is_pvm());
        cr_assert_not(host_steps_user());
    } else {
        cr_assert_not(host_is_pvm());
        cr_assert(host_steps_user());
        cr_assert(!strcmp(n, "kvm_amd") || !strcmp(n, "kvm_intel") || !strcmp(n, "kvm"), "%s", n);
    }
}

/*
 * The hypercall probe: kvm_pvm never completes one (measured: a VMCALL at
 * CPL0 spins in KVM_RUN), stock KVM does (the lab's kvm_amd: -KVM_ENOSYS
 * for an unknown number).  The answer is kept; the probe's thread and
 * signal leave nothing behind.
 */
Test(host, hypercalls_complete_except_on_kvm_pvm)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        cr_skip_test("no usable /dev/kvm");
    int h = host_hypercalls_complete(fd);
    cr_assert_eq(h, host_is_pvm() ? 0 : 1, "%d: %s", h, h < 0 ? error_last() : "");
    cr_assert_eq(host_hypercalls_complete(fd), h, "asked once");
    close(fd);
}

/* An SMP Linux VM's CPUID offers the PV features that make hypercalls only where they complete. */
Test(host, pv_hypercall_features_only_where_hypercalls_complete)
{
    struct vm vm;
    kvm_vm_create(&vm, 2, true);
    static struct { struct kvm_cpuid2 c; struct kvm_cpuid_entry2 e[512]; } got;
    got.c.nent = 512;
    cr_assert_eq(ioctl(vm.vcpus[1].fd, KVM_GET_CPUID2, &got.c), 0);
    const struct kvm_cpuid_entry2 *kf = NULL;
    for (unsigned i = 0; i < got.c.nent; i++)
        if (got.c.entries[i].function == KVM_CPUID_FEATURES)
            kf = &got.c.entries[i];
    cr_assert_not_null(kf);
    bool hidden = host_hypercalls_complete(vm.kvm_fd) == 0;
    cr_assert_eq(kvm_x86_hypercalls_hidden(&vm), hidden);
    if (hidden)
        cr_assert_eq(kf->eax & (1u << KVM_FEATURE_PV_UNHALT | 1u << KVM_FEATURE_PV_SEND_IPI |
                                1u << KVM_FEATURE_PV_SCHED_YIELD), 0);
    cr_assert(kf->eax & (1u << KVM_FEATURE_CLOCKSOURCE2), "the other features stay");
    kvm_vm_destroy(&vm);
}
