/* SPDX-License-Identifier: MIT */
/* Delivering events in software as the CPU does: frames, stacks, segments, flags. */
#include "machine.h"
#include "x86/deliver.h"

TestSuite(deliver, .init = machine_setup, .fini = machine_teardown);

static uint64_t q(uint64_t a)
{
    return vbts_le64(gmem_ptr(&mem, a, 8));
}

Test(deliver, page_fault_on_the_same_stack)
{
    gate64(14, 0x30000, 0x08, 0xe, 0, 0);
    struct delivery d = { .kind = DELIVER_FAULT, .vector = 14, .has_error = true, .error = 2,
                          .cr2 = 0x123456 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), 0, "%s", why);
    cr_assert_eq(h, 0x30000);
    cr_assert_eq(vec, 14);
    /* RSP 0x50008 aligned down to 0x50000: SS, RSP, RFLAGS, CS, RIP, error below it. */
    cr_assert_eq(regs.rsp, 0x50000 - 48);
    cr_assert_eq(q(0x50000 - 48), 2, "error code");
    cr_assert_eq(q(0x50000 - 40), 0x10000, "a fault returns to the instruction");
    cr_assert_eq(q(0x50000 - 32), 0x08);
    cr_assert_eq(q(0x50000 - 24), 0x202 | RFLAGS_RF, "fault-class: RF in the image");
    cr_assert_eq(q(0x50000 - 16), 0x50008, "the stack pointer before the alignment");
    cr_assert_eq(q(0x50000 - 8), 0x10);
    cr_assert_eq(regs.rip, 0x30000);
    cr_assert_eq(regs.rflags & RFLAGS_IF, 0, "an interrupt gate clears IF");
    cr_assert_eq(sregs.cr2, 0x123456);
}

Test(deliver, int3_from_user_mode_switches_stacks)
{
    to_user();
    gate64(3, 0x31000, 0x08, 0xf, 3, 0);
    regs.rflags = 0x246 | RFLAGS_TF;
    struct delivery d = { .kind = DELIVER_TRAP, .vector = 3, .insn_len = 1 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), 0, "%s", why);
    cr_assert_eq(regs.rsp, 0x90000 - 40, "RSP0 from the TSS");
    cr_assert_eq(q(0x90000 - 40), 0x10001, "a trap returns after the instruction");
    cr_assert_eq(q(0x90000 - 32), 0x23);
    cr_assert_eq(q(0x90000 - 24), 0x246 | RFLAGS_TF, "the image keeps what the guest had");
    cr_assert_eq(q(0x90000 - 16), 0x50008);
    cr_assert_eq(q(0x90000 - 8), 0x1b);
    cr_assert_eq(cpu_cpl(&sregs), 0);
    cr_assert_eq(sregs.ss.selector, 0, "a null SS at the new privilege");
    cr_assert_eq(sregs.ss.dpl, 0);
    cr_assert_eq(regs.rflags & RFLAGS_TF, 0, "delivery clears TF");
    cr_assert_eq(regs.rflags & RFLAGS_IF, RFLAGS_IF, "a trap gate keeps IF");
}

Test(deliver, int_n_through_a_kernel_gate_is_a_gp)
{
    to_user();
    gate64(0x80, 0x32000, 0x08, 0xe, 0, 0);
    gate64(13, 0x33000, 0x08, 0xe, 0, 0);
    struct delivery d = { .kind = DELIVER_SOFT, .vector = 0x80, .insn_len = 2 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), 0, "%s", why);
    cr_assert_eq(vec, 13);
    cr_assert_eq(h, 0x33000);
    cr_assert_eq(q(regs.rsp), 0x80 * 8 + 2, "the error code names the gate");
    cr_assert_eq(q(regs.rsp + 8), 0x10000, "#GP is a fault: it returns to the int");
}

Test(deliver, nmi_on_its_ist_stack)
{
    gate64(2, 0x34000, 0x08, 0xe, 0, 1);
    struct delivery d = { .kind = DELIVER_NMI, .vector = 2 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), 0, "%s", why);
    cr_assert_eq(regs.rsp, 0xa0000 - 40);
    cr_assert_eq(q(0xa0000 - 40), 0x10000, "an interrupt returns to the next instruction");
}

