/* SPDX-License-Identifier: MIT */
/* The guest's x87/SSE state through KVM's XSAVE image. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/error.h"
#include "core/gmem.h"
#include "core/kvm.h"
#include "core/vcpu.h"
#include "core/vm.h"
#include "vbts/le.h"
#include "x86/fpu.h"

static uint8_t image[4096];

/* An image whose legacy area holds a stale x87 state: TOP 3, FCW 0x27b, ST0's bytes 0xaa. */
static void stale(uint64_t bv)
{
    memset(image, 0, sizeof(image));
    vbts_put16(image + 0, 0x27b);
    vbts_put16(image + 2, 3 << 11);
    image[4] = 0x80;
    memset(image + 32, 0xaa, 10);
    vbts_put32(image + 24, 0x9fc0);
    memset(image + 160, 0x55, 16);
    vbts_put64(image + 512, bv);
}

Test(fpu, an_initial_x87_part_is_the_initial_state_whatever_the_area_holds)
{
    struct kvm_fpu f;
    stale(0);
    fpu_from_xsave(image, &f);
    cr_assert_eq(f.fcw, 0x37f);
    cr_assert_eq(f.fsw, 0);
    cr_assert_eq(f.ftwx, 0);
    cr_assert_eq(f.fpr[0][0], 0);
    cr_assert_eq(f.mxcsr, 0x1f80, "MXCSR goes with the SSE or AVX part");
    cr_assert_eq(f.xmm[0][0], 0);
}

Test(fpu, a_live_part_is_the_area)
{
    struct kvm_fpu f;
    stale(1);
    fpu_from_xsave(image, &f);
    cr_assert_eq(f.fcw, 0x27b);
    cr_assert_eq((f.fsw >> 11) & 7, 3);
    cr_assert_eq(f.ftwx, 0x80);
    cr_assert_eq(f.fpr[0][9], 0xaa);
    cr_assert_eq(f.mxcsr, 0x1f80, "SSE is initial");
    cr_assert_eq(f.xmm[0][0], 0);
    stale(4);
    fpu_from_xsave(image, &f);
    cr_assert_eq(f.mxcsr, 0x9fc0, "AVX live: MXCSR is the area's");
    stale(2);
    fpu_from_xsave(image, &f);
    cr_assert_eq(f.xmm[0][15], 0x55);
    cr_assert_eq(f.fcw, 0x37f);
}

Test(fpu, what_is_written_is_marked_live)
{
    struct kvm_fpu f = { .fcw = 0x37b, .fsw = 5 << 11, .ftwx = 0xc0, .mxcsr = 0x1f00, .last_ip = 0x1234 };
    f.fpr[7][0] = 1;
    stale(4);
    fpu_into_xsave(&f, image);
    cr_assert_eq(vbts_le64(image + 512), 7, "x87 and SSE live, AVX as it was");
    struct kvm_fpu g;
    fpu_from_xsave(image, &g);
    cr_assert_eq(memcmp(&f, &g, sizeof(f)), 0);
}

/*
 * A real vCPU, in real mode: what fpu_set wrote is what the guest's fnstsw
 * reads, and its fninit shows in fpu_get (on kvm_pvm the host's emulator
 * runs both; KVM_GET_FPU and KVM_SET_FPU missed each).
 */
static struct vm vm;

static void run(const uint8_t *code, size_t n)
{
    struct vcpu *cpu = &vm.vcpus[0];
    memcpy(gmem_ptr(&vm.mem, 0x1000, n), code, n);
    struct kvm_regs r = { .rip = 0x1000, .rflags = 2 };
    cr_assert_eq(ioctl(cpu->fd, KVM_SET_REGS, &r), 0);
    cr_assert_eq(ioctl(cpu->fd, KVM_RUN, 0), 0);
    cr_assert_eq(cpu->run->exit_reason, KVM_EXIT_HLT, "exit %u", cpu->run->exit_reason);
}

Test(fpu, the_guest_sees_what_was_set_and_the_monitor_what_it_did)
{
    if (access("/dev/kvm", R_OK | W_OK) != 0)
        cr_skip_test("no usable /dev/kvm");
    vm_init(&vm);
    cr_assert_eq(kvm_open_vm(&vm, "/dev/kvm", 1 << 20), 0, "%s", error_last());
    cr_assert_eq(kvm_create_vcpus(&vm, 1), 0, "%s", error_last());
    struct vcpu *cpu = &vm.vcpus[0];
    struct kvm_sregs s;
    cr_assert_eq(ioctl(cpu->fd, KVM_GET_SREGS, &s), 0);
    s.cs.base = 0;
    s.cs.selector = 0;
    cr_assert_eq(ioctl(cpu->fd, KVM_SET_SREGS, &s), 0);
    struct kvm_fpu f;
    cr_assert_eq(fpu_get(cpu, &f), 0, "%s", error_last());
    cr_assert_eq(f.fcw, 0x37f, "the reset state");
    f.fsw = 3 << 11;
    cr_assert_eq(fpu_set(cpu, &f), 0, "%s", error_last());
    static const uint8_t fnstsw[] = { 0xdd, 0x3e, 0x00, 0x20, 0xf4 };     /* fnstsw [0x2000]; hlt */
    run(fnstsw, sizeof(fnstsw));
    cr_assert_eq(vbts_le16(gmem_ptr(&vm.mem, 0x2000, 2)) >> 11 & 7, 3, "the guest reads TOP 3");
    static const uint8_t fninit[] = { 0xdb, 0xe3, 0xf4 };                 /* fninit; hlt */
    run(fninit, sizeof(fninit));
    cr_assert_eq(fpu_get(cpu, &f), 0, "%s", error_last());
    cr_assert_eq(f.fsw, 0, "the guest's fninit");
    kvm_close_vm(&vm);
    vm_fini(&vm);
}
