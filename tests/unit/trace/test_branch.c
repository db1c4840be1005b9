/* SPDX-License-Identifier: MIT */
/*
 * The engine's predictions, instruction by instruction: kind, taken or not,
 * target, from guest memory and registers as they are before the step.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "trace/branch.h"
#include "vbts/format.h"

static struct gmem mem;
static struct kvm_regs regs;
static struct kvm_sregs sregs;
static struct cpu_view view;

/* 64-bit mode, identity map of the first 2 MiB (PML4 0x1000, PDPT 0x2000, PD 0x3000). */
static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 4u << 20), 0);
    uint64_t e;
    e = 0x2000 | 3; memcpy(gmem_ptr(&mem, 0x1000, 8), &e, 8);
    e = 0x3000 | 3; memcpy(gmem_ptr(&mem, 0x2000, 8), &e, 8);
    e = 0x0 | 0x83; memcpy(gmem_ptr(&mem, 0x3000, 8), &e, 8);
    memset(&regs, 0, sizeof(regs));
    memset(&sregs, 0, sizeof(sregs));
    sregs.cr0 = 0x80000011;
    sregs.cr3 = 0x1000;
    sregs.cr4 = 0x20;
    sregs.efer = 0x500;
    sregs.cs.l = 1;
    regs.rip = 0x10000;
    regs.rsp = 0x20000;
    view = (struct cpu_view){ &mem, &regs, &sregs };
}

static void teardown(void)
{
    gmem_fini(&mem);
}

static void code(const void *bytes, size_t n)
{
    memcpy(gmem_ptr(&mem, regs.rip, n), bytes, n);
}

static struct branch_pred predict(void)
{
    struct branch_pred p;
    const char *why = NULL;
    cr_assert_eq(branch_predict(&view, &p, &why), 0, "%s", why ? why : "");
    return p;
}

TestSuite(branch, .init = setup, .fini = teardown);

Test(branch, not_a_branch)
{
    code("\x48\x01\xd8", 3);                    /* add rax, rbx */
    struct branch_pred p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_UNKNOWN);
    cr_assert_eq(p.len, 3);
    cr_assert_eq(p.from, 0x10000);
}

Test(branch, jcc_to_next_instruction_taken_and_not)
{
    code("\x74\x00", 2);                        /* jz $+2 */
    regs.rflags = 0x2;
    struct branch_pred p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_JCC);
    cr_assert_not(p.taken);
    regs.rflags = 0x42;                         /* ZF */
    p = predict();
    cr_assert(p.taken);
    cr_assert(p.target_known);
    cr_assert_eq(p.target, 0x10002);
}

Test(branch, signed_conditions)
{
    code("\x7c\x10", 2);                        /* jl +0x10: SF != OF */
    regs.rflags = 0x2 | 0x80;
    cr_assert(predict().taken);
    regs.rflags = 0x2 | 0x80 | 0x800;
    cr_assert_not(predict().taken);
    code("\x7e\x10", 2);                        /* jle: ZF or SF != OF */
    regs.rflags = 0x2 | 0x40 | 0x80 | 0x800;
    cr_assert(predict().taken);
}

Test(branch, loop_and_jrcxz_use_rcx)
{
    code("\xe2\xfe", 2);                        /* loop $ */
    regs.rcx = 1;
    cr_assert_not(predict().taken);             /* rcx becomes 0 */
    regs.rcx = 2;
    struct branch_pred p = predict();
    cr_assert(p.taken);
    cr_assert_eq(p.target, 0x10000);
    code("\xe3\x05", 2);                        /* jrcxz +5 */
    regs.rcx = 0x100000000ull;
    cr_assert_not(predict().taken);             /* all 64 bits count */
    code("\x67\xe3\x05", 3);                    /* jecxz +5 */
    cr_assert(predict().taken);                 /* ecx is 0 */
}

Test(branch, direct_call_and_ret_from_stack)
{
    code("\xe8\xfb\x0f\x00\x00", 5);            /* call +0xffb -> 0x11000 */
    struct branch_pred p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_CALL);
    cr_assert_eq(p.target, 0x11000);
    code("\xc3", 1);                            /* ret */
    uint64_t ret = 0x12345;
    memcpy(gmem_ptr(&mem, regs.rsp, 8), &ret, 8);
    p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_RET);
    cr_assert(p.target_known);
    cr_assert_eq(p.target, 0x12345);
}

