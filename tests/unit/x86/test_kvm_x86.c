/* SPDX-License-Identifier: MIT */
/* A PC VM on KVM and the states guests start in (with a usable /dev/kvm). */
#include <criterion/criterion.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <linux/kvm_para.h>

#include "core/vm.h"
#include "x86/arch.h"
#include "x86/kvm_x86.h"

static struct vm vm;

static void setup(void)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    vm_init(&vm);
    struct kvm_x86_config c = { .irqchip = false, .ds_cpuid = true };
    cr_assert_eq(kvm_x86_create(&vm, "/dev/kvm", 8 << 20, 1, &c), 0, "%s", error_last());
}

static void teardown(void)
{
    kvm_x86_destroy(&vm);
    vm_fini(&vm);
}

TestSuite(kvm_x86, .init = setup, .fini = teardown);

Test(kvm_x86, protected32_entry_as_qemu_leaves_it)
{
    cr_assert_not_null(arch_vcpu(&vm.vcpus[0]));
    cr_assert(arch_vm(&vm)->ds_cpuid);
    cr_assert_eq(kvm_x86_enter_protected32(&vm.vcpus[0], 0x100000, 0x2badb002, 0x9000), 0);
    struct kvm_regs r;
    struct kvm_sregs s;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_REGS, &r), 0);
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_SREGS, &s), 0);
    cr_assert_eq(r.rip, 0x100000);
    cr_assert_eq(r.rax, 0x2badb002);
    cr_assert_eq(r.rbx, 0x9000);
    cr_assert_eq(s.cs.selector, 0x08);
    cr_assert_eq(s.ds.selector, 0x10);
    cr_assert_eq(s.cr0 & 0x80000001, 1, "protected mode, paging off");
}

Test(kvm_x86, long64_entry)
{
    struct kvm_x86_long64 e = { .rip = 0x1000200, .rsi = 0x7000, .cr3 = 0x9000,
                                .gdt_base = 0x500, .gdt_limit = 0x1f, .cs = 0x10, .ds = 0x18 };
    cr_assert_eq(kvm_x86_enter_long64(&vm.vcpus[0], &e), 0, "%s", error_last());
    struct kvm_sregs s;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_SREGS, &s), 0);
    cr_assert_eq(s.cs.l, 1);
    cr_assert_eq(s.cr3, 0x9000);
    cr_assert_eq(s.efer & 0x500, 0x500, "LME and LMA");
}

/* The CPUID a vCPU was given: leaf `fn`, or NULL. */
static struct kvm_cpuid_entry2 *leaf(struct kvm_cpuid2 *c, uint32_t fn)
{
    for (unsigned i = 0; i < c->nent; i++)
        if (c->entries[i].function == fn)
            return &c->entries[i];
    return NULL;
}

/* KVM's steal time is offered as KVM supports it, and hidden from a traced guest. */
Test(kvm_x86, steal_time_hidden_from_a_traced_guest)
{
    static struct { struct kvm_cpuid2 c; struct kvm_cpuid_entry2 e[512]; } got;
    got.c.nent = 512;
    cr_assert_eq(ioctl(vm.vcpus[0].fd, KVM_GET_CPUID2, &got.c), 0);
    struct kvm_cpuid_entry2 *kf = leaf(&got.c, KVM_CPUID_FEATURES);
    if (!kf || !(kf->eax & (1u << KVM_FEATURE_STEAL_TIME)))
        cr_skip_test("this KVM offers no steal time");
    struct vm traced;
    vm_init(&traced);
    struct kvm_x86_config c = { .no_steal_time = true };
    cr_assert_eq(kvm_x86_create(&traced, "/dev/kvm", 8 << 20, 1, &c), 0, "%s", error_last());
    got.c.nent = 512;
    cr_assert_eq(ioctl(traced.vcpus[0].fd, KVM_GET_CPUID2, &got.c), 0);
    kf = leaf(&got.c, KVM_CPUID_FEATURES);
    cr_assert_not_null(kf);
    cr_assert_eq(kf->eax & (1u << KVM_FEATURE_STEAL_TIME), 0);
    cr_assert(kf->eax & (1u << KVM_FEATURE_CLOCKSOURCE2), "the other features stay");
    kvm_x86_destroy(&traced);
    vm_fini(&traced);
}

/*
 * What KVM writes into guest memory at its entries: the kvmclock page
 * where the guest's MSR puts it (bit 0 on), nothing where it is off.  A
 * host without kvmclock refuses the MSR and writes nothing.
 */
Test(kvm_x86, the_areas_kvm_writes_are_where_the_msrs_put_them)
{
    struct vcpu *cpu = &vm.vcpus[0];
    struct kvm_x86_area a[KVM_X86_MAX_AREAS];
    cr_assert_eq(kvm_x86_host_writes(cpu, a, KVM_X86_MAX_AREAS), 0, "none set up yet");
    struct {
        struct kvm_msrs h;
        struct kvm_msr_entry e;
    } m = { .h.nmsrs = 1, .e = { .index = MSR_KVM_SYSTEM_TIME_NEW, .data = 0x5000 | 1 } };
    int set = ioctl(cpu->fd, KVM_SET_MSRS, &m);
    int n = kvm_x86_host_writes(cpu, a, KVM_X86_MAX_AREAS);
    if (set == 1) {
        cr_assert_eq(n, 1);
        cr_assert_eq(a[0].gpa, 0x5000);
        cr_assert_eq(a[0].len, 32);
        m.e.data = 0x5000;      /* off */
        cr_assert_eq(ioctl(cpu->fd, KVM_SET_MSRS, &m), 1);
        cr_assert_eq(kvm_x86_host_writes(cpu, a, KVM_X86_MAX_AREAS), 0);
    } else {
        cr_assert_eq(n, 0, "the host has no kvmclock: it writes nothing");
    }
}
