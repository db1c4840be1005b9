/* SPDX-License-Identifier: MIT */
/* Which user-mode steps kvm_pvm can take through the guest's #DB handler (ustep.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "../x86/machine.h"
#include "trace/engine.h"
#include "trace/ustep.h"
#include "vbts/format.h"

TestSuite(ustep, .init = machine_setup, .fini = machine_teardown);

static struct branch_pred at(const uint8_t *bytes, size_t n)
{
    code(bytes, n);
    struct branch_pred p;
    const char *why;
    cr_assert_eq(branch_predict(&view, &p, &why), 0);
    return p;
}

Test(ustep, user_mode_needs_the_guests_db_gate)
{
    static const uint8_t nop[] = { 0x90 };
    to_user();
    struct branch_pred p = at(nop, sizeof(nop));
    cr_assert_not(ustep_can(&view, &p), "no gate for vector 1");
    gate64(1, 0x30000, 0x08, 0xe, 0, 0);
    cr_assert(ustep_can(&view, &p));
}

Test(ustep, into_user_mode_by_iretq_or_sysret_only)
{
    gate64(1, 0x30000, 0x08, 0xe, 0, 0);
    /* An IRETQ frame to CPL3 at RSP. */
    vbts_put64(gmem_ptr(&mem, regs.rsp, 8), 0x10100);
    vbts_put64(gmem_ptr(&mem, regs.rsp + 8, 8), 0x23);
    vbts_put64(gmem_ptr(&mem, regs.rsp + 16, 8), 0x202);
    vbts_put64(gmem_ptr(&mem, regs.rsp + 24, 8), 0x50000);
    vbts_put64(gmem_ptr(&mem, regs.rsp + 32, 8), 0x1b);
    static const uint8_t iretq[] = { 0x48, 0xcf }, sysret[] = { 0x48, 0x0f, 0x07 },
                         retfq[] = { 0x48, 0xcb }, sysexit[] = { 0x0f, 0x35 };
    struct branch_pred p = at(iretq, sizeof(iretq));
    cr_assert(p.to_user);
    cr_assert(ustep_can(&view, &p));
    p = at(sysret, sizeof(sysret));
    cr_assert(p.to_user);
    cr_assert_eq(p.target, regs.rcx, "SYSRET goes to RCX");
    cr_assert(ustep_can(&view, &p));
    p = at(retfq, sizeof(retfq));
    cr_assert(p.to_user);
    cr_assert_not(ustep_can(&view, &p), "a far return carries no RFLAGS");
    to_user();
    p = at(sysexit, sizeof(sysexit));
    cr_assert_not(ustep_can(&view, &p));
}

Test(ustep, not_outside_long_mode)
{
    gate64(1, 0x30000, 0x08, 0xe, 0, 0);
    static const uint8_t nop[] = { 0x90 };
    to_user();
    struct branch_pred p = at(nop, sizeof(nop));
    sregs.efer = 0;
    cr_assert_not(ustep_can(&view, &p));
}
