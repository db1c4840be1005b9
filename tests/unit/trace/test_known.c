/* SPDX-License-Identifier: MIT */
/* What a stretch knows on its way: returns and indirect branches whose targets are known before they run. */
#include <criterion/criterion.h>
#include <string.h>

#include "plan.h"
#include "trace/known.h"
#include "vbts/format.h"

TestSuite(known, .init = machine_setup, .fini = machine_teardown);

Test(known, a_return_to_what_its_own_call_pushed_goes_on)
{
    /* 0x10000: nop; call 0x10010; 0x10006: jnz $+2 ... 0x10010: ret */
    static const uint8_t a[] = { 0x90, 0xe8, 0x0a, 0x00, 0x00, 0x00, 0x75, 0x00 };
    code(a, sizeof(a));
    *(uint8_t *)gmem_ptr(&mem, 0x10010, 1) = 0xc3;
    gates();
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.nins, 3);
    cr_assert_eq(s.end, 0x10006, "through the ret to the jnz");
    cr_assert_eq(s.why, STRETCH_END_JCC);
    cr_assert_eq(s.nrec, 2);
    cr_assert_eq(s.rec[1].from, 0x10010);
    cr_assert_eq(s.rec[1].to, 0x10006);
    cr_assert_eq(s.rec[1].kind, VBTS_KIND_RET);
    cr_assert(s.sp_exact);
    cr_assert_eq(s.sp_delta, 0);
    /* Another vCPU could rewrite the slot: not predicted. */
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10010);
    cr_assert_eq(s.why, STRETCH_END_RET);
}

Test(known, a_return_reads_its_slot_from_memory_the_stretch_did_not_write)
{
    static const uint8_t a[] = { 0x90, 0xc2, 0x08, 0x00 };        /* nop; ret 8 */
    code(a, sizeof(a));
    vbts_put64(gmem_ptr(&mem, 0x50008, 8), 0x10020);
    memcpy(gmem_ptr(&mem, 0x10020, 2), (uint8_t[]){ 0x75, 0x00 }, 2);
    gates();
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10020);
    cr_assert_eq(s.nrec, 1);
    cr_assert_eq(s.rec[0].to, 0x10020);
    cr_assert_eq(s.sp_delta, 16, "the slot and its imm16");
    /* A target the CPU refuses (#GP at the ret) is left to it. */
    vbts_put64(gmem_ptr(&mem, 0x50008, 8), 0x0000800000000000ull);
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10001);
    cr_assert_eq(s.why, STRETCH_END_RET);
}

Test(known, a_return_through_a_slot_the_stretch_wrote_ends_it)
{
    /* mov [rsp],rax; ret */
    static const uint8_t a[] = { 0x48, 0x89, 0x04, 0x24, 0xc3 };
    code(a, sizeof(a));
    vbts_put64(gmem_ptr(&mem, 0x50008, 8), 0x10020);
    gates();
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10004);
    cr_assert_eq(s.why, STRETCH_END_RET);
    /* Its call's slot, rewritten by the callee: nop; call 0x10010 ... 0x10010: mov [rsp],rbx; ret */
    static const uint8_t b[] = { 0x90, 0xe8, 0x0a, 0x00, 0x00, 0x00 };
    static const uint8_t f[] = { 0x48, 0x89, 0x1c, 0x24, 0xc3 };
    code(b, sizeof(b));
    memcpy(gmem_ptr(&mem, 0x10010, sizeof(f)), f, sizeof(f));
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10014);
    cr_assert_eq(s.why, STRETCH_END_RET);
    /* ...but a push and pop in between leave it: push rbx; pop rbx; ret */
    static const uint8_t g[] = { 0x53, 0x5b, 0xc3, 0x75, 0x00 };
    memcpy(gmem_ptr(&mem, 0x10010, sizeof(g)), g, sizeof(g));
    memcpy(gmem_ptr(&mem, 0x10006, 2), (uint8_t[]){ 0x75, 0x00 }, 2);
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10006);
    cr_assert_eq(s.nrec, 2);
}

Test(known, an_indirect_branch_through_a_register_it_wrote_ends_it)
{
    /* nop; jmp rax; 0x10020: jnz */
    static const uint8_t a[] = { 0x90, 0xff, 0xe0 };
    code(a, sizeof(a));
    memcpy(gmem_ptr(&mem, 0x10020, 2), (uint8_t[]){ 0x75, 0x00 }, 2);
    regs.rax = 0x10020;
    cr_assert(plan(3, NULL, false), "a register: no other vCPU writes it");
    cr_assert_eq(s.end, 0x10020);
    cr_assert_eq(s.rec[0].kind, VBTS_KIND_JMP_IND);
    /* mov eax,0x10020; jmp rax */
    static const uint8_t b[] = { 0xb8, 0x20, 0x00, 0x01, 0x00, 0xff, 0xe0 };
    code(b, sizeof(b));
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10005);
    cr_assert_eq(s.why, STRETCH_END_INDIRECT);
}

Test(known, an_indirect_call_through_memory_needs_it_alone)
{
    /* nop; call [rip+0x19] (the qword at 0x10020); 0x10007: jnz */
    static const uint8_t a[] = { 0x90, 0xff, 0x15, 0x19, 0x00, 0x00, 0x00 };
    code(a, sizeof(a));
    vbts_put64(gmem_ptr(&mem, 0x10020, 8), 0x10030);
    memcpy(gmem_ptr(&mem, 0x10030, 2), (uint8_t[]){ 0x75, 0x00 }, 2);
    gates();
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10030);
    cr_assert_eq(s.rec[0].kind, VBTS_KIND_CALL_IND);
    cr_assert_eq(s.rec[0].to, 0x10030);
    cr_assert(plan(3, NULL, false));
    cr_assert_eq(s.end, 0x10001);
    cr_assert_eq(s.why, STRETCH_END_INDIRECT);
}

Test(known, memory_the_host_writes_at_entries_is_not_read)
{
    static const uint8_t a[] = { 0x90, 0xc3 };                    /* nop; ret */
    code(a, sizeof(a));
    vbts_put64(gmem_ptr(&mem, 0x50008, 8), 0x10020);
    memcpy(gmem_ptr(&mem, 0x10020, 2), (uint8_t[]){ 0x75, 0x00 }, 2);
    gates();
    /* The slot lies in a kvmclock page: KVM may rewrite it as the stretch starts. */
    const struct stores kvmclock = { 1, { { 0x50000, 32 } } };
    const struct stretch_opts o = { 3, NULL, true, &kvmclock, false };
    cr_assert(stretch_plan(&view, &o, &s));
    cr_assert_eq(s.end, 0x10001);
    cr_assert_eq(s.why, STRETCH_END_RET);
    const struct stores elsewhere = { 1, { { 0x51000, 32 } } };
    const struct stretch_opts p = { 3, NULL, true, &elsewhere, false };
    cr_assert(stretch_plan(&view, &p, &s));
    cr_assert_eq(s.end, 0x10020);
}
