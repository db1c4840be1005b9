/* SPDX-License-Identifier: MIT */
/* An x86 vCPU's state as instructions see it: modes, linear addresses, fetch, descriptors, the IDT. */
#include <criterion/criterion.h>
#include <string.h>

#include "vbts/le.h"
#include "x86/cpu.h"

static struct gmem mem;
static struct kvm_regs regs;
static struct kvm_sregs sregs;
static struct cpu_view view;

/* 64-bit mode, 4 KiB pages for the first 2 MiB (PML4 0x1000, PDPT 0x2000, PD 0x3000, PT 0x4000). */
static void setup(void)
{
    cr_assert_eq(gmem_init(&mem, 4u << 20), 0);
    vbts_put64(gmem_ptr(&mem, 0x1000, 8), 0x2000 | 3);
    vbts_put64(gmem_ptr(&mem, 0x2000, 8), 0x3000 | 3);
    vbts_put64(gmem_ptr(&mem, 0x3000, 8), 0x4000 | 3);
    for (uint64_t i = 0; i < 512; i++)
        vbts_put64(gmem_ptr(&mem, 0x4000 + 8 * i, 8), (i << 12) | 3);
    memset(&regs, 0, sizeof(regs));
    memset(&sregs, 0, sizeof(sregs));
    sregs.cr0 = 0x80000011;
    sregs.cr3 = 0x1000;
    sregs.cr4 = 0x20;
    sregs.efer = 0x500;
    sregs.cs.l = 1;
    regs.rip = 0x10000;
    view = (struct cpu_view){ &mem, &regs, &sregs };
}

static void teardown(void)
{
    gmem_fini(&mem);
}

TestSuite(cpu, .init = setup, .fini = teardown);

Test(cpu, modes_and_linear_ip)
{
    cr_assert_eq(cpu_mode(&sregs), MODE_LONG64);
    cr_assert_eq(cpu_linear_ip(&regs, &sregs), 0x10000);
    sregs.cs.l = 0;
    sregs.cs.db = 1;
    sregs.cs.base = 0x1000;
    cr_assert_eq(cpu_mode(&sregs), MODE_COMPAT32);
    cr_assert_eq(cpu_linear_ip(&regs, &sregs), 0x11000, "CS base counts outside 64-bit mode");
    sregs.efer = 0;
    cr_assert_eq(cpu_mode(&sregs), MODE_PROT32);
    sregs.cs.db = 0;
    cr_assert_eq(cpu_mode(&sregs), MODE_PROT16);
    regs.rip = 0x12345;
    cr_assert_eq(cpu_linear_ip(&regs, &sregs), 0x1000 + 0x2345, "16-bit IP wraps");
    sregs.cr0 = 0;
    sregs.cs.selector = 3;
    cr_assert_eq(cpu_mode(&sregs), MODE_REAL16);
    cr_assert_eq(cpu_cpl(&sregs), 0, "real mode is CPL 0 whatever CS says");
    cr_assert_eq(cpu_stack_width(&sregs), 16);
}

Test(cpu, where_a_branch_may_go)
{
    cr_assert(cpu_ip_allowed(&sregs, 0x00007fffffffffffull));
    cr_assert_not(cpu_ip_allowed(&sregs, 0x0000800000000000ull), "not canonical: #GP in 64-bit mode");
    cr_assert(cpu_ip_allowed(&sregs, 0xffff800000000000ull));
    sregs.cs.l = 0;
    sregs.cs.db = 1;
    sregs.efer = 0;
    sregs.cs.limit = 0xfffff;
    cr_assert(cpu_ip_allowed(&sregs, 0xfffff));
    cr_assert_not(cpu_ip_allowed(&sregs, 0x100000), "past CS's limit");
}

Test(cpu, the_stack_top_is_as_wide_as_the_stack_segment)
{
    regs.rsp = 0xffff800000012345ull;
    sregs.ss.base = 0x100000;
    cr_assert_eq(cpu_stack_top(&regs, &sregs), 0xffff800000012345ull, "64-bit: RSP, no base");
    sregs.efer = 0;
    sregs.cs.l = 0;
    sregs.cs.db = 1;
    sregs.ss.db = 1;
    regs.rsp = 0xfffff000;
    cr_assert_eq(cpu_stack_top(&regs, &sregs), 0xff000, "ESP plus the base, wrapping at 4 GiB");
    sregs.ss.db = 0;
    cr_assert_eq(cpu_stack_top(&regs, &sregs), 0x10f000, "a 16-bit stack: SP");
}

