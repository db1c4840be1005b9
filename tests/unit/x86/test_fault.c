/* SPDX-License-Identifier: MIT */
/* Which exception an instruction raises, worked out before it runs. */
#include "machine.h"
#include "x86/fault.h"

TestSuite(fault, .init = machine_setup, .fini = machine_teardown);

static enum fault_verdict predict(struct delivery *d)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(&view, cpu_linear_ip(&regs, &sregs), &in, ops, &why))
        return fault_predict(&view, NULL, NULL, d);
    return fault_predict(&view, &in, ops, d);
}

#define MOV_RAX_RBX_MEM 0x48, 0x8b, 0x03       /* mov rax, [rbx] */
#define MOV_RBX_MEM_RAX 0x48, 0x89, 0x03       /* mov [rbx], rax */

Test(fault, reads_writes_and_presence)
{
    struct delivery d;
    code((uint8_t[]){ MOV_RAX_RBX_MEM }, 3);
    regs.rbx = 0x20000;
    cr_assert_eq(predict(&d), FAULT_NONE);
    regs.rbx = 0x300000;                /* beyond the 2 MiB that are mapped */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 14);
    cr_assert_eq(d.error, 0, "not present, read, supervisor");
    cr_assert_eq(d.cr2, 0x300000);
    regs.rbx = 0x1ffffc;                /* 8 bytes across into the unmapped page */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.cr2, 0x200000, "the first byte that faults");
    PTE(0x21000, 1);                    /* read-only */
    code((uint8_t[]){ MOV_RBX_MEM_RAX }, 3);
    regs.rbx = 0x21008;
    cr_assert_eq(predict(&d), FAULT_YES, "CR0.WP: the kernel cannot write it either");
    cr_assert_eq(d.error, 3, "present, write");
    sregs.cr0 &= ~(1ull << 16);
    cr_assert_eq(predict(&d), FAULT_NONE, "without CR0.WP it can");
}

Test(fault, user_mode_and_smap)
{
    struct delivery d;
    to_user();
    code((uint8_t[]){ MOV_RAX_RBX_MEM }, 3);
    regs.rbx = 0x100000;                /* a supervisor page */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.error, 5, "present, user");
    machine_teardown();
    machine_setup();
    PTE(0x22000, 7);                    /* a user page, the kernel reading it */
    code((uint8_t[]){ MOV_RAX_RBX_MEM }, 3);
    regs.rbx = 0x22000;
    sregs.cr4 |= 1ull << 21;
    cr_assert_eq(predict(&d), FAULT_YES, "SMAP");
    regs.rflags |= 1ull << 18;
    cr_assert_eq(predict(&d), FAULT_NONE, "stac: AC lets it through");
}

Test(fault, canonical_and_stack)
{
    struct delivery d;
    code((uint8_t[]){ MOV_RAX_RBX_MEM }, 3);
    regs.rbx = 0x0000800000000000ull;
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 13);
    code((uint8_t[]){ 0x50 }, 1);       /* push rax */
    regs.rsp = 0x400008;                /* the push writes 0x400000: not mapped */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 14);
    cr_assert_eq(d.cr2, 0x400000, "a push writes below RSP");
    cr_assert_eq(d.error, 2);
    regs.rsp = 0x0000800000000008ull;
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 12, "a non-canonical stack is #SS");
}

Test(fault, opcodes)
{
    struct delivery d;
    code((uint8_t[]){ 0x0f, 0x0b }, 2);                 /* ud2 */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 6);
    cr_assert_eq(d.kind, DELIVER_FAULT);
    code((uint8_t[]){ 0xcc }, 1);
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.kind, DELIVER_TRAP);
    cr_assert_eq(d.vector, 3);
    cr_assert_eq(d.insn_len, 1);
    code((uint8_t[]){ 0xcd, 0x80 }, 2);
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.kind, DELIVER_SOFT);
    cr_assert_eq(d.vector, 0x80);
    code((uint8_t[]){ 0xf4 }, 1);                       /* hlt */
    cr_assert_eq(predict(&d), FAULT_NONE);
    to_user();
    code((uint8_t[]){ 0xf4 }, 1);
    cr_assert_eq(predict(&d), FAULT_YES, "hlt is privileged");
    cr_assert_eq(d.vector, 13);
    code((uint8_t[]){ 0xfa }, 1);                       /* cli with IOPL 0 */
    cr_assert_eq(predict(&d), FAULT_YES);
}

