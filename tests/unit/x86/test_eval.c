/* SPDX-License-Identifier: MIT */
/*
 * The evaluator against the host CPU: each instruction runs natively on
 * random and edge operands and flags, and every register and flag the
 * evaluator says it knows must be what the CPU left.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>

#include "x86/cpu.h"
#include "x86/eval.h"

/* rax, rcx, rdx and RFLAGS in and out of st[0..3]; rsi points at a buffer. */
typedef void (*native_fn)(uint64_t *st, uint8_t *buf);

static native_fn native(const uint8_t *insn, size_t n)
{
    static const uint8_t head[] = { 0x48, 0x8b, 0x07, 0x48, 0x8b, 0x4f, 0x08, 0x48, 0x8b, 0x57, 0x10,
                                    0xff, 0x77, 0x18, 0x9d };
    static const uint8_t tail[] = { 0x9c, 0x8f, 0x47, 0x18, 0x48, 0x89, 0x07, 0x48, 0x89, 0x4f, 0x08,
                                    0x48, 0x89, 0x57, 0x10, 0xc3 };
    uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    memcpy(p, head, sizeof(head));
    memcpy(p + sizeof(head), insn, n);
    memcpy(p + sizeof(head) + n, tail, sizeof(tail));
    cr_assert_eq(mprotect(p, 4096, PROT_READ | PROT_EXEC), 0);
    return (native_fn)(void *)p;
}

static uint8_t buf[512];

