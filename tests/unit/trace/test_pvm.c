/* SPDX-License-Identifier: MIT */
/*
 * kvm_pvm's reading of a step (pvm.c) on the synthetic machine: what ran
 * without step exits is read exactly from the state before the step, or
 * the trace stops; never a record taken on trust.
 */
#include "../x86/machine.h"
#include "trace/backend.h"
#include "trace/engine.h"
#include "trace/step.h"

TestSuite(pvm, .init = machine_setup, .fini = machine_teardown);

static struct vm vm;
static struct kvm_run run;
static struct vcpu cpu;
static struct trace tr;
static struct trace_config cfg;
static struct trace_vcpu t;
static uint64_t got[16][2];
static int ngot;

static void record(void *ctx, int c, uint64_t from, uint64_t to)
{
    (void)ctx;
    (void)c;
    cr_assert_lt(ngot, 16);
    got[ngot][0] = from;
    got[ngot][1] = to;
    ngot++;
}

/* The engine on one fake vCPU of the machine, recording into got[]; the instruction at RIP predicted. */
static void engine(void)
{
    vm_init(&vm);
    vm.mem = mem;
    cpu = (struct vcpu){ .vm = &vm, .run = &run };
    memset(&run, 0, sizeof(run));
    run.s.regs.regs = regs;
    run.s.regs.sregs = sregs;
    memset(&cfg, 0, sizeof(cfg));
    tr = (struct trace){ .vm = &vm, .cfg = &cfg, .be = &backend_pvm, .on_record = record };
    t = (struct trace_vcpu){ .tr = &tr, .cpu = &cpu, .recording = true, .stepping = true };
    t.pvm.event_vector = -1;
    ngot = 0;
    cr_assert_eq(step_predict(&t, false), 0);
}

/* The step ended with the vCPU here: what the backend reads. */
static int settle_at(uint64_t rip, uint64_t rsp)
{
    run.s.regs.regs.rip = rip;
    run.s.regs.regs.rsp = rsp;
    struct cpu_view v;
    trace_view(&t, &v);
    return backend_pvm.settle(&t, &v, rip);
}

/* An IRETQ frame at rsp: RIP, CS 0x08, RFLAGS, RSP, SS 0x10. */
static void frame(uint64_t rsp, uint64_t rip, uint64_t new_rsp)
{
    vbts_put64(gmem_ptr(&mem, rsp, 8), rip);
    vbts_put64(gmem_ptr(&mem, rsp + 8, 8), 0x08);
    vbts_put64(gmem_ptr(&mem, rsp + 16, 8), 0x2);
    vbts_put64(gmem_ptr(&mem, rsp + 24, 8), new_rsp);
    vbts_put64(gmem_ptr(&mem, rsp + 32, 8), 0x10);
}

Test(pvm, iretq_chains_are_read_from_their_frames)
{
    /* iretq -> iretq -> jmp rax, all in one step (kvm_pvm after a port write) */
    static const uint8_t iretq[] = { 0x48, 0xcf }, jmp_rax[] = { 0xff, 0xe0 };
    memcpy(gmem_ptr(&mem, 0x10000, 2), iretq, 2);
    memcpy(gmem_ptr(&mem, 0x10010, 2), iretq, 2);
    memcpy(gmem_ptr(&mem, 0x10020, 2), jmp_rax, 2);
    frame(0x50000, 0x10010, 0x50100);
    frame(0x50100, 0x10020, 0x50200);
    regs.rsp = 0x50000;
    regs.rax = 0x10030;
    engine();
    cr_assert_eq(settle_at(0x10030, 0x50200), 0);
    cr_assert_eq(ngot, 3);
    cr_assert_eq(got[0][0], 0x10000);
    cr_assert_eq(got[0][1], 0x10010);
    cr_assert_eq(got[1][0], 0x10010);
    cr_assert_eq(got[1][1], 0x10020);
    cr_assert_eq(got[2][0], 0x10020);
    cr_assert_eq(got[2][1], 0x10030, "jmp rax: RAX as IRETQ left it, not taken on trust");
}

Test(pvm, an_iretq_chain_that_does_not_lead_there_stops_the_trace)
{
    static const uint8_t iretq[] = { 0x48, 0xcf }, jmp_rax[] = { 0xff, 0xe0 };
    memcpy(gmem_ptr(&mem, 0x10000, 2), iretq, 2);
    memcpy(gmem_ptr(&mem, 0x10010, 2), jmp_rax, 2);
    frame(0x50000, 0x10010, 0x50100);
    regs.rsp = 0x50000;
    regs.rax = 0x10030;
    engine();
    cr_assert_eq(settle_at(0x10040, 0x50100), -1, "jmp rax goes to 0x10030, not 0x10040");
    cr_assert_eq(atomic_load(&vm.end), VM_END_MONITOR);
    cr_assert(strstr(vm.end_msg, "0x10010") && strstr(vm.end_msg, "0x10040"), "%s", vm.end_msg);
}

Test(pvm, a_far_jmp_whose_target_cannot_be_read_is_not_taken_on_trust)
{
    /* jmp far [0x30000] through a selector beyond the GDT: #GP, the handler's first instruction swallowed */
    static const uint8_t jmpf[] = { 0xff, 0x2c, 0x25, 0x00, 0x00, 0x03, 0x00 };
    memcpy(gmem_ptr(&mem, regs.rip, sizeof(jmpf)), jmpf, sizeof(jmpf));
    vbts_put32(gmem_ptr(&mem, 0x30000, 4), 0);
    vbts_put16(gmem_ptr(&mem, 0x30004, 2), 0x80);
    gate64(13, 0x20000, 0x08, 0xe, 0, 0);
    static const uint8_t nop[] = { 0x90 };
    memcpy(gmem_ptr(&mem, 0x20000, 1), nop, 1);
    engine();
    cr_assert_not(t.pred.target_known);
    /* The frame moved RSP: an event, the #GP's, not a far jmp to 0x20001. */
    cr_assert_eq(settle_at(0x20001, regs.rsp - 56), 0);
    cr_assert_eq(ngot, 1);
    cr_assert_eq(got[0][0], 0x10000);
    cr_assert_eq(got[0][1], 0x20000, "to the handler, whose first instruction ran unseen");
}
