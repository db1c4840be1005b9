/* SPDX-License-Identifier: MIT */
/*
 * Reading steps that did not end where the instruction goes: swallowed
 * straight-line steps, and which IDT vector an unexpected RIP belongs to.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "trace/attrib.h"
#include "vbts/format.h"
#include "vbts/le.h"

static struct gmem mem;
static struct kvm_regs regs;
static struct kvm_sregs sregs;
static struct cpu_view view;

/* 64-bit mode, 2 MiB identity page; an IDT at 0x8000 with #UD -> 0x3000 and #PF -> 0x4000. */
static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 4u << 20), 0);
    vbts_put64(gmem_ptr(&mem, 0x1000, 8), 0x2000 | 3);
    vbts_put64(gmem_ptr(&mem, 0x2000, 8), 0x5000 | 3);
    vbts_put64(gmem_ptr(&mem, 0x5000, 8), 0x83);
    memset(&regs, 0, sizeof(regs));
    memset(&sregs, 0, sizeof(sregs));
    sregs.cr0 = 0x80000011;
    sregs.cr3 = 0x1000;
    sregs.cr4 = 0x20;
    sregs.efer = 0x500;
    sregs.cs.l = 1;
    sregs.idt.base = 0x8000;
    sregs.idt.limit = 16 * 32 - 1;
    const unsigned vec[2] = { 6, 14 };
    const uint32_t handler[2] = { 0x3000, 0x4000 };
    for (int i = 0; i < 2; i++) {
        uint8_t *g = gmem_ptr(&mem, 0x8000 + 16 * vec[i], 16);
        vbts_put16(g, (uint16_t)handler[i]);
        vbts_put16(g + 2, 0x08);
        g[5] = 0x8e;
    }
    /* #UD handler: nop; nop; jmp 0x3010.  #PF handler: push rax. */
    static const uint8_t ud[] = { 0x90, 0x90, 0xeb, 0x0c };
    memcpy(gmem_ptr(&mem, 0x3000, sizeof(ud)), ud, sizeof(ud));
    *(uint8_t *)gmem_ptr(&mem, 0x4000, 1) = 0x50;
    view = (struct cpu_view){ &mem, &regs, &sregs };
}

static void teardown(void)
{
    gmem_fini(&mem);
}

TestSuite(attrib, .init = setup, .fini = teardown);

Test(attrib, swallowed_straight_line_and_a_branch)
{
    struct branch_pred rec;
    bool has;
    cr_assert(attrib_skip(&view, 0x3000, 0x3002, 4, false, &rec, &has));
    cr_assert_not(has);
    cr_assert(attrib_skip(&view, 0x3000, 0x3010, 4, false, &rec, &has));
    cr_assert(has, "the jmp after two nops makes a record");
    cr_assert_eq(rec.from, 0x3002);
    cr_assert_eq(rec.target, 0x3010);
    cr_assert_eq(rec.kind, VBTS_KIND_JMP);
    cr_assert_not(attrib_skip(&view, 0x3000, 0x3010, 2, false, &rec, &has), "more steps than allowed");
    cr_assert_not(attrib_skip(&view, 0x3000, 0x3020, 4, false, &rec, &has), "not where the jmp goes");
}

Test(attrib, event_at_a_handler_or_just_past_it)
{
    struct attrib_event a;
    attrib_event(&view, 0x4000, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_OK);
    cr_assert_eq(a.vector, 14);
    cr_assert_eq(a.handler, 0x4000);
    cr_assert_not(a.has_skip);
    attrib_event(&view, 0x3010, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_OK, "the #UD handler's first instructions ran unseen");
    cr_assert_eq(a.vector, 6);
    cr_assert(a.has_skip);
    cr_assert_eq(a.skip.from, 0x3002);
    attrib_event(&view, 0x9999, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_NONE);
    attrib_event(&view, 0x4000, 6, true, 4, &a);
    cr_assert_eq(a.status, ATTRIB_NONE, "only the hinted vector");
    cr_assert_eq(attrib_kind(VBTS_KIND_EXCEPTION, 14), VBTS_KIND_EXCEPTION);
    cr_assert_eq(attrib_kind(VBTS_KIND_EXCEPTION, 32), VBTS_KIND_INTERRUPT);
    cr_assert_eq(attrib_kind(VBTS_KIND_EXCEPTION, 2), VBTS_KIND_INTERRUPT, "the NMI");
    cr_assert_eq(attrib_kind(VBTS_KIND_INT, 0x80), VBTS_KIND_INT);
}