static bool load(void *ctx, const ZydisDecodedOperand *op, int64_t offset, unsigned bytes, uint64_t *val)
{
    const struct eval_regs *e = ctx;
    uint64_t b = 0, x = 0;
    if ((op->mem.base != ZYDIS_REGISTER_NONE && !eval_get(e, op->mem.base, &b)) ||
        (op->mem.index != ZYDIS_REGISTER_NONE && !eval_get(e, op->mem.index, &x)))
        return false;
    uint64_t a = b + x * op->mem.scale + (uint64_t)op->mem.disp.value + (uint64_t)offset;
    if (a < (uint64_t)(uintptr_t)buf || a + bytes > (uint64_t)(uintptr_t)buf + sizeof(buf))
        return false;
    *val = 0;
    memcpy(val, (void *)(uintptr_t)a, bytes);
    return true;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Random, or an edge of some width: 0, 1, the sign bit and its neighbours, all ones. */
static uint64_t operand(void)
{
    static const uint64_t edges[] = { 0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff,
                                      0x80000000, 0xffffffff, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                      ~0ull, 0x10, 0xf };
    uint64_t r = rnd();
    return (r & 3) ? rnd() : edges[(r >> 2) % (sizeof(edges) / sizeof(edges[0]))];
}

struct ecase {
    const char *name;
    uint8_t bytes[8];
    uint8_t len;
    uint32_t flags;             /* known after it, where it is evaluated */
    uint64_t rdx_mask;          /* an index into buf: kept small */
    uint64_t rcx_mask;
};

#define ALL EVAL_FLAGS
#define SZPC (RFLAGS_SF | RFLAGS_ZF | RFLAGS_PF | RFLAGS_CF)
#define LOGIC (SZPC | RFLAGS_OF)

static const struct ecase cases[] = {
    { "add rax, rcx", { 0x48, 0x01, 0xc8 }, 3, ALL, ~0ull, ~0ull },
    { "add eax, ecx", { 0x01, 0xc8 }, 2, ALL, ~0ull, ~0ull },
    { "add ax, cx", { 0x66, 0x01, 0xc8 }, 3, ALL, ~0ull, ~0ull },
    { "add al, cl", { 0x00, 0xc8 }, 2, ALL, ~0ull, ~0ull },
    { "add ah, cl", { 0x00, 0xcc }, 2, ALL, ~0ull, ~0ull },
    { "adc rax, rcx", { 0x48, 0x11, 0xc8 }, 3, ALL, ~0ull, ~0ull },
    { "sbb eax, ecx", { 0x19, 0xc8 }, 2, ALL & ~RFLAGS_AF /* Zydis: undefined */, ~0ull, ~0ull },
    { "sub rax, rcx", { 0x48, 0x29, 0xc8 }, 3, ALL, ~0ull, ~0ull },
    { "sub al, cl", { 0x28, 0xc8 }, 2, ALL, ~0ull, ~0ull },
    { "cmp rax, rcx", { 0x48, 0x39, 0xc8 }, 3, ALL, ~0ull, ~0ull },
    { "cmp ecx, 5", { 0x83, 0xf9, 0x05 }, 3, ALL, ~0ull, ~0ull },
    { "cmp rax, -1", { 0x48, 0x83, 0xf8, 0xff }, 4, ALL, ~0ull, ~0ull },
    { "and rax, rcx", { 0x48, 0x21, 0xc8 }, 3, LOGIC, ~0ull, ~0ull },
    { "or eax, ecx", { 0x09, 0xc8 }, 2, LOGIC, ~0ull, ~0ull },
    { "xor rax, rcx", { 0x48, 0x31, 0xc8 }, 3, LOGIC, ~0ull, ~0ull },
    { "xor eax, eax", { 0x31, 0xc0 }, 2, LOGIC, ~0ull, ~0ull },
    { "test ecx, eax", { 0x85, 0xc1 }, 2, LOGIC, ~0ull, ~0ull },
    { "test al, 0x80", { 0xa8, 0x80 }, 2, LOGIC, ~0ull, ~0ull },
    { "inc rax", { 0x48, 0xff, 0xc0 }, 3, ALL & ~RFLAGS_CF, ~0ull, ~0ull },
    { "dec ecx", { 0xff, 0xc9 }, 2, ALL & ~RFLAGS_CF, ~0ull, ~0ull },
    { "inc dl", { 0xfe, 0xc2 }, 2, ALL & ~RFLAGS_CF, ~0ull, ~0ull },
    { "neg rax", { 0x48, 0xf7, 0xd8 }, 3, ALL, ~0ull, ~0ull },
    { "neg cx", { 0x66, 0xf7, 0xd9 }, 3, ALL, ~0ull, ~0ull },
    { "not rax", { 0x48, 0xf7, 0xd0 }, 3, 0, ~0ull, ~0ull },
    { "imul edx, eax", { 0x0f, 0xaf, 0xd0 }, 3, RFLAGS_CF | RFLAGS_OF, ~0ull, ~0ull },
    { "imul rax, rcx", { 0x48, 0x0f, 0xaf, 0xc1 }, 4, RFLAGS_CF | RFLAGS_OF, ~0ull, ~0ull },
    { "imul eax, ecx, -3", { 0x6b, 0xc1, 0xfd }, 3, RFLAGS_CF | RFLAGS_OF, ~0ull, ~0ull },
    { "imul ax, cx", { 0x66, 0x0f, 0xaf, 0xc1 }, 4, RFLAGS_CF | RFLAGS_OF, ~0ull, ~0ull },
    { "shl rax, cl", { 0x48, 0xd3, 0xe0 }, 3, SZPC, ~0ull, 0x3f },
    { "shr eax, cl", { 0xd3, 0xe8 }, 2, SZPC, ~0ull, 0x1f },
    { "sar rax, cl", { 0x48, 0xd3, 0xf8 }, 3, SZPC, ~0ull, 0x3f },
    { "shl dl, 1", { 0xd0, 0xe2 }, 2, SZPC /* OF: undefined to Zydis */, ~0ull, ~0ull },
    { "shr ecx, 1", { 0xd1, 0xe9 }, 2, SZPC /* OF: undefined to Zydis */, ~0ull, ~0ull },
    { "sar ax, 1", { 0x66, 0xd1, 0xf8 }, 3, SZPC /* OF: undefined to Zydis */, ~0ull, ~0ull },
    { "shr rdx, 3", { 0x48, 0xc1, 0xea, 0x03 }, 4, SZPC, ~0ull, ~0ull },
    { "bt rax, rcx", { 0x48, 0x0f, 0xa3, 0xc8 }, 4, RFLAGS_CF, ~0ull, ~0ull },
    { "bts rax, rcx", { 0x48, 0x0f, 0xab, 0xc8 }, 4, RFLAGS_CF, ~0ull, ~0ull },
    { "btr eax, ecx", { 0x0f, 0xb3, 0xc8 }, 3, RFLAGS_CF, ~0ull, ~0ull },
    { "btc rax, 37", { 0x48, 0x0f, 0xba, 0xf8, 0x25 }, 5, RFLAGS_CF, ~0ull, ~0ull },
    { "bt [rsi], rcx", { 0x48, 0x0f, 0xa3, 0x0e }, 4, RFLAGS_CF, ~0ull, 0xfff },
    { "bt dword [rsi], ecx", { 0x0f, 0xa3, 0x0e }, 3, RFLAGS_CF, ~0ull, 0xfff },
    { "sete al", { 0x0f, 0x94, 0xc0 }, 3, 0, ~0ull, ~0ull },
    { "setb cl", { 0x0f, 0x92, 0xc1 }, 3, 0, ~0ull, ~0ull },
    { "setl dl", { 0x0f, 0x9c, 0xc2 }, 3, 0, ~0ull, ~0ull },
    { "setnbe al", { 0x0f, 0x97, 0xc0 }, 3, 0, ~0ull, ~0ull },
    { "setp al", { 0x0f, 0x9a, 0xc0 }, 3, 0, ~0ull, ~0ull },
    { "setle cl", { 0x0f, 0x9e, 0xc1 }, 3, 0, ~0ull, ~0ull },
    { "cmove rax, rcx", { 0x48, 0x0f, 0x44, 0xc1 }, 4, 0, ~0ull, ~0ull },
    { "cmovne eax, ecx", { 0x0f, 0x45, 0xc1 }, 3, 0, ~0ull, ~0ull },
    { "cmovl eax, edx", { 0x0f, 0x4c, 0xc2 }, 3, 0, ~0ull, ~0ull },
    { "movzx eax, cl", { 0x0f, 0xb6, 0xc1 }, 3, 0, ~0ull, ~0ull },
    { "movsx rax, cx", { 0x48, 0x0f, 0xbf, 0xc1 }, 4, 0, ~0ull, ~0ull },
    { "movsxd rax, ecx", { 0x48, 0x63, 0xc1 }, 3, 0, ~0ull, ~0ull },
    { "mov eax, ecx", { 0x89, 0xc8 }, 2, 0, ~0ull, ~0ull },
    { "mov al, dl", { 0x88, 0xd0 }, 2, 0, ~0ull, ~0ull },
    { "mov ah, dl", { 0x88, 0xd4 }, 2, 0, ~0ull, ~0ull },
    { "lea rax, [rcx+rdx*4+0x10]", { 0x48, 0x8d, 0x44, 0x91, 0x10 }, 5, 0, ~0ull, ~0ull },
    { "lea eax, [rcx+rdx*8-1]", { 0x8d, 0x44, 0xd1, 0xff }, 4, 0, ~0ull, ~0ull },
    { "cdqe", { 0x48, 0x98 }, 2, 0, ~0ull, ~0ull },
    { "cwde", { 0x98 }, 1, 0, ~0ull, ~0ull },
    { "cdq", { 0x99 }, 1, 0, ~0ull, ~0ull },
    { "cqo", { 0x48, 0x99 }, 2, 0, ~0ull, ~0ull },
    { "mov rax, [rsi]", { 0x48, 0x8b, 0x06 }, 3, 0, ~0ull, ~0ull },
    { "movzx ecx, byte [rsi+rdx]", { 0x0f, 0xb6, 0x0c, 0x16 }, 4, 0, 0xff, ~0ull },
    { "add eax, [rsi]", { 0x03, 0x06 }, 2, ALL, ~0ull, ~0ull },
    { "cmp byte [rsi+rdx], 0x41", { 0x80, 0x3c, 0x16, 0x41 }, 4, ALL, 0xff, ~0ull },
};

static void decode(const uint8_t *b, size_t n, ZydisDecodedInstruction *in, ZydisDecodedOperand *ops)
{
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    cr_assert(ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d, b, n, in, ops)));
    cr_assert_eq(in->length, n);
}