Test(deliver, refusals_leave_the_state_alone)
{
    struct kvm_regs r0 = regs;
    struct delivery d = { .kind = DELIVER_FAULT, .vector = 6 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), -1);
    cr_assert_str_eq(why, "the IDT entry is not present (the CPU raises #NP)");
    cr_assert_eq(memcmp(&r0, &regs, sizeof(r0)), 0);
    gate64(6, 0x35000, 0x08, 0xe, 0, 0);
    PTE(0x4f000, 0);                    /* the stack page is gone */
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), -1);
    cr_assert_str_eq(why, "the stack for the frame is not mapped (the CPU raises #PF)");
    cr_assert_eq(memcmp(&r0, &regs, sizeof(r0)), 0);
}

Test(deliver, protected_mode_32_bit_gate)
{
    sregs.cr0 = 0x11;                   /* paging off */
    sregs.efer = 0;
    sregs.cs = (struct kvm_segment){ .selector = 0x28, .limit = 0xffffffff, .type = 0xb,
                                     .present = 1, .s = 1, .db = 1, .g = 1 };
    sregs.idt.limit = 256 * 8 - 1;
    uint8_t *g = gmem_ptr(&mem, 0x8000 + 8 * 6, 8);
    memset(g, 0, 8);
    vbts_put16(g, 0x6000 + 0x100);
    vbts_put16(g + 2, 0x28);
    g[5] = 0x8f;                        /* 32-bit trap gate */
    regs.rsp = 0x50000;
    struct delivery d = { .kind = DELIVER_FAULT, .vector = 6 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), 0, "%s", why);
    cr_assert_eq(h, 0x6100);
    cr_assert_eq(regs.rsp, 0x50000 - 12, "EIP, CS, EFLAGS: 4 bytes each, no alignment");
    cr_assert_eq(vbts_le32(gmem_ptr(&mem, 0x50000 - 12, 4)), 0x10000);
    cr_assert_eq(vbts_le32(gmem_ptr(&mem, 0x50000 - 8, 4)), 0x28);
}

Test(deliver, real_mode_ivt)
{
    sregs.cr0 = 0x10;
    sregs.efer = 0;
    sregs.cs = (struct kvm_segment){ .selector = 0x1000, .base = 0x10000, .limit = 0xffff,
                                     .type = 0xb, .present = 1, .s = 1 };
    sregs.ss = (struct kvm_segment){ .selector = 0, .base = 0, .limit = 0xffff, .type = 3,
                                     .present = 1, .s = 1 };
    sregs.idt.base = 0;
    sregs.idt.limit = 0x3ff;
    regs.rip = 0x10;
    regs.rsp = 0x7000;
    vbts_put32(gmem_ptr(&mem, 0x21 * 4, 4), 0x20000040);
    struct delivery d = { .kind = DELIVER_SOFT, .vector = 0x21, .insn_len = 2 };
    uint64_t h;
    unsigned vec;
    const char *why = NULL;
    cr_assert_eq(deliver_event(&mem, &regs, &sregs, &d, &h, &vec, &why), 0, "%s", why);
    cr_assert_eq(h, 0x20040);
    cr_assert_eq(regs.rsp, 0x7000 - 6);
    cr_assert_eq(vbts_le16(gmem_ptr(&mem, 0x7000 - 6, 2)), 0x12, "IP after the int");
    cr_assert_eq(vbts_le16(gmem_ptr(&mem, 0x7000 - 4, 2)), 0x1000);
    cr_assert_eq(sregs.cs.selector, 0x2000);
}

Test(deliver, syscall_from_user_mode)
{
    to_user();
    sregs.efer |= EFER_SCE;
    regs.rflags = 0x10302;              /* RF, IF, TF: the guest's own */
    struct deliver_syscall_msrs m = { .star = 0x0023001000000000ull, .lstar = 0xffffffff81c00000ull,
                                      .fmask = 0x47700 };
    const char *why = NULL;
    cr_assert_eq(deliver_syscall(&regs, &sregs, &m, 2, &why), 0, "%s", why);
    cr_assert_eq(regs.rcx, 0x10002, "RCX: the next instruction");
    cr_assert_eq(regs.r11, 0x302, "R11: RFLAGS without RF");
    cr_assert_eq(regs.rflags, 0x2, "RFLAGS masked by FMASK (TF, IF, DF, AC, NT)");
    cr_assert_eq(regs.rip, 0xffffffff81c00000ull);
    cr_assert_eq(sregs.cs.selector, 0x10);
    cr_assert(sregs.cs.l && sregs.cs.dpl == 0);
    cr_assert_eq(sregs.ss.selector, 0x18);
    cr_assert_eq(sregs.ss.dpl, 0, "CPL 0");
}

