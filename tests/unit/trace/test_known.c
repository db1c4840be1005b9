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
    /* cpuid; mov [rsp],rax; ret: a value it does not know */
    static const uint8_t a[] = { 0x0f, 0xa2, 0x48, 0x89, 0x04, 0x24, 0xc3 };
    code(a, sizeof(a));
    vbts_put64(gmem_ptr(&mem, 0x50008, 8), 0x10020);
    gates();
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10006);
    cr_assert_eq(s.why, STRETCH_END_RET);
    /* Its call's slot, rewritten by the callee: nop; call 0x10010 ... 0x10010: cpuid; mov [rsp],rbx; ret */
    static const uint8_t b[] = { 0x90, 0xe8, 0x0a, 0x00, 0x00, 0x00 };
    static const uint8_t f[] = { 0x0f, 0xa2, 0x48, 0x89, 0x1c, 0x24, 0xc3 };
    code(b, sizeof(b));
    memcpy(gmem_ptr(&mem, 0x10010, sizeof(f)), f, sizeof(f));
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10016);
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
    struct stores kvmclock = { 0 };
    cr_assert(stores_add(&kvmclock, 0x50000, 32));
    const struct stretch_opts o = { 3, NULL, true, &kvmclock, false, false, false };
    stretch_attach(&s, s_mem, STRETCH_MAX_PATH);
    cr_assert(stretch_plan(&view, &o, &s));
    cr_assert_eq(s.end, 0x10001);
    cr_assert_eq(s.why, STRETCH_END_RET);
    struct stores elsewhere = { 0 };
    cr_assert(stores_add(&elsewhere, 0x51000, 32));
    const struct stretch_opts p = { 3, NULL, true, &elsewhere, false, false, false };
    cr_assert(stretch_plan(&view, &p, &s));
    cr_assert_eq(s.end, 0x10020);
}

/* Conditional branches decided by what the stretch computed (x86/eval.h). */

Test(known, a_conditional_branch_its_flags_decide_goes_on)
{
    /* mov eax,5; cmp eax,5; je +2; nop; nop; L: jne +0 (not taken); hlt */
    static const uint8_t a[] = { 0xb8, 0x05, 0x00, 0x00, 0x00, 0x83, 0xf8, 0x05, 0x74, 0x02, 0x90, 0x90,
                                 0x75, 0x00, 0xf4 };
    code(a, sizeof(a));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x1000e, "through both branches, to the hlt");
    cr_assert_eq(s.nins, 4);
    cr_assert_eq(s.nrec, 1, "the taken je's record, none for the jne");
    cr_assert_eq(s.rec[0].from, 0x10008);
    cr_assert_eq(s.rec[0].to, 0x1000c);
    cr_assert_eq(s.rec[0].kind, VBTS_KIND_JCC);
    cr_assert_eq(s.leaf[0].regs_known & 1, 1, "RAX known at the end");
    cr_assert_eq(s.leaf[0].gpr[0], 5);
    /* Nothing computed: the je is the CPU's. */
    cr_assert(plan(3, NULL, true));
    cr_assert_eq(s.end, 0x10008);
    cr_assert_eq(s.why, STRETCH_END_JCC);
}

Test(known, a_load_decides_a_branch_where_nothing_may_have_written_it)
{
    /* cmp byte [0x20000], 0x41; jne +1; nop; hlt: memory holds 0x41 */
    static const uint8_t a[] = { 0x80, 0x3c, 0x25, 0x00, 0x00, 0x02, 0x00, 0x41, 0x75, 0x01, 0x90, 0xf4 };
    code(a, sizeof(a));
    *(uint8_t *)gmem_ptr(&mem, 0x20000, 1) = 0x41;
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x1000b);
    cr_assert_eq(s.nrec, 0);
    cr_assert_eq(s.nh, 0, "a load known not to fault needs no handler");
    /* ...but not with another vCPU, which may write it. */
    const struct stretch_opts two = { 3, NULL, false, NULL, false, true, false };
    gates();
    cr_assert(stretch_plan(&view, &two, &s));
    cr_assert_eq(s.end, 0x10008, "it ends at the jne");
    cr_assert_eq(s.why, STRETCH_END_JCC);
}

Test(known, a_load_after_a_store_that_may_reach_it_is_not_known)
{
    /* mov word [0x1ffff], 0; cmp byte [0x20000], 0x41; jne +1; nop; hlt: the store covers more than the load */
    static const uint8_t a[] = { 0x66, 0xc7, 0x04, 0x25, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00,
                                 0x80, 0x3c, 0x25, 0x00, 0x00, 0x02, 0x00, 0x41, 0x75, 0x01, 0x90, 0xf4 };
    code(a, sizeof(a));
    gates();
    cr_assert(plan_engine(3));
    cr_assert_eq(s.ins[s.nprefix - 1], 0x10012, "it forks at the jne: the store came first");
    cr_assert_eq(s.nleaf, 2);
    /* The same bytes: what it stored. */
    static const uint8_t b[] = { 0xc6, 0x04, 0x25, 0x00, 0x00, 0x02, 0x00, 0x41,
                                 0x80, 0x3c, 0x25, 0x00, 0x00, 0x02, 0x00, 0x41, 0x75, 0x01, 0x90, 0xf4 };
    code(b, sizeof(b));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10013);
    cr_assert_eq(s.nleaf, 1);
}

