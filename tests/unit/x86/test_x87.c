/* SPDX-License-Identifier: MIT */
/* x87 instructions completed on the host's x87 unit, on a guest's state. */
#include <math.h>

#include "machine.h"
#include "x86/x87.h"

TestSuite(x87, .init = machine_setup, .fini = machine_teardown);

static struct kvm_fpu fpu;

static void fninit(void)
{
    memset(&fpu, 0, sizeof(fpu));
    fpu.fcw = 0x37f;
}

static unsigned top(void)
{
    return (fpu.fsw >> 11) & 7;
}

static long double st(unsigned i)
{
    long double x;
    memcpy(&x, fpu.fpr[i], 10);
    return x;
}

static struct delivery d;

static enum x87_verdict emulate(const void *bytes, size_t n, unsigned *len, unsigned *vector)
{
    code(bytes, n);
    *len = 0;
    memset(&d, 0xff, sizeof(d));
    enum x87_verdict r = x87_emulate(&view, &fpu, &regs.rax, len, &d);
    *vector = d.vector;
    return r;
}

Test(x87, run_pushes_divides_and_leaves_the_exception_pending)
{
    fninit();
    x87_run(&fpu, 0xd9, 0xee, NULL);            /* fldz */
    x87_run(&fpu, 0xd9, 0xe8, NULL);            /* fld1 */
    cr_assert_eq(top(), 6);
    cr_assert_eq(fpu.ftwx, 0xc0, "physical registers 6 and 7 valid");
    cr_assert(st(0) == 1.0L && st(1) == 0.0L);
    x87_run(&fpu, 0xd9, 0xc9, NULL);            /* fxch st1 */
    cr_assert(st(0) == 0.0L && st(1) == 1.0L);
    x87_run(&fpu, 0xd9, 0xc9, NULL);
    fpu.fcw = 0x37b;                            /* #Z unmasked */
    x87_run(&fpu, 0xd8, 0xf1, NULL);            /* fdiv st0, st1: 1 / 0 */
    cr_assert_eq(fpu.fsw & 0x80ff, 0x8084, "ZE, ES and B: the #MF waits for the next waiting instruction");
    cr_assert(st(0) == 1.0L, "no result with the exception unmasked");
    fpu.fcw = 0x37f;
    fpu.fsw &= ~0x80ffu;
    x87_run(&fpu, 0xd8, 0xf1, NULL);            /* masked: +inf */
    cr_assert(isinf(st(0)) && st(0) > 0);
    cr_assert_eq(fpu.fsw & 0x80ff, 0x0004, "ZE only");
}

Test(x87, run_takes_the_guest_precision_control)
{
    fninit();
    fpu.fcw = 0x07f;                            /* precision control: 24 bits */
    x87_run(&fpu, 0xd9, 0xe8, NULL);            /* fld1 */
    x87_run(&fpu, 0xd9, 0xe8, NULL);
    x87_run(&fpu, 0xde, 0xc1, NULL);            /* faddp: 2 */
    uint32_t three = 3;
    x87_run(&fpu, 0xda, 0x37, &three);          /* fidiv dword [rdi]: 2/3 to 24 bits */
    cr_assert(st(0) == (long double)(2.0f / 3.0f), "rounded to single precision");
    cr_assert_neq(st(0), 2.0L / 3.0L);
    long double out = 0;
    x87_run(&fpu, 0xdb, 0x3f, &out);            /* fstp tword [rdi] */
    cr_assert(out == (long double)(2.0f / 3.0f));
    cr_assert_eq(fpu.ftwx, 0, "popped");
}

Test(x87, runnable_forms)
{
    unsigned size;
    bool store;
    cr_assert(x87_runnable(0xd9, 0xe8, &size, &store) && size == 0);           /* fld1 */
    cr_assert(!x87_runnable(0xd9, 0xe2, &size, &store), "no instruction");
    cr_assert(!x87_runnable(0xdb, 0xf1, &size, &store), "fcomi writes RFLAGS");
    cr_assert(!x87_runnable(0xda, 0xc1, &size, &store), "fcmovb reads RFLAGS");
    cr_assert(!x87_runnable(0xdf, 0xe0, &size, &store), "fnstsw ax is done without it");
    cr_assert(!x87_runnable(0xdd, 0xc8, &size, &store), "an alias encoding");
    cr_assert(x87_runnable(0xd9, 0x2f, &size, &store) && size == 2 && !store);  /* fldcw */
    cr_assert(x87_runnable(0xdb, 0x3f, &size, &store) && size == 10 && store);  /* fstp m80 */
    cr_assert(!x87_runnable(0xd9, 0x27, &size, &store), "fldenv: its size hangs on the mode");
    cr_assert(!x87_runnable(0x90, 0xc0, &size, &store));
}