/* One run: eval and CPU from the same state; false if eval computed less than it writes. */
static bool run_one(const struct ecase *c, native_fn f, const ZydisDecodedInstruction *in,
                    const ZydisDecodedOperand *ops)
{
    uint64_t st[4] = { operand(), operand() & c->rcx_mask, operand() & c->rdx_mask,
                       0x202 | (rnd() & EVAL_FLAGS) };
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)rnd();
    struct kvm_regs r = { .rax = st[0], .rcx = st[1], .rdx = st[2], .rsi = (uint64_t)(uintptr_t)buf,
                          .rflags = st[3] };
    struct eval_regs e;
    eval_init(&e, &r);
    bool whole = eval_insn(in, ops, 0x1000, &e, load, &e);
    f(st, buf);
    for (int i = 0; i < 3; i++)
        if (!(e.unknown & (1u << i)))
            cr_assert_eq(e.gpr[i], st[i], "%s: register %d is 0x%llx, eval says 0x%llx", c->name, i,
                         (unsigned long long)st[i], (unsigned long long)e.gpr[i]);
    uint32_t known = EVAL_FLAGS & ~e.flags_unknown;
    cr_assert_eq(e.rflags & known, st[3] & known, "%s: flags 0x%llx, eval says 0x%llx (known 0x%x)", c->name,
                 (unsigned long long)(st[3] & known), (unsigned long long)(e.rflags & known), known);
    if (whole)
        cr_assert_eq(known & c->flags, c->flags, "%s: flags known 0x%x, want 0x%x", c->name, known, c->flags);
    return whole;
}

