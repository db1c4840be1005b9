/* SPDX-License-Identifier: MIT */
/* Host-compat's kernel options: only where the host needs them, with the user's last; stale halts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "x86/arch.h"
#include "x86/cpu.h"
#include "x86/host.h"
#include "x86/hostcompat.h"
#include "x86/kvm_x86.h"
#include "kvm_vm.h"

Test(hostcompat, cmdline_only_where_needed)
{
    const char *c = hostcompat_cmdline();
    if (host_is_pvm()) {
        cr_assert_not_null(c);
        cr_assert(strstr(c, "clearcpuid=cx16"), "%s", c);
        cr_assert(strstr(c, "noxsave"), "%s", c);
        cr_assert(strstr(c, "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F"), "%s", c);
    } else {
        cr_assert_null(c);
    }
}

Test(hostcompat, summary_says_nothing_when_nothing_fired)
{
    char buf[256] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    hostcompat_summary(f);
    fclose(f);
    cr_assert_str_eq(buf, "");
}

/*
 * A halted vCPU is really halted only right after a HLT, interrupts on or
 * off (then an NMI wakes it); any other is one the host left halted though
 * it ran on, and is made runnable.  On a real vCPU whose memory holds a
 * HLT at 0x1000.
 */
Test(hostcompat, halted_only_right_after_a_hlt)
{
    struct vm vm;
    kvm_vm_create(&vm, 1, true);
    struct vcpu *cpu = &vm.vcpus[0];
    cr_assert_eq(kvm_x86_enter_protected32(cpu, 0x1001, 0, 0), 0, "%s", error_last());
    *(uint8_t *)gmem_ptr(&vm.mem, 0x1000, 1) = 0xf4;
    struct kvm_regs r;
    struct kvm_sregs s;
    struct cpu_view v = { &vm.mem, &r, &s };
    cr_assert_eq(ioctl(cpu->fd, KVM_GET_REGS, &r), 0);
    cr_assert_eq(ioctl(cpu->fd, KVM_GET_SREGS, &s), 0);
    struct kvm_mp_state mp = { KVM_MP_STATE_RUNNABLE };
    cr_assert_eq(ioctl(cpu->fd, KVM_SET_MP_STATE, &mp), 0);
    cr_assert_not(hostcompat_halted(cpu, &v), "runnable");

    struct { uint64_t rip, rflags; bool halted; } cases[] = {
        { 0x1001, 0x202, true },    /* after the HLT, IF=1 */
        { 0x1001, 0x002, true },    /* after the HLT, IF=0: an NMI wakes it */
        { 0x1003, 0x202, false },   /* elsewhere */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r.rip = cases[i].rip;
        r.rflags = cases[i].rflags;
        cr_assert_eq(ioctl(cpu->fd, KVM_SET_REGS, &r), 0);
        mp.mp_state = KVM_MP_STATE_HALTED;
        cr_assert_eq(ioctl(cpu->fd, KVM_SET_MP_STATE, &mp), 0);
        cr_assert_eq(hostcompat_halted(cpu, i & 1 ? NULL : &v), cases[i].halted, "case %zu", i);
        cr_assert_eq(ioctl(cpu->fd, KVM_GET_MP_STATE, &mp), 0);
        cr_assert_eq(mp.mp_state, cases[i].halted ? KVM_MP_STATE_HALTED : KVM_MP_STATE_RUNNABLE, "case %zu", i);
    }
    kvm_vm_destroy(&vm);
}

/*
 * LSTAR and the IDT are read before every run until a tracer that sees
 * each instruction follows the vCPU; then only once it says one loaded an
 * MSR or the IDT (and once when it starts to follow: what ran before is
 * not known).
 */
Test(hostcompat, a_follower_spares_the_reads_until_an_msr_or_idt_load)
{
    struct vm vm;
    kvm_vm_create(&vm, 1, true);
    struct vcpu *cpu = &vm.vcpus[0];
    struct hostcompat_vcpu *hc = &arch_vcpu(cpu)->hc;
    cr_assert_not(hc->followed);
    hostcompat_follow(cpu, true);
    cr_assert(hc->followed);
    cr_assert(hc->recheck, "read once as it starts to follow");
    hc->recheck = false;
    hostcompat_follow(cpu, true);
    cr_assert_not(hc->recheck, "still following: nothing new");
    hostcompat_recheck(cpu);
    cr_assert(hc->recheck);
    hostcompat_follow(cpu, false);
    cr_assert_not(hc->followed, "untraced: read before every run again");
    kvm_vm_destroy(&vm);
}