Test(fault, divide)
{
    struct delivery d;
    code((uint8_t[]){ 0x48, 0xf7, 0xf1 }, 3);           /* div rcx */
    regs.rax = 10;
    regs.rcx = 0;
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 0);
    regs.rcx = 3;
    cr_assert_eq(predict(&d), FAULT_NONE);
    regs.rdx = 3;                                       /* quotient over 64 bits */
    cr_assert_eq(predict(&d), FAULT_YES);
    code((uint8_t[]){ 0x48, 0xf7, 0xf9 }, 3);           /* idiv rcx */
    regs.rdx = ~0ull;
    regs.rax = 0x8000000000000000ull;
    regs.rcx = ~0ull;                                   /* INT64_MIN / -1 */
    cr_assert_eq(predict(&d), FAULT_YES);
    regs.rcx = 2;
    cr_assert_eq(predict(&d), FAULT_NONE);
    code((uint8_t[]){ 0xf6, 0xf1 }, 2);                 /* div cl: AX / CL */
    regs.rax = 0x200;
    regs.rcx = 2;
    cr_assert_eq(predict(&d), FAULT_YES, "0x100 does not fit in AL");
}

Test(fault, fetch_and_what_touches_nothing)
{
    struct delivery d;
    regs.rip = 0x1fffff;                /* the instruction runs into the unmapped page */
    code((uint8_t[]){ 0x48 }, 1);
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 14);
    cr_assert_eq(d.cr2, 0x200000);
    cr_assert_eq(d.error & 0x10, 0x10, "an instruction fetch");
    regs.rip = 0x23000;
    PTE(0x23000, 3 | (1ull << 63));     /* NX */
    code((uint8_t[]){ 0x90 }, 1);
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.error, 0x11, "present, fetch");
    regs.rip = 0x10000;
    code((uint8_t[]){ 0x48, 0x8d, 0x03 }, 3);           /* lea rax, [rbx] */
    regs.rbx = 0x300000;
    cr_assert_eq(predict(&d), FAULT_NONE, "an address, not an access");
    code((uint8_t[]){ 0x0f, 0x01, 0x3b }, 3);           /* invlpg [rbx] */
    cr_assert_eq(predict(&d), FAULT_NONE, "invlpg of a page that is not present");
    code((uint8_t[]){ 0x0f, 0x18, 0x0b }, 3);           /* prefetcht0 [rbx] */
    cr_assert_eq(predict(&d), FAULT_NONE, "a prefetch is a hint");
    code((uint8_t[]){ 0x0f, 0x1f, 0x03 }, 3);           /* nop dword [rbx] */
    cr_assert_eq(predict(&d), FAULT_NONE, "a long nop");
    code((uint8_t[]){ 0xf3, 0x48, 0xab }, 3);           /* rep stosq */
    regs.rdi = 0x300000;
    regs.rcx = 0;
    cr_assert_eq(predict(&d), FAULT_NONE, "no iterations");
    regs.rcx = 1;
    cr_assert_eq(predict(&d), FAULT_YES);
    code((uint8_t[]){ 0x0f, 0x28, 0x03 }, 3);           /* movaps xmm0, [rbx] */
    regs.rbx = 0x20008;
    cr_assert_eq(predict(&d), FAULT_YES, "misaligned movaps");
    cr_assert_eq(d.vector, 13);
}

/* What the bytes and operands do not foretell: the handlers to watch instead (fault_may_raise). */
static uint32_t may_raise(void)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    uint64_t rip = cpu_linear_ip(&regs, &sregs);
    if (cpu_decode(&view, rip, &in, ops, &why))
        return fault_may_raise(&view, rip, NULL, NULL);
    return fault_may_raise(&view, rip, &in, ops);
}

#define V(n) (1u << (n))

Test(fault, segment_loads_and_bad_encodings)
{
    struct delivery d;
    code((uint8_t[]){ 0x8e, 0xd8 }, 2);                 /* mov ds, ax */
    cr_assert_eq(predict(&d), FAULT_UNKNOWN, "the descriptor's checks are not modelled");
    cr_assert_eq(may_raise() & (V(13) | V(11) | V(12)), V(13) | V(11) | V(12), "#GP, #NP, #SS");
    code((uint8_t[]){ 0x8e, 0xc8 }, 2);                 /* mov cs, ax */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 6, "MOV to CS does not exist");
    code((uint8_t[]){ 0xf0, 0x01, 0xd8 }, 3);           /* lock add eax, ebx */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert_eq(d.vector, 6, "a lock prefix the instruction cannot take");
    cr_assert_eq(may_raise(), V(14) | V(6) | V(13));
    code((uint8_t[]){ 0xff, 0x2c, 0x25, 0x00, 0x00, 0x03, 0x00 }, 7);      /* jmp far [0x30000] */
    vbts_put16(gmem_ptr(&mem, 0x30004, 2), 0x08);       /* 64-bit code */
    cr_assert_eq(predict(&d), FAULT_UNKNOWN, "a far transfer to a code segment: its privilege decides");
    vbts_put16(gmem_ptr(&mem, 0x30004, 2), 0);
    cr_assert_eq(predict(&d), FAULT_YES, "a null selector");
    cr_assert(d.vector == 13 && d.has_error && d.error == 0, "#GP(0)");
    vbts_put16(gmem_ptr(&mem, 0x30004, 2), 0x80);
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert(d.vector == 13 && d.error == 0x80, "beyond the GDT: #GP(selector)");
    vbts_put16(gmem_ptr(&mem, 0x30004, 2), 0x10);
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert(d.vector == 13 && d.error == 0x10, "a data segment: #GP(selector)");
}