Test(cpu, tf_in_a_pushed_flags_image)
{
    regs.rsp = 0x8000;
    vbts_put64(gmem_ptr(&mem, 0x8000, 8), 0x202);
    cr_assert_eq(cpu_pushed_tf(&view, true), 0);
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, 0x8000, 8)), 0x302, "TF set, nothing else");
    cr_assert_eq(cpu_pushed_tf(&view, false), 0);
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, 0x8000, 8)), 0x202);
    regs.rsp = 0x300000;                 /* beyond the mapped 2 MiB */
    cr_assert_eq(cpu_pushed_tf(&view, true), -1);
}

Test(cpu, fetch_stops_at_an_unmapped_page)
{
    vbts_put64(gmem_ptr(&mem, 0x4000 + 8 * 0x11, 8), 0);      /* 0x11000 not present */
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    memset(gmem_ptr(&mem, 0x10ff8, 8), 0x90, 8);
    cr_assert_eq(cpu_fetch(&view, 0x10ff8, buf), 8, "only the bytes before the hole");
    cr_assert_eq(cpu_fetch(&view, 0x11000, buf), 0);
    cr_assert_eq(cpu_fetch(&view, 0x10000, buf), ZYDIS_MAX_INSTRUCTION_LENGTH);
}

Test(cpu, decode_in_the_vcpu_mode)
{
    static const uint8_t insn[] = { 0x48, 0x89, 0xd8 };        /* mov rax, rbx */
    memcpy(gmem_ptr(&mem, 0x10000, sizeof(insn)), insn, sizeof(insn));
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    cr_assert_eq(cpu_decode(&view, 0x10000, &in, ops, &why), 0);
    cr_assert_eq(in.length, 3);
    cr_assert_eq(in.mnemonic, ZYDIS_MNEMONIC_MOV);
    cr_assert_eq(cpu_decode(&view, 0x7fff0000, &in, ops, &why), -1);
    cr_assert_str_eq(why, "instruction bytes are not in guest RAM");
}

Test(cpu, selector_bases)
{
    sregs.gdt.base = 0x6000;
    sregs.gdt.limit = 0x1f;
    vbts_put64(gmem_ptr(&mem, 0x6008, 8), 0x00cf9a123456ffffull);     /* base 0x00123456 */
    vbts_put64(gmem_ptr(&mem, 0x6010, 8), 0x00af9a000000ffffull);     /* 64-bit code */
    uint64_t b;
    cr_assert_eq(cpu_selector_base(&view, 0x08, &b), 0);
    cr_assert_eq(b, 0x123456);
    cr_assert_eq(cpu_selector_base(&view, 0x10, &b), 0);
    cr_assert_eq(b, 0, "long-mode code segments have no base");
    cr_assert_eq(cpu_selector_base(&view, 0x20, &b), -1, "beyond the GDT limit");
    cr_assert_eq(cpu_selector_base(&view, 0x0c, &b), -1, "LDT selectors are not modelled");
}

Test(cpu, idt_handler_long_mode)
{
    sregs.idt.base = 0x8000;
    sregs.idt.limit = 16 * 32 - 1;
    uint8_t gate[16] = { 0x34, 0x12, 0x08, 0, 0, 0x8e, 0x78, 0x56, 0x01, 0, 0, 0 };
    memcpy(gmem_ptr(&mem, 0x8000 + 14 * 16, 16), gate, 16);
    uint64_t h;
    cr_assert_eq(cpu_idt_handler(&view, 14, &h), 0);
    cr_assert_eq(h, 0x156781234ull);
    cr_assert_eq(cpu_idt_handler(&view, 13, &h), -1);       /* not present */
    cr_assert_eq(cpu_idt_handler(&view, 40, &h), -1);       /* beyond the limit */
}

Test(cpu, idt_handler_real_mode)
{
    sregs.cr0 = 0;
    sregs.efer = 0;
    sregs.idt.base = 0;
    sregs.idt.limit = 0x3ff;
    vbts_put32(gmem_ptr(&mem, 6 * 4, 4), 0x12340010);    /* 1234:0010 */
    uint64_t h;
    cr_assert_eq(cpu_idt_handler(&view, 6, &h), 0);
    cr_assert_eq(h, 0x12350);
}

