/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what a guest controls in its own BTS
 * (vmm/guest_bts/guest_bts.c): MSR writes, the paging mode, its RAM (page
 * tables, the DS area and the BTS buffer), then branch records stored, on
 * two fake vCPUs over 128 KiB of RAM, no KVM (as in
 * tests/unit/guest_bts/test_guest_bts.c).  Records must land only in RAM,
 * through the guest's own mapping; sanitizers catch the rest.
 *
 * Input: a program of one-byte opcodes with their operands (see step()).
 */
#include "fuzz.h"

#include <linux/kvm.h>

#include "core/vm.h"
#include "guest_bts/guest_bts.h"
#include "vbts/le.h"
#include "x86/arch.h"

#define RAM (128u << 10)
#define NCPUS 2

static struct vm vm;
static struct vcpu cpus[NCPUS];
static struct kvm_run runs[NCPUS];
static struct arch_vm avm;
static struct arch_vcpu acpu[NCPUS];
static unsigned pmis;

static void pmi(void *ctx, struct vcpu *c)
{
    (void)ctx;
    fuzz_check(c == &cpus[0] || c == &cpus[1], "PMI for a foreign vCPU");
    pmis++;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* ds_fault's log lines, once per input, would drown libFuzzer's own. */
    FILE *null = fopen("/dev/null", "w");
    if (null)
        stderr = null;
    vm_init(&vm);
    vm.arch = &avm;
    vm.vcpus = cpus;
    vm.ncpus = NCPUS;
    return gmem_init(&vm.mem, RAM);
}

struct prog {
    const uint8_t *p, *end;
};

static uint64_t take(struct prog *g, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes && g->p < g->end; i++)
        v |= (uint64_t)*g->p++ << (8 * i);
    return v;
}

static void set_mode(struct kvm_sregs *s, unsigned mode, uint64_t cr3, struct prog *g)
{
    static const struct { uint64_t cr0, cr4, efer; } modes[] = {
        { 0x10, 0, 0 },                         /* real mode */
        { 0x11, 0, 0 },                         /* protected, no paging */
        { 0x80000011, 0, 0 },                   /* 32-bit paging */
        { 0x80000011, 0x10, 0 },                /* 32-bit paging, PSE */
        { 0x80000011, 0x20, 0x800 },            /* PAE, NXE */
        { 0x80000011, 0x20, 0xd00 },            /* long mode (LME, LMA, NXE) */
        { 0x80000011, 0x1020, 0xd00 },          /* 5-level paging */
    };
    if (mode < sizeof(modes) / sizeof(modes[0])) {
        s->cr0 = modes[mode].cr0;
        s->cr4 = modes[mode].cr4;
        s->efer = modes[mode].efer;
    } else {
        s->cr0 = take(g, 8);
        s->cr4 = take(g, 8);
        s->efer = take(g, 8);
    }
    s->cr3 = cr3;
}

static const uint32_t msrs[] = { MSR_IA32_DEBUGCTL, MSR_IA32_DS_AREA, MSR_IA32_MISC_ENABLE, 0x10 };

/* One instruction of the program. */
static void step(struct guest_bts *gb, struct prog *g)
{
    unsigned op = (unsigned)take(g, 1);
    struct vcpu *cpu = &cpus[(op >> 7) & 1];
    struct kvm_sregs *s = &cpu->run->s.regs.sregs;
    uint64_t v;
    switch (op & 7) {
    case 0: {                                   /* WRMSR index value */
        uint32_t idx = msrs[take(g, 1) & 3];
        guest_bts_wrmsr(gb, cpu, idx, take(g, 8));
        break;
    }
    case 1:                                     /* RDMSR index */
        guest_bts_rdmsr(gb, cpu, msrs[take(g, 1) & 3], &v);
        break;
    case 2: {                                   /* a branch: from to cpl */
        struct vbts_record r = { take(g, 8), take(g, 8), 0 };
        guest_bts_store(gb, cpu, &r, (int)(take(g, 1) & 3));
        break;
    }
    case 3: {                                   /* paging mode, CR3 page */
        unsigned mode = (unsigned)take(g, 1);
        set_mode(s, mode & 7, (take(g, 2) << 12) | (mode & 0x18), g);
        break;
    }
    case 4: {                                   /* RAM: offset, length, bytes */
        uint64_t at = take(g, 3) % RAM;
        size_t n = (size_t)take(g, 1);
        uint8_t *m = gmem_ptr(&vm.mem, at, 1);
        for (size_t i = 0; i < n && at + i < RAM && g->p < g->end; i++)
            m[i] = *g->p++;
        break;
    }
    case 5: {                                   /* RAM: an aligned 64-bit word */
        uint64_t at = (take(g, 2) * 8) % RAM;
        vbts_put64(gmem_ptr(&vm.mem, at, 8), take(g, 8));
        break;
    }
    case 6:                                     /* events in software (deliver.c) or KVM's */
        acpu[cpu->index].soft_events = !acpu[cpu->index].soft_events;
        s->idt.base = take(g, 3) % RAM;
        s->idt.limit = (uint16_t)take(g, 2);
        break;
    default:
        guest_bts_on(gb, cpu);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!vm.mem.host && LLVMFuzzerInitialize(NULL, NULL) < 0)
        abort();
    memset(vm.mem.host, 0, RAM);
    memset(runs, 0, sizeof(runs));
    memset(acpu, 0, sizeof(acpu));
    memset(&avm, 0, sizeof(avm));
    for (int i = 0; i < NCPUS; i++) {
        cpus[i] = (struct vcpu){ .vm = &vm, .index = i, .fd = -1, .run = &runs[i],
                                 .arch = &acpu[i] };
        runs[i].s.regs.sregs.cr0 = 0x11;
    }
    struct guest_bts *gb = guest_bts_new(NCPUS);
    if (!gb)
        abort();
    guest_bts_set_pmi(gb, pmi, NULL);
    struct prog g = { data, data + size };
    for (int k = 0; k < 256 && g.p < g.end; k++)
        step(gb, &g);
    guest_bts_free(gb);
    return 0;
}