Test(fault, segment_loads_the_descriptor_decides)
{
    struct delivery d;
    code((uint8_t[]){ 0x8e, 0xd8 }, 2);                 /* mov ds, ax */
    regs.rax = 0x80;
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert(d.vector == 13 && d.error == 0x80, "beyond the GDT: #GP(selector)");
    regs.rax = 0x30;
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert(d.vector == 13 && d.error == 0x30, "a system descriptor (the TSS): #GP(selector)");
    regs.rax = 0x08;
    cr_assert_eq(predict(&d), FAULT_UNKNOWN, "readable code loads into DS");
    code((uint8_t[]){ 0x8e, 0xd0 }, 2);                 /* mov ss, ax */
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert(d.vector == 13 && d.error == 0x08, "SS takes writable data only");
    regs.rax = 0x18;
    cr_assert_eq(predict(&d), FAULT_YES);
    cr_assert(d.vector == 13 && d.error == 0x18, "SS: DPL 3 data at CPL0");
    regs.rax = 0x10;
    cr_assert_eq(predict(&d), FAULT_UNKNOWN, "writable data at its privilege");
}

Test(fault, what_a_plain_instruction_may_raise)
{
    code((uint8_t[]){ 0x48, 0x01, 0xd8 }, 3);           /* add rax, rbx */
    cr_assert_eq(may_raise(), 0, "registers only: nothing");
    code((uint8_t[]){ MOV_RAX_RBX_MEM }, 3);
    regs.rbx = 0x20000;
    cr_assert_eq(may_raise(), V(13) | V(14) | V(8), "#GP, #PF, and a #DF on the way into either");
    code((uint8_t[]){ 0x50 }, 1);                       /* push rax */
    cr_assert(may_raise() & V(12), "a stack access: #SS");
    code((uint8_t[]){ 0xf7, 0xf1 }, 2);                 /* div ecx */
    cr_assert(may_raise() & V(0));
    code((uint8_t[]){ 0xf3, 0x0f, 0xb8, 0xc3 }, 4);     /* popcnt eax, ebx: an extension */
    cr_assert(may_raise() & V(6), "#UD where the CPU lacks it");
    code((uint8_t[]){ 0xcd, 0x21 }, 2);                 /* int 0x21 */
    cr_assert_eq(may_raise() & (V(14) | V(11) | V(13)), V(14) | V(11) | V(13),
                 "the gate (#NP, #GP) and the frame's push on the handler's stack (#PF)");
    code((uint8_t[]){ 0x0f, 0x01, 0xd0 }, 3);           /* xgetbv */
    cr_assert_eq(may_raise() & (V(13) | V(6)), V(13) | V(6), "#GP for an XCR ECX does not name, #UD");
    PTE(0x10000, 0);                                    /* the code's own page gone */
    cr_assert(may_raise() & V(14), "the fetch");
}

Test(fault, undecodable_bytes_say_which_exception)
{
    code((uint8_t[]){ 0xf0, 0x90 }, 2);                 /* lock nop */
    cr_assert_eq(cpu_undecodable_vector(&view, regs.rip), 6);
    code((uint8_t[]){ 0x90 }, 1);
    cr_assert_eq(cpu_undecodable_vector(&view, regs.rip), -1);
    /* An instruction cut off by a page that is not there. */
    regs.rip = 0x11ffe;
    code((uint8_t[]){ 0x48, 0x8b }, 2);
    PTE(0x12000, 0);
    cr_assert_eq(cpu_undecodable_vector(&view, regs.rip), 14);
    regs.rip = 0x13000;
    PTE(0x13000, 0);
    cr_assert_eq(cpu_undecodable_vector(&view, regs.rip), 14);
}