Test(cpu, stores_of_an_instruction_as_one_range)
{
    uint64_t lo = 0, len = 0;
    regs.rsp = 0x50000;
    regs.rbx = 0x20000;
    memcpy(gmem_ptr(&mem, regs.rip, 1), (uint8_t[]){ 0x50 }, 1);                       /* push rax: [rsp - 8, rsp) */
    cpu_stores(&view, regs.rip, &lo, &len);
    cr_assert(lo <= 0x50000 - 8 && lo + len >= 0x50000, "covers the pushed slot");
    memcpy(gmem_ptr(&mem, regs.rip, 2), (uint8_t[]){ 0x89, 0x03 }, 2);                 /* mov [rbx], eax */
    cpu_stores(&view, regs.rip, &lo, &len);
    cr_assert(lo == 0x20000 && len == 4);
    memcpy(gmem_ptr(&mem, regs.rip, 2), (uint8_t[]){ 0x8b, 0x03 }, 2);                 /* mov eax, [rbx]: no store */
    cpu_stores(&view, regs.rip, &lo, &len);
    cr_assert_eq(len, 0);
}

/* What may make an interrupt due at once: the trace engines let one in after it (trace/tf.c). */
static enum cpu_irq irq_change(const uint8_t *code, size_t n)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    memcpy(gmem_ptr(&mem, regs.rip, n), code, n);
    cr_assert_eq(cpu_decode(&view, regs.rip, &in, ops, &why), 0);
    return cpu_irq_change(&view, &in, ops);
}

Test(cpu, what_may_make_an_interrupt_due)
{
    static const uint8_t store[] = { 0x89, 0x03 }, load[] = { 0x8b, 0x03 }, wrmsr[] = { 0x0f, 0x30 };
    /* The first 2 MiB map themselves; 0x1ff000 stands for the APIC's page, mapped there. */
    vbts_put64(gmem_ptr(&mem, 0x4000 + 8 * 0x1ff, 8), 0xfee00000 | 3);
    regs.rbx = 0x1ff300;
    cr_assert_eq(irq_change(store, 2), CPU_IRQ_RAISE, "mov [rbx], eax to the ICR: the guest sends");
    cr_assert_eq(irq_change(load, 2), CPU_IRQ_NONE, "a load from it");
    regs.rbx = 0x1ff080;
    cr_assert_eq(irq_change(store, 2), CPU_IRQ_RAISE, "to the TPR");
    regs.rbx = 0x1ff0b0;
    cr_assert_eq(irq_change(store, 2), CPU_IRQ_ANY, "to the EOI register: paced, not at once");
    cr_assert(cpu_lin_irqchip(&view, 0x1ff030));
    regs.rbx = 0x20000;
    cr_assert_eq(irq_change(store, 2), CPU_IRQ_NONE, "a store to RAM");
    regs.rcx = 0x830;
    cr_assert_eq(irq_change(wrmsr, 2), CPU_IRQ_RAISE, "wrmsr to x2APIC's ICR");
    regs.rcx = 0x83f;
    cr_assert_eq(irq_change(wrmsr, 2), CPU_IRQ_RAISE, "to its SELF IPI");
    regs.rcx = 0x80b;
    cr_assert_eq(irq_change(wrmsr, 2), CPU_IRQ_ANY, "to its EOI");
    regs.rcx = 0x10;
    cr_assert_eq(irq_change(wrmsr, 2), CPU_IRQ_NONE, "wrmsr to the TSC");
    cr_assert_eq(irq_change((uint8_t[]){ 0x44, 0x0f, 0x22, 0xc0 }, 4), CPU_IRQ_RAISE, "mov cr8, rax");
    cr_assert_eq(irq_change((uint8_t[]){ 0xe6, 0x20 }, 2), CPU_IRQ_ANY, "out 0x20, al");
}

/* A REP prefix's count, by the address size. */
Test(cpu, rep_count_by_address_size)
{
    static const uint8_t rep[] = { 0xf3, 0xaa, 0x67, 0xf3, 0xaa, 0xaa };  /* rep stosb; a32 rep stosb; stosb */
    memcpy(gmem_ptr(&mem, 0x10000, sizeof(rep)), rep, sizeof(rep));
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    uint64_t n = 0;
    regs.rcx = 0x100000005ull;
    cr_assert_eq(cpu_decode(&view, 0x10000, &in, ops, &why), 0);
    cr_assert(cpu_rep_count(&view, &in, &n));
    cr_assert_eq(n, 0x100000005ull);
    cr_assert_eq(cpu_decode(&view, 0x10002, &in, ops, &why), 0);
    cr_assert(cpu_rep_count(&view, &in, &n));
    cr_assert_eq(n, 5, "ECX with a 32-bit address size");
    cr_assert_eq(cpu_decode(&view, 0x10005, &in, ops, &why), 0);
    cr_assert_not(cpu_rep_count(&view, &in, &n), "no REP");
}