Test(deliver, syscall_refused_without_sce_or_outside_64_bit_mode)
{
    struct deliver_syscall_msrs m = { .star = 0x0023001000000000ull, .lstar = 0x1234 };
    const char *why = NULL;
    sregs.efer &= ~EFER_SCE;
    cr_assert_eq(deliver_syscall(&regs, &sregs, &m, 2, &why), -1);
    cr_assert_str_eq(why, "SYSCALL with EFER.SCE clear raises #UD");
    sregs.efer |= EFER_SCE;
    sregs.cs.l = 0;
    sregs.cs.db = 1;
    cr_assert_eq(deliver_syscall(&regs, &sregs, &m, 2, &why), -1, "Intel: compatibility mode's #UD");
    cr_assert_str_eq(why, "SYSCALL in compatibility mode raises #UD on this vendor (not modelled)");
    cr_assert_eq(regs.rip, 0x10000, "nothing changed");
    sregs.efer &= ~EFER_LMA;
    m.compat_cstar = true;
    cr_assert_eq(deliver_syscall(&regs, &sregs, &m, 2, &why), -1);
    cr_assert_str_eq(why, "SYSCALL outside long mode is not modelled");
}

/* AMD: SYSCALL from compatibility mode goes to CSTAR, in 64-bit code. */
Test(deliver, syscall_from_compatibility_mode_on_amd)
{
    sregs.efer |= EFER_SCE;
    sregs.cs.l = 0;
    sregs.cs.db = 1;
    regs.rflags = 0x302;
    struct deliver_syscall_msrs m = { .star = 0x0023001000000000ull, .lstar = 0x1234, .cstar = 0x5678,
                                      .fmask = 0x100, .compat_cstar = true };
    const char *why = NULL;
    cr_assert_eq(deliver_syscall(&regs, &sregs, &m, 2, &why), 0, "%s", why);
    cr_assert_eq(regs.rip, 0x5678);
    cr_assert_eq(regs.rcx, 0x10002);
    cr_assert_eq(regs.r11, 0x302);
    cr_assert_eq(regs.rflags, 0x202, "TF masked by FMASK");
    cr_assert(sregs.cs.l, "64-bit code");
    cr_assert_eq(cpu_mode(&sregs), MODE_LONG64);
}

Test(deliver, untrap_clears_the_monitors_tf_in_a_frame_from_user_mode)
{
    to_user();
    regs.rip = 0x10000;
    /* The CPU's frame on RSP0 (0x90000) after an exception from CPL3 with TF set. */
    uint64_t f = 0x90000 - 40;
    vbts_put64(gmem_ptr(&mem, f, 8), 0x10000);
    vbts_put64(gmem_ptr(&mem, f + 8, 8), 0x23);
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x302);
    struct deliver_before b = { .regs = &regs, .sregs = &sregs, .next_rip = 0x10003 };
    cr_assert(deliver_seen(&mem, &b));
    b.wrote = f + 16;
    b.wrote_len = 8;
    cr_assert_not(deliver_seen(&mem, &b), "over bytes the instruction stored: its data, not a frame");
    b.wrote_len = 0;
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0xffffffff);
    cr_assert_not(deliver_seen(&mem, &b), "TF, but reserved bits set: no RFLAGS image (a pushed -1)");
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x300);
    cr_assert_not(deliver_seen(&mem, &b), "bit 1 clear: no RFLAGS image");
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x302);
    cr_assert(deliver_untrap(&mem, &b));
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, f + 16, 8)), 0x202, "TF cleared, IF kept");
    cr_assert_not(deliver_seen(&mem, &b), "no frame with TF left");
}