/*
 * A step that ran two instructions (kvm_pvm: `swapgs; ret` in one step):
 * the RET is looked at after it ran, its target is the slot it popped.
 */
Test(branch, ret_after_it_ran)
{
    code("\x0f\x01\xf8\xc3\xc2\x10\x00", 7);   /* swapgs; ret; ret 16 */
    uint64_t ret = 0x12345, junk = 0x99999;
    memcpy(gmem_ptr(&mem, regs.rsp - 8, 8), &ret, 8);
    memcpy(gmem_ptr(&mem, regs.rsp, 8), &junk, 8);
    struct branch_pred p;
    const char *why = NULL;
    cr_assert_eq(branch_predict_at(&view, 0x10003, &p, &why), 0);
    cr_assert_eq(p.kind, VBTS_KIND_RET);
    cr_assert(p.target_known);
    cr_assert_eq(p.target, 0x12345);
    /* ret 16 popped 8 bytes and released 16 more: its slot is 24 below RSP. */
    memcpy(gmem_ptr(&mem, regs.rsp - 24, 8), &ret, 8);
    memcpy(gmem_ptr(&mem, regs.rsp - 8, 8), &junk, 8);
    cr_assert_eq(branch_predict_at(&view, 0x10004, &p, &why), 0);
    cr_assert(p.target_known);
    cr_assert_eq(p.target, 0x12345);
}

Test(branch, indirect_through_register_and_memory)
{
    code("\x41\xff\xe3", 3);                    /* jmp r11 */
    regs.r11 = 0xabcdef;
    struct branch_pred p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_JMP_IND);
    cr_assert_eq(p.target, 0xabcdef);
    code("\xff\x15\x0a\x00\x00\x00", 6);        /* call [rip+10] */
    uint64_t t = 0x54321;
    memcpy(gmem_ptr(&mem, 0x10010, 8), &t, 8);
    p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_CALL_IND);
    cr_assert_eq(p.target, 0x54321);
}

Test(branch, iretq_target_and_privilege)
{
    code("\x48\xcf", 2);                        /* iretq */
    uint64_t frame[5] = { 0x401000, 0x2b, 0x202, 0x7000, 0x23 };
    memcpy(gmem_ptr(&mem, regs.rsp, sizeof(frame)), frame, sizeof(frame));
    struct branch_pred p = predict();
    cr_assert_eq(p.kind, VBTS_KIND_IRET);
    cr_assert(p.to_user);                       /* RPL 3 from CPL 0 */
}

Test(branch, mov_ss_shadows_the_next_step)
{
    code("\x8e\xd0", 2);                        /* mov ss, ax */
    cr_assert(predict().shadow);
    code("\x0f\x0b", 2);                        /* ud2 */
    cr_assert_eq(predict().vector_hint, 6);
}

Test(branch, unreadable_code)
{
    regs.rip = 0x40000000;                      /* not mapped */
    struct branch_pred p;
    const char *why = NULL;
    cr_assert_eq(branch_predict(&view, &p, &why), -1);
    cr_assert_str_eq(why, "instruction bytes are not in guest RAM");
}

Test(branch, straight_line_flow)
{
    /* nop; jz +2; nop; nop; jmp $ ; nop */
    code("\x90\x74\x02\x90\x90\xeb\xfe\x90", 8);
    cr_assert(branch_straight_line(&view, 0x10000, 0x10005, 100));   /* to the jmp */
    cr_assert_not(branch_straight_line(&view, 0x10000, 0x10007, 100)); /* past it */
    cr_assert_not(branch_straight_line(&view, 0x10000, 0x10005, 3));   /* too long */
}


