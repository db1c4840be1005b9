/* SPDX-License-Identifier: MIT */
/* The guest's own BTS: its MSRs, and records stored into its DS buffer as the SDM says. */
#include <criterion/criterion.h>
#include <string.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "guest_bts/guest_bts.h"
#include "vbts/le.h"

#define DS       0x10000
#define BUF      0x20000

static struct vm vm;
static struct vcpu cpu;
static struct kvm_run run;
static struct guest_bts *gb;
static int pmis;

static void pmi(void *ctx, struct vcpu *c)
{
    (void)ctx;
    (void)c;
    pmis++;
}

static void setup(void)
{
    vm_init(&vm);
    cr_assert_eq(gmem_init(&vm.mem, 1 << 20), 0);
    memset(&run, 0, sizeof(run));
    run.s.regs.sregs.cr0 = 0x11;            /* protected mode, paging off: linear = physical */
    cpu = (struct vcpu){ .vm = &vm, .index = 0, .fd = -1, .run = &run };
    vm.vcpus = &cpu;
    vm.ncpus = 1;
    gb = guest_bts_new(1);
    guest_bts_set_pmi(gb, pmi, NULL);
    pmis = 0;
    /* 64-bit DS fields: base, index, maximum, threshold; room for 4 records. */
    uint8_t *ds = gmem_ptr(&vm.mem, DS, 32);
    vbts_put64(ds, BUF);
    vbts_put64(ds + 8, BUF);
    vbts_put64(ds + 16, BUF + 4 * 24);
    vbts_put64(ds + 24, BUF + 2 * 24);
}

static void teardown(void)
{
    guest_bts_free(gb);
    gmem_fini(&vm.mem);
    vm_fini(&vm);
}

TestSuite(guest_bts, .init = setup, .fini = teardown);

Test(guest_bts, msrs)
{
    uint64_t v;
    cr_assert(guest_bts_rdmsr(gb, &cpu, MSR_IA32_MISC_ENABLE, &v));
    cr_assert_eq(v & MISC_ENABLE_BTS_UNAVAIL, 0, "BTS available");
    cr_assert_eq(v & MISC_ENABLE_PEBS_UNAVAIL, MISC_ENABLE_PEBS_UNAVAIL);
    cr_assert_not(guest_bts_wrmsr(gb, &cpu, MSR_IA32_DEBUGCTL, 1ull << 5), "reserved bit: #GP");
    cr_assert_not(guest_bts_wrmsr(gb, &cpu, MSR_IA32_DS_AREA, 0x0000800000000000ull), "not canonical");
    cr_assert(guest_bts_wrmsr(gb, &cpu, MSR_IA32_MISC_ENABLE, MISC_ENABLE_BTS_UNAVAIL));
    cr_assert(guest_bts_rdmsr(gb, &cpu, MSR_IA32_MISC_ENABLE, &v));
    cr_assert_eq(v & MISC_ENABLE_BTS_UNAVAIL, 0, "availability is read-only");
    cr_assert_not(guest_bts_rdmsr(gb, &cpu, 0x10, &v), "not ours");
    cr_assert_not(guest_bts_on(gb, &cpu));
    cr_assert(guest_bts_wrmsr(gb, &cpu, MSR_IA32_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS));
    cr_assert(guest_bts_on(gb, &cpu));
    cr_assert_not(guest_bts_on(NULL, &cpu), "--no-guest-bts");
}

Test(guest_bts, circular_buffer_wraps)
{
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DS_AREA, DS);
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS);
    for (uint64_t i = 0; i < 5; i++) {
        struct vbts_record r = { 0x1000 + i, 0x2000 + i, 0 };
        guest_bts_store(gb, &cpu, &r, 0);
    }
    const uint8_t *b = gmem_ptr(&vm.mem, BUF, 4 * 24);
    cr_assert_eq(vbts_le64(b), 0x1004, "the fifth record wrapped to the start");
    cr_assert_eq(vbts_le64(b + 24 + 8), 0x2001);
    cr_assert_eq(vbts_le64(b + 16), 0, "flags: predicted is not modelled");
    cr_assert_eq(vbts_le64(gmem_ptr(&vm.mem, DS + 8, 8)), BUF + 24, "index after the wrap");
    cr_assert_eq(pmis, 0, "no PMI without BTINT");
}

Test(guest_bts, linear_buffer_raises_pmi_once_at_threshold)
{
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DS_AREA, DS);
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTINT);
    for (uint64_t i = 0; i < 6; i++) {
        struct vbts_record r = { 0x1000 + i, 0x2000 + i, 0 };
        guest_bts_store(gb, &cpu, &r, 0);
    }
    cr_assert_eq(pmis, 1);
    cr_assert_eq(vbts_le64(gmem_ptr(&vm.mem, DS + 8, 8)), BUF + 4 * 24, "full: the rest were lost");
}

Test(guest_bts, cpl_filters)
{
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DS_AREA, DS);
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTS_OFF_OS);
    struct vbts_record r = { 1, 2, 0 };
    guest_bts_store(gb, &cpu, &r, 0);
    cr_assert_eq(vbts_le64(gmem_ptr(&vm.mem, DS + 8, 8)), BUF, "CPL0 not stored");
    guest_bts_store(gb, &cpu, &r, 3);
    cr_assert_eq(vbts_le64(gmem_ptr(&vm.mem, DS + 8, 8)), BUF + 24, "CPL3 stored");
}

Test(guest_bts, ds_area_outside_ram_turns_bts_off)
{
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DS_AREA, 0x3ff00000);
    guest_bts_wrmsr(gb, &cpu, MSR_IA32_DEBUGCTL, DEBUGCTL_TR | DEBUGCTL_BTS);
    struct vbts_record r = { 1, 2, 0 };
    guest_bts_store(gb, &cpu, &r, 0);
    cr_assert_not(guest_bts_on(gb, &cpu));
}