/* gate VEC -> HANDLER in the test IDT, whose limit grows to take it. */
static void gate(unsigned vec, uint32_t handler)
{
    uint8_t *g = gmem_ptr(&mem, 0x8000 + 16 * vec, 16);
    memset(g, 0, 16);
    vbts_put16(g, (uint16_t)handler);
    vbts_put16(g + 2, 0x08);
    g[5] = 0x8e;
    if (sregs.idt.limit < 16 * vec + 15)
        sregs.idt.limit = (uint16_t)(16 * vec + 15);
}

/* Vectors that would give the same record are one explanation; different records are several. */
Test(attrib, vectors_sharing_a_handler)
{
    struct attrib_event a;
    /* Two interrupt vectors on the #UD code: the same record, an interrupt. */
    gate(6, 0x5000);
    gate(0xec, 0x3000);
    gate(0xed, 0x3000);
    attrib_event(&view, 0x3010, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_OK, "one handler, both interrupts");
    cr_assert_eq(a.vector, 0xec);
    cr_assert_eq(attrib_kind(VBTS_KIND_EXCEPTION, a.vector), VBTS_KIND_INTERRUPT);
    cr_assert(a.has_skip);
    /* An exception on it too: its record's kind differs. */
    gate(6, 0x3000);
    attrib_event(&view, 0x3010, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_SEVERAL);
    cr_assert_eq(a.vector, 6);
    cr_assert_eq(a.other, 0xec);
    attrib_event(&view, 0x3010, 0xed, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_OK, "the hint decides");
    cr_assert_eq(a.vector, 0xed);
    /* Two exceptions on one handler: the frame differs (error code or not), so several. */
    gate(0xec, 0x5000);
    gate(0xed, 0x5000);
    gate(13, 0x3000);
    attrib_event(&view, 0x3010, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_SEVERAL);
    cr_assert_eq(a.other, 13);
    /* A gate the CPU never raises (#MC, reserved 22) explains nothing unless hinted. */
    gate(6, 0x5000);
    gate(13, 0x5000);
    gate(18, 0x3000);
    gate(22, 0x3000);
    gate(21, 0x3000);
    attrib_event(&view, 0x3010, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_NONE);
    sregs.cr4 |= 1u << 23;
    attrib_event(&view, 0x3010, -1, false, 4, &a);
    cr_assert_eq(a.status, ATTRIB_OK, "#CP with CET");
    cr_assert_eq(a.vector, 21);
    sregs.cr4 &= ~(1u << 23);
    attrib_event(&view, 0x3010, 18, true, 4, &a);
    cr_assert_eq(a.status, ATTRIB_OK, "#MC injected by the monitor");
    cr_assert_eq(a.vector, 18);
}

/* What a run does to RSP: pushes, pops, calls, returns and constants add up; other writes are unknown. */
Test(attrib, stack_pointer_of_a_run)
{
    /* push rax; push rbx; pop rcx; sub rsp, 0x20; lea rsp, [rsp + 8]; call 0x6100 */
    static const uint8_t run[] = { 0x50, 0x53, 0x59, 0x48, 0x83, 0xec, 0x20, 0x48, 0x8d, 0x64, 0x24, 0x08,
                                   0xe8, 0xf0, 0x00, 0x00, 0x00 };
    memcpy(gmem_ptr(&mem, 0x6000, sizeof(run)), run, sizeof(run));
    int64_t d;
    cr_assert(attrib_run_sp(&view, 0x6000, 0x6003, 8, &d));
    cr_assert_eq(d, -8);
    cr_assert(attrib_run_sp(&view, 0x6000, 0x6100, 8, &d));
    cr_assert_eq(d, -8 - 0x20 + 8 - 8);
    /* nop; nop: no change */
    cr_assert(attrib_run_sp(&view, 0x3000, 0x3002, 8, &d));
    cr_assert_eq(d, 0);
    /* mov rsp, rax: unknown */
    static const uint8_t mov[] = { 0x48, 0x89, 0xc4, 0x90 };
    memcpy(gmem_ptr(&mem, 0x6200, sizeof(mov)), mov, sizeof(mov));
    cr_assert_not(attrib_run_sp(&view, 0x6200, 0x6204, 8, &d));
    /* pop rsp (Linux leaving its irq stack): loads it, unknown; push rsp: -8 */
    static const uint8_t poprsp[] = { 0x5c, 0x54 };
    memcpy(gmem_ptr(&mem, 0x6300, sizeof(poprsp)), poprsp, sizeof(poprsp));
    cr_assert_not(attrib_run_sp(&view, 0x6300, 0x6301, 8, &d));
    cr_assert(attrib_run_sp(&view, 0x6301, 0x6302, 8, &d));
    cr_assert_eq(d, -8);
    /* more instructions than max: no answer */
    cr_assert_not(attrib_run_sp(&view, 0x6000, 0x6100, 3, &d));
}