Test(x87, emulate_checks_nm_mf_and_ne_first)
{
    unsigned len, vec;
    fninit();
    sregs.cr0 |= 1u << 5;                       /* NE */
    sregs.cr0 |= 8;                             /* TS */
    cr_assert_eq(emulate((uint8_t[]){ 0xd9, 0xe8 }, 2, &len, &vec), X87_RAISE);
    cr_assert_eq(vec, 7);
    cr_assert_eq(fpu.fsw, 0, "nothing done");
    sregs.cr0 &= ~8ull;
    fpu.fcw = 0x37b;
    fpu.fsw = 0x8084;                           /* #Z pending */
    cr_assert_eq(emulate((uint8_t[]){ 0xd9, 0xd0 }, 2, &len, &vec), X87_RAISE, "fnop waits");
    cr_assert_eq(vec, 16);
    cr_assert_eq(emulate((uint8_t[]){ 0xdb, 0xe2 }, 2, &len, &vec), X87_DONE, "fnclex does not");
    cr_assert_eq(len, 2);
    cr_assert_eq(fpu.fsw, 0);
    fpu.fsw = 0x8084;
    regs.rax = 0x1234567811111111ull;
    cr_assert_eq(emulate((uint8_t[]){ 0xdf, 0xe0 }, 2, &len, &vec), X87_DONE, "fnstsw ax");
    cr_assert_eq(regs.rax, 0x1234567811118084ull);
    sregs.cr0 &= ~(1ull << 5);
    cr_assert_eq(emulate((uint8_t[]){ 0xd9, 0xe8 }, 2, &len, &vec), X87_NOT, "without NE: FERR#, not done");
    sregs.cr0 |= 1u << 5;
    regs.rbx = 0x20000;
    cr_assert_eq(emulate((uint8_t[]){ 0xd9, 0x2b }, 2, &len, &vec), X87_NOT, "fldcw under a pending #MF");
}

Test(x87, emulate_memory_operands_through_the_page_tables)
{
    unsigned len, vec;
    fninit();
    regs.rbx = 0x20000;
    regs.rip = 0x10000;
    vbts_put16(gmem_ptr(&mem, 0x20000, 2), 0x37b);
    cr_assert_eq(emulate((uint8_t[]){ 0xd9, 0x2b }, 2, &len, &vec), X87_DONE);  /* fldcw [rbx] */
    cr_assert_eq(fpu.fcw, 0x37b);
    cr_assert_eq(fpu.last_ip, 0, "a control instruction leaves the pointers");
    cr_assert_eq(emulate((uint8_t[]){ 0xd9, 0xe8 }, 2, &len, &vec), X87_DONE);  /* fld1 */
    /* AMD's FXSAVE keeps the pointers only with an exception pending, Intel's always. */
    cr_assert(fpu.last_ip == 0x10000 || fpu.last_ip == 0, "FIP: the guest's RIP, never the stub's");
    cr_assert(st(0) == 1.0L);
    regs.rbx = 0x20010;
    cr_assert_eq(emulate((uint8_t[]){ 0x48, 0xdd, 0x13 }, 3, &len, &vec), X87_DONE);  /* fst qword [rbx] */
    cr_assert_eq(len, 3);
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, 0x20010, 8)), 0x3ff0000000000000ull);
    cr_assert(fpu.last_dp == 0x20010 || fpu.last_dp == 0);
    regs.rip = 0x10100;
    regs.rbx = 0x20020;                         /* 0.0f */
    cr_assert_eq(emulate((uint8_t[]){ 0xd8, 0x33 }, 2, &len, &vec), X87_DONE);  /* fdiv dword [rbx] */
    cr_assert_eq(fpu.fsw & 0x80ff, 0x8084, "#Z pending");
    cr_assert_eq(fpu.last_ip, 0x10100, "FIP: the guest's RIP, not the stub's");
    cr_assert_eq(fpu.last_dp, 0x20020, "FDP: the guest's operand");
    cr_assert_eq(fpu.last_opcode, 0x033);
    fpu.fsw &= ~0x80ffu;
    regs.rip = 0x10000;
    struct kvm_fpu before = fpu;
    regs.rbx = 0x300000;                        /* not mapped */
    cr_assert_eq(emulate((uint8_t[]){ 0xdd, 0x13 }, 2, &len, &vec), X87_RAISE);
    cr_assert(vec == 14 && d.has_error && d.error == 2 && d.cr2 == 0x300000, "#PF: not present, write");
    cr_assert_eq(memcmp(&before, &fpu, sizeof(fpu)), 0, "nothing changed");
    PTE(0x21000, 1);                            /* read-only, CR0.WP */
    regs.rbx = 0x21000;
    cr_assert_eq(emulate((uint8_t[]){ 0xdd, 0x13 }, 2, &len, &vec), X87_RAISE);
    cr_assert(vec == 14 && d.error == 3, "#PF: present, write");
    cr_assert_eq(vbts_le64(gmem_ptr(&mem, 0x21000, 8)), 0, "not written");
    cr_assert_eq(emulate((uint8_t[]){ 0xdd, 0x03 }, 2, &len, &vec), X87_DONE, "fld qword [rbx] reads it");
    cr_assert_eq(emulate((uint8_t[]){ 0xf0, 0xdd, 0x03 }, 3, &len, &vec), X87_NOT, "lock");
    cr_assert_eq(emulate((uint8_t[]){ 0x90 }, 1, &len, &vec), X87_NOT);
}