Test(eval, agrees_with_the_cpu)
{
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct ecase *c = &cases[k];
        ZydisDecodedInstruction in;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        decode(c->bytes, c->len, &in, ops);
        native_fn f = native(c->bytes, c->len);
        unsigned whole = 0, n = 3000;
        for (unsigned i = 0; i < n; i++)
            whole += run_one(c, f, &in, ops);
        cr_assert_geq(whole, n * 9 / 10, "%s: evaluated %u times of %u", c->name, whole, n);
        munmap((void *)(uintptr_t)f, 4096);
    }
}

/* A conditional jump decides as the SETcc of its condition code leaves AL. */
Test(eval, conditions_agree_with_setcc)
{
    for (uint8_t cc = 0; cc < 16; cc++) {
        const uint8_t set[] = { 0x0f, (uint8_t)(0x90 + cc), 0xc0 }, jcc[] = { (uint8_t)(0x70 + cc), 0x00 };
        ZydisDecodedInstruction in;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        decode(jcc, sizeof(jcc), &in, ops);
        native_fn f = native(set, sizeof(set));
        for (unsigned i = 0; i < 200; i++) {
            uint64_t st[4] = { 0, 0, 0, 0x202 | (rnd() & EVAL_FLAGS) };
            struct kvm_regs r = { .rflags = st[3] };
            struct eval_regs e;
            eval_init(&e, &r);
            int t = eval_cond(&in, &e);
            f(st, buf);
            cr_assert_eq(t, (int)(st[0] & 1), "cc %u, flags 0x%llx", cc, (unsigned long long)r.rflags);
        }
        munmap((void *)(uintptr_t)f, 4096);
    }
}