Test(deliver, a_frame_is_told_from_old_bytes_by_its_flags)
{
    to_user();
    regs.rip = 0x10000;
    regs.rflags = 0x246;                /* IF, ZF, PF */
    uint64_t f = 0x90000 - 40;
    vbts_put64(gmem_ptr(&mem, f, 8), 0x10000);
    vbts_put64(gmem_ptr(&mem, f + 8, 8), 0x23);
    struct deliver_before b = { .regs = &regs, .sregs = &sregs, .next_rip = 0x10003, .fault_flags_exact = true,
                                .trap_flags_kept = true };
    /* Returning to the instruction: RFLAGS as they were, TF and RF aside. */
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x346);
    cr_assert(deliver_seen(&mem, &b));
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x10346);
    cr_assert(deliver_seen(&mem, &b), "a fault's image has RF");
    /* A far call's return address over a pushed value with TF's bit: not a frame. */
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x302);
    cr_assert_not(deliver_seen(&mem, &b));
    b.fault_flags_exact = false;
    cr_assert(deliver_seen(&mem, &b), "where the flags are not known (after a CMPS round), any image");
    /* Returning after it: its arithmetic flags may have changed, not IF. */
    vbts_put64(gmem_ptr(&mem, f, 8), 0x10003);
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x303);
    cr_assert(deliver_seen(&mem, &b));
    vbts_put64(gmem_ptr(&mem, f + 16, 8), 0x103);
    cr_assert_not(deliver_seen(&mem, &b), "IF differs");
    b.trap_flags_kept = false;
    cr_assert(deliver_seen(&mem, &b), "after a CLI, STI or POPF: any image");
}

Test(deliver, segment_from_the_gdt)
{
    struct kvm_segment s;
    const char *why;
    cr_assert_eq(deliver_segment(&mem, &sregs, 0x23, &s, &why), 0);
    cr_assert(s.l && s.dpl == 3 && s.type == 0xb && s.present && s.selector == 0x23);
    cr_assert_eq(deliver_segment(&mem, &sregs, 0x1b, &s, &why), 0);
    cr_assert(!s.l && s.dpl == 3 && s.type == 3);
    cr_assert_eq(deliver_segment(&mem, &sregs, 0x40, &s, &why), -1, "outside the GDT");
}

/* A dry run: whether the delivery faults on the way in, and nothing written. */
Test(deliver, would_fault_writes_nothing)
{
    gate64(0, 0x30000, 0x08, 0xe, 0, 0);
    const char *why = NULL;
    uint64_t before = q(0x50000 - 8);
    struct kvm_regs r0 = regs;
    cr_assert_not(deliver_would_fault(&mem, &regs, &sregs, 0, &why), "%s", why);
    cr_assert_eq(q(0x50000 - 8), before, "no frame written");
    cr_assert_eq(regs.rip, r0.rip, "registers as they were");
    cr_assert(deliver_would_fault(&mem, &regs, &sregs, 6, &why), "no gate for #UD");
    cr_assert_not_null(strstr(why, "not present"), "%s", why);
    gate64(13, 0x30000, 0x08, 0xe, 0, 0);
    regs.rsp = 0x1fff008;                       /* beyond the mapped 2 MiB: the frame's page */
    cr_assert(deliver_would_fault(&mem, &regs, &sregs, 13, &why));
    cr_assert_not_null(strstr(why, "stack"), "%s", why);
}

/* A handler's code segment with L and D both set is no 64-bit one: the CPU raises #GP. */
Test(deliver, a_code_segment_with_l_and_d_is_refused)
{
    vbts_put64(gmem_ptr(&mem, 0x6000 + 7 * 8, 8), 0x00ef9a000000ffffull);     /* G, D, L */
    sregs.gdt.limit = 8 * 8 - 1;
    gate64(6, 0x30000, 0x38, 0xe, 0, 0);
    const char *why = NULL;
    cr_assert(deliver_would_fault(&mem, &regs, &sregs, 6, &why));
    cr_assert_not_null(strstr(why, "L and D"), "%s", why);
    gate64(6, 0x30000, 0x08, 0xe, 0, 0);
    cr_assert_not(deliver_would_fault(&mem, &regs, &sregs, 6, &why), "%s", why);
}

/* deliver_nested: the fault on the way in, serially or as #DF (SDM vol. 3, 6.15). */
static int nested(struct delivery d, uint64_t *h, unsigned *vec)
{
    const char *why = NULL;
    return deliver_nested(&mem, &regs, &sregs, &d, h, vec, &why);
}

Test(deliver, nested_int3_through_a_gate_not_present_is_an_np)
{
    gate64(11, 0x35000, 0x08, 0xe, 0, 0);
    uint64_t h;
    unsigned vec;
    cr_assert_eq(nested((struct delivery){ .kind = DELIVER_TRAP, .vector = 3, .insn_len = 1 }, &h, &vec), 0);
    cr_assert_eq(vec, 11);
    cr_assert_eq(h, 0x35000);
    cr_assert_eq(q(regs.rsp), 3 * 8 + 2, "the gate's error code, EXT clear for the program's int3");
    cr_assert_eq(q(regs.rsp + 8), 0x10000, "a fault on the int3");
}

