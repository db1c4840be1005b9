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
    cr_assert_eq(attrib_kind(VBTS_KIND_INT, 0x80), VBTS_KIND_INT);
}