Test(eval, unknown_inputs_give_unknown_outputs)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    struct kvm_regs r = { .rax = 5, .rcx = 7, .rflags = 0x202 };
    struct eval_regs e;
    decode((const uint8_t[]){ 0x48, 0x01, 0xc8 }, 3, &in, ops);     /* add rax, rcx */
    eval_init(&e, &r);
    e.unknown = 1u << 1;
    cr_assert(!eval_insn(&in, ops, 0, &e, NULL, NULL));
    cr_assert(e.unknown & 1, "RAX from an unknown RCX");
    cr_assert_eq(e.flags_unknown & EVAL_FLAGS, EVAL_FLAGS);
    decode((const uint8_t[]){ 0x74, 0x00 }, 2, &in, ops);           /* jz */
    cr_assert_eq(eval_cond(&in, &e), -1);
    decode((const uint8_t[]){ 0x88, 0xd0 }, 2, &in, ops);           /* mov al, dl: RAX stays unknown */
    cr_assert(eval_insn(&in, ops, 0, &e, NULL, NULL) || (e.unknown & 1));
    cr_assert(e.unknown & 1);
    decode((const uint8_t[]){ 0x89, 0xd0 }, 2, &in, ops);           /* mov eax, edx: known again */
    cr_assert(eval_insn(&in, ops, 0, &e, NULL, NULL));
    cr_assert(!(e.unknown & 1));
    cr_assert_eq(e.gpr[0], 0);
    decode((const uint8_t[]){ 0x48, 0x8b, 0x06 }, 3, &in, ops);     /* mov rax, [rsi]: no memory known */
    cr_assert(!eval_insn(&in, ops, 0, &e, NULL, NULL));
    cr_assert(e.unknown & 1);
    decode((const uint8_t[]){ 0x0f, 0xa2 }, 2, &in, ops);           /* cpuid: not evaluated */
    e.unknown = 0;
    cr_assert(!eval_insn(&in, ops, 0, &e, NULL, NULL));
    cr_assert_eq(e.unknown & 0xf, 0xf, "EAX, EBX, ECX, EDX");
}

Test(eval, a_bit_test_on_memory_addresses_the_unit_of_its_bit)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    struct kvm_regs r = { .rcx = (uint64_t)-65, .rflags = 0x202 };
    struct eval_regs e;
    int64_t off;
    eval_init(&e, &r);
    decode((const uint8_t[]){ 0x48, 0x0f, 0xab, 0x0e }, 4, &in, ops);   /* bts [rsi], rcx */
    cr_assert(eval_bit_offset(&in, ops, &e, &off));
    cr_assert_eq(off, -16, "bit -65 lies in the qword two below");
    decode((const uint8_t[]){ 0x66, 0x0f, 0xa3, 0x0e }, 4, &in, ops);   /* bt word [rsi], cx */
    r.rcx = 0x21;
    eval_init(&e, &r);
    cr_assert(eval_bit_offset(&in, ops, &e, &off));
    cr_assert_eq(off, 4);
    e.unknown = 1u << 1;
    cr_assert(!eval_bit_offset(&in, ops, &e, &off));
    decode((const uint8_t[]){ 0x0f, 0xba, 0x2e, 0x45 }, 4, &in, ops);   /* bts dword [rsi], 0x45: modulo 32 */
    cr_assert(eval_bit_offset(&in, ops, &e, &off));
    cr_assert_eq(off, 0);
}

Test(eval, string_instructions_write_their_index_registers)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const uint32_t rcx_rsi_rdi = 1u << 1 | 1u << 6 | 1u << 7;
    decode((const uint8_t[]){ 0xf3, 0xa6 }, 2, &in, ops);   /* repz cmpsb: Zydis names no RSI, RDI */
    cr_assert_eq(eval_gprs_written(&in, ops) & rcx_rsi_rdi, rcx_rsi_rdi);
    decode((const uint8_t[]){ 0xae }, 1, &in, ops);         /* scasb */
    cr_assert_eq(eval_gprs_written(&in, ops) & rcx_rsi_rdi, rcx_rsi_rdi);
}