Test(deliver, nested_a_stack_not_present_is_a_pf_with_its_cr2)
{
    gate64(0, 0x30000, 0x08, 0xe, 0, 0);
    gate64(14, 0x36000, 0x08, 0xe, 0, 1);
    PTE(0x4f000, 0);
    uint64_t h;
    unsigned vec;
    cr_assert_eq(nested((struct delivery){ .kind = DELIVER_FAULT, .vector = 0 }, &h, &vec), 0);
    cr_assert_eq(vec, 14);
    cr_assert_eq(h, 0x36000);
    cr_assert_eq(regs.rsp, 0xa0000 - 48, "IST1");
    cr_assert_eq(q(regs.rsp), 2, "a write, not present, supervisor");
    cr_assert_eq(sregs.cr2, 0x50000 - 8, "the first slot pushed");
}

Test(deliver, nested_pf_on_pf_is_a_double_fault)
{
    gate64(14, 0x36000, 0x08, 0xe, 0, 0);
    gate64(8, 0x37000, 0x08, 0xe, 0, 1);
    PTE(0x4f000, 0);
    uint64_t h;
    unsigned vec;
    struct delivery pf = { .kind = DELIVER_FAULT, .vector = 14, .has_error = true, .cr2 = 0x1234 };
    cr_assert_eq(nested(pf, &h, &vec), 0);
    cr_assert_eq(vec, 8);
    cr_assert_eq(h, 0x37000);
    cr_assert_eq(q(regs.rsp), 0, "#DF's error code");
    cr_assert_eq(sregs.cr2, 0x50000 - 8, "the second #PF's address");
}

Test(deliver, nested_gp_on_gp_is_a_double_fault_and_on_it_a_shutdown)
{
    gate64(13, 0x38000, 0x10, 0xe, 0, 0);              /* a data segment: #GP(0x10 | EXT) */
    gate64(8, 0x37000, 0x08, 0xe, 0, 0);
    uint64_t h;
    unsigned vec;
    struct delivery gp = { .kind = DELIVER_FAULT, .vector = 13, .has_error = true };
    cr_assert_eq(nested(gp, &h, &vec), 0);
    cr_assert_eq(vec, 8);
    machine_teardown();
    machine_setup();
    gate64(13, 0x38000, 0x10, 0xe, 0, 0);
    struct kvm_regs r0 = regs;
    uint64_t cr2 = sregs.cr2;
    const char *why = NULL;
    cr_assert_eq(deliver_nested(&mem, &regs, &sregs, &gp, &h, &vec, &why), -2, "#DF's gate is not there");
    cr_assert(strstr(why, "shuts down"), "%s", why);
    cr_assert_eq(memcmp(&regs, &r0, sizeof(regs)), 0, "nothing changed");
    cr_assert_eq(sregs.cr2, cr2);
}

Test(deliver, nested_np_error_code_has_ext_for_an_exception)
{
    gate64(6, 0x30000, 0x28, 0xe, 0, 0);               /* selector 0x28: present, 32-bit code */
    gate64(13, 0x38000, 0x08, 0xe, 0, 0);
    uint64_t h;
    unsigned vec;
    cr_assert_eq(nested((struct delivery){ .kind = DELIVER_FAULT, .vector = 6 }, &h, &vec), 0);
    cr_assert_eq(vec, 13);
    cr_assert_eq(q(regs.rsp), 0x28 | 1, "the selector, EXT set: #UD is no program's int");
}

Test(deliver, raises_only_what_the_cpu_raises_on_the_way_in)
{
    struct delivery d = { .kind = DELIVER_SOFT, .vector = 0x80, .insn_len = 2 };
    gate64(0x80, 0x30000, 0x08, 0xe, 0, 0);
    cr_assert_not(deliver_raises(&mem, &regs, &sregs, &d), "a good gate");
    gate64(0x80, 0x30000, 0x10, 0xe, 0, 0);
    cr_assert(deliver_raises(&mem, &regs, &sregs, &d), "a data segment: #GP");
    gate64(0x80, 0x30000, 0x0c, 0xe, 0, 0);
    cr_assert_not(deliver_raises(&mem, &regs, &sregs, &d), "an LDT selector: not modelled");
    cr_assert_eq(regs.rip, 0x10000, "nothing changed");
}
