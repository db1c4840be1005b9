/* SPDX-License-Identifier: MIT */
/* Branches taken in software at a stop of the branch engine. */
#include <criterion/criterion.h>
#include <string.h>

#include "../x86/machine.h"
#include "trace/take.h"
#include "vbts/format.h"

TestSuite(take, .init = machine_setup, .fini = machine_teardown);

static struct branch_pred pred(void)
{
    struct branch_pred p;
    const char *why;
    cr_assert_eq(branch_predict(&view, &p, &why), 0);
    return p;
}

Test(take, a_call_is_taken_with_its_push_and_the_dirty_bit)
{
    static const uint8_t a[] = { 0xe8, 0x0b, 0x00, 0x00, 0x00 };   /* call 0x10010 */
    code(a, sizeof(a));
    struct branch_pred p = pred();
    struct kvm_regs r = regs;
    cr_assert(take_branch(&view, &p, &r));
    cr_assert_eq(r.rip, 0x10010);
    cr_assert_eq(r.rsp, 0x50000);
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, 0x50000, 8)), 0x10005);
    cr_assert(vbts_le64(gmem_ptr(&mem, 0x4000 + 8 * 0x50, 8)) & 0x40, "PTE dirty");
    /* And the ret back, with its immediate. */
    regs = r;
    static const uint8_t ret[] = { 0xc2, 0x08, 0x00 };               /* ret 8 */
    code(ret, sizeof(ret));
    p = pred();
    cr_assert(take_branch(&view, &p, &r));
    cr_assert_eq(r.rip, 0x10005);
    cr_assert_eq(r.rsp, 0x50010);
}

Test(take, what_may_fault_or_is_not_a_near_branch_runs_on_the_vcpu)
{
    static const uint8_t a[] = { 0xff, 0xe0 };                     /* jmp rax */
    code(a, sizeof(a));
    regs.rax = 0x8000000000000000ull;                              /* non-canonical: #GP */
    struct branch_pred p = pred();
    struct kvm_regs r = regs;
    cr_assert_not(take_branch(&view, &p, &r));
    cr_assert_eq(memcmp(&r, &regs, sizeof(r)), 0, "nothing changed");
    regs.rax = 0x10100;
    p = pred();
    cr_assert(take_branch(&view, &p, &r));
    cr_assert_eq(r.rip, 0x10100);
    static const uint8_t loop[] = { 0xe2, 0xfe };                  /* loop $ changes RCX */
    code(loop, sizeof(loop));
    regs.rcx = 5;
    p = pred();
    cr_assert_not(take_branch(&view, &p, &r));
    static const uint8_t iret[] = { 0x48, 0xcf };
    code(iret, sizeof(iret));
    p = pred();
    cr_assert_not(take_branch(&view, &p, &r));
}