Test(known, a_load_after_an_access_that_may_go_to_a_device_is_not_known)
{
    /* mov eax, [rbx] (rbx: not RAM); cmp byte [0x20000], 0x41; jne +1; nop; hlt */
    static const uint8_t a[] = { 0x8b, 0x03, 0x80, 0x3c, 0x25, 0x00, 0x00, 0x02, 0x00, 0x41, 0x75, 0x01, 0x90,
                                 0xf4 };
    code(a, sizeof(a));
    *(uint8_t *)gmem_ptr(&mem, 0x20000, 1) = 0x41;
    regs.rbx = 0xfee00000;
    gates();
    cr_assert(plan_engine(3));
    cr_assert_eq(s.nleaf, 2, "the jne is the CPU's: the first load may have been a device's");
    cr_assert_eq(s.ins[s.nprefix - 1], 0x1000a);
}

Test(known, a_paging_entry_its_accesses_walk_is_not_known)
{
    /* cmp qword [0x4080], 0 (the entry that maps this code: the CPU may set its A bit); jne +1; nop; hlt */
    static const uint8_t a[] = { 0x48, 0x83, 0x3c, 0x25, 0x80, 0x40, 0x00, 0x00, 0x00, 0x75, 0x01, 0x90, 0xf4 };
    code(a, sizeof(a));
    gates();
    cr_assert(plan_engine(3));
    cr_assert_eq(s.nleaf, 2, "the jne is the CPU's");
    cr_assert_eq(s.ins[s.nprefix - 1], 0x10009);
    /* Any other page is only data. */
    static const uint8_t b[] = { 0x48, 0x83, 0x3c, 0x25, 0x80, 0x50, 0x00, 0x00, 0x00, 0x75, 0x01, 0x90, 0xf4 };
    code(b, sizeof(b));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x1000c);
    cr_assert_eq(s.nleaf, 1);
}

Test(known, a_bit_test_stores_into_the_unit_of_its_bit)
{
    /* mov ecx, 0x48; bts [0x20000], rcx; mov rax, [0x20008]; test rax, rax; jz +1; nop; hlt */
    static const uint8_t a[] = { 0xb9, 0x48, 0x00, 0x00, 0x00, 0x48, 0x0f, 0xab, 0x0c, 0x25, 0x00, 0x00, 0x02, 0x00,
                                 0x48, 0x8b, 0x04, 0x25, 0x08, 0x00, 0x02, 0x00, 0x48, 0x85, 0xc0, 0x74, 0x01,
                                 0x90, 0xf4 };
    code(a, sizeof(a));
    gates();
    cr_assert(plan_engine(3));
    cr_assert_eq(s.st.n, 1);
    cr_assert_eq(s.st.st[0].gpa, 0x20008, "bit 0x48 lies in the second qword");
    cr_assert_eq(s.nleaf, 2, "the load reads what the bts wrote: the jz is the CPU's");
    cr_assert_eq(s.ins[s.nprefix - 1], 0x10019);
    /* Its offset not known: it ends before it. */
    regs.rcx = 0;
    static const uint8_t b[] = { 0x0f, 0xa2, 0x48, 0x0f, 0xab, 0x0c, 0x25, 0x00, 0x00, 0x02, 0x00, 0xf4 };   /* cpuid */
    code(b, sizeof(b));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10002);
    cr_assert_eq(s.why, STRETCH_END_STORE);
}

/* Loads of what the stretch itself stored, where it knows the value. */

Test(known, a_return_through_a_slot_rewritten_with_a_known_value_goes_on)
{
    /* nop; call T; hlt ... T: mov [rsp], rax; ret (a retpoline), RAX = 0x10020: hlt */
    static const uint8_t a[] = { 0x90, 0xe8, 0x05, 0x00, 0x00, 0x00, 0xf4 };
    static const uint8_t t[] = { 0x48, 0x89, 0x04, 0x24, 0xc3 };
    code(a, sizeof(a));
    memcpy(gmem_ptr(&mem, 0x1000b, sizeof(t)), t, sizeof(t));
    *(uint8_t *)gmem_ptr(&mem, 0x10020, 1) = 0xf4;
    regs.rax = 0x10020;
    gates();
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10020);
    cr_assert_eq(s.nrec, 2);
    cr_assert_eq(s.rec[1].from, 0x1000f);
    cr_assert_eq(s.rec[1].to, 0x10020);
    /* A value it does not know: the return is the CPU's. */
    static const uint8_t u[] = { 0x0f, 0xa2, 0x48, 0x89, 0x04, 0x24, 0xc3 };    /* cpuid first */
    memcpy(gmem_ptr(&mem, 0x1000b, sizeof(u)), u, sizeof(u));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10011);
    cr_assert_eq(s.why, STRETCH_END_RET);
}

Test(known, a_pop_of_what_the_stretch_pushed_is_known)
{
    /* mov ebx,3; push rbx; mov ebx,9; pop rbx; cmp ebx,3; je +1; nop; hlt */
    static const uint8_t a[] = { 0xbb, 0x03, 0x00, 0x00, 0x00, 0x53, 0xbb, 0x09, 0x00, 0x00, 0x00, 0x5b,
                                 0x83, 0xfb, 0x03, 0x74, 0x01, 0x90, 0xf4 };
    code(a, sizeof(a));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.end, 0x10012);
    cr_assert_eq(s.nrec, 1, "the je, taken");
    cr_assert_eq(s.leaf[0].gpr[3], 3);
    /* A store over part of the slot after the push: not the push's value any more. */
    static const uint8_t b[] = { 0xbb, 0x03, 0x00, 0x00, 0x00, 0x53, 0xc6, 0x04, 0x24, 0x07, 0x5b,
                                 0x83, 0xfb, 0x03, 0x74, 0x01, 0x90, 0xf4 };    /* mov byte [rsp], 7 */
    code(b, sizeof(b));
    cr_assert(plan_engine(3));
    cr_assert_eq(s.nleaf, 2, "the je is the CPU's");
}