/* A div that faults for sure is known before it runs: #DE, so no handler passes for straight-line code. */
Test(branch, div_that_faults_is_foreseen)
{
    code("\xf7\xf1", 2);                        /* div ecx */
    regs.rcx = 0;
    cr_assert_eq(predict().vector_hint, 0);
    regs.rcx = 3;
    regs.rdx = 2;
    cr_assert_eq(predict().vector_hint, -1);    /* EDX:EAX / 3 fits */
    regs.rdx = 3;
    cr_assert_eq(predict().vector_hint, 0);     /* the quotient does not fit */
    regs.rcx = 0x100000000ull;                  /* ECX is 0 */
    regs.rdx = 0;
    cr_assert_eq(predict().vector_hint, 0);
    code("\xf6\x35\x00\x10\x00\x00", 6);        /* div byte [rip + 0x1000] */
    *(uint8_t *)gmem_ptr(&mem, regs.rip + 6 + 0x1000, 1) = 0;
    cr_assert_eq(predict().vector_hint, 0);
    *(uint8_t *)gmem_ptr(&mem, regs.rip + 6 + 0x1000, 1) = 2;
    regs.rax = 0x0100;                          /* AH 1 < 2 */
    cr_assert_eq(predict().vector_hint, -1);
    code("\x48\xf7\xf9", 3);                    /* idiv rcx */
    regs.rcx = 0;
    cr_assert_eq(predict().vector_hint, 0);
    regs.rcx = 1;
    cr_assert_eq(predict().vector_hint, -1);
}

/* What the guest's own debugging (trace/gdbg.c) reads of an instruction. */
Test(branch, the_guests_own_debugging)
{
    uint64_t fl = 0x302;                        /* TF and IF */
    memcpy(gmem_ptr(&mem, regs.rsp, 8), &fl, 8);
    code("\x9d", 1);                            /* popfq */
    struct branch_pred p = predict();
    cr_assert(p.loads_flags);
    cr_assert_eq(p.flags_image, 0x302);
    cr_assert_eq(p.dr, -1);
    code("\x0f\x23\xf8", 3);                    /* mov dr7, rax */
    p = predict();
    cr_assert(!p.loads_flags);
    cr_assert_eq(p.dr, 7);
    cr_assert(p.dr_write);
    code("\x0f\x21\xf0", 3);                    /* mov rax, dr6 */
    p = predict();
    cr_assert_eq(p.dr, 6);
    cr_assert(!p.dr_write);
    code("\x90", 1);                            /* nop */
    cr_assert_eq(predict().dr, -1);
}

/* SYSRET goes to RCX and loads RFLAGS from R11: its TF is the guest's (trace/gdbg.c). */
Test(branch, sysret_loads_its_flags_from_r11)
{
    code("\x48\x0f\x07", 3);                    /* sysretq */
    regs.rcx = 0x400123;
    regs.r11 = 0x302;
    struct branch_pred p = predict();
    cr_assert(p.taken && p.target_known);
    cr_assert_eq(p.target, 0x400123);
    cr_assert(p.to_user);
    cr_assert(p.loads_flags);
    cr_assert_eq(p.flags_image, 0x302);
    code("\x0f\x07", 2);                        /* sysretl: ECX */
    regs.rcx = 0xffffffff00400123ull;
    p = predict();
    cr_assert_eq(p.target, 0x400123);
}

/* What a frame pushed during the step holds of RFLAGS (deliver_before). */
static void frame_flags(const char *bytes, size_t n, bool fault_exact, bool trap_kept)
{
    code(bytes, n);
    struct branch_pred p = predict();
    bool f, k;
    branch_frame_flags(&p, &f, &k);
    cr_assert_eq(f, fault_exact, "%02x: fault_exact", (uint8_t)bytes[0]);
    cr_assert_eq(k, trap_kept, "%02x: trap_kept", (uint8_t)bytes[0]);
}

Test(branch, what_a_frame_holds_of_rflags)
{
    frame_flags("\x48\x01\xd8", 3, true, true);             /* add rax, rbx */
    frame_flags("\xeb\x00", 2, true, true);                 /* jmp $+2 */
    frame_flags("\xeb\xfe", 2, false, true);                /* jmp $: returns to itself after it */
    frame_flags("\xa6", 1, false, true);                    /* cmpsb: flags of a round */
    frame_flags("\xfb", 1, true, false);                    /* sti */
    frame_flags("\x9d", 1, true, false);                    /* popfq */
    frame_flags("\x0f\x01\xc1", 3, true, false);            /* vmcall */
    regs.rsp = 0x20000;
    memcpy(gmem_ptr(&mem, 0x20000, 8), "\x00\x00\x03\x00\x00\x00\x00\x00", 8);
    frame_flags("\xc3", 1, true, true);                     /* ret to 0x30000 */
    regs.rax = 0x10000;
    frame_flags("\xff\xe0", 2, false, true);                /* jmp rax, to itself */
    regs.rax = 0x10010;
    frame_flags("\xff\xe0", 2, true, true);
}
