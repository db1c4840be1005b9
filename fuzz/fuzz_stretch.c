/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the branch engine's planning and its branches taken in
 * software (vmm/trace/stretch.c) on guest state the guest controls: its
 * code, page tables, IDT, GDT, stack and registers, over 64 KiB of RAM, no
 * KVM.  A plan must keep its promises (no breakpoint where the vCPU passes
 * before the end, at most three handlers, records in order); a branch
 * taken must leave RSP moved by one slot or none and RIP where it goes.
 * Sanitizers catch reads and writes outside RAM.
 *
 * Input: 8 register bytes (mode, RIP, RSP, RCX, RFLAGS low bits), then
 * guest RAM from address 0 (the rest stays zero).
 */
#include "fuzz.h"

#include <linux/kvm.h>

#include "core/gmem.h"
#include "trace/stretch.h"
#include "trace/take.h"
#include "vbts/format.h"

#define RAM (64u << 10)

static struct gmem mem;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return gmem_init(&mem, RAM);
}

static void set_mode(struct kvm_sregs *s, unsigned mode)
{
    static const struct { uint64_t cr0, cr4, efer; bool l; } modes[] = {
        { 0x10, 0, 0, false },                  /* real mode */
        { 0x11, 0, 0, false },                  /* protected, no paging */
        { 0x80000011, 0x20, 0x800, false },     /* PAE, NXE */
        { 0x80000011, 0x20, 0xd00, true },      /* long mode */
        { 0x80000011, 0x1020, 0xd00, true },    /* 5-level paging */
        { 0x80000011, 0x800020, 0xd00, true },  /* CET */
    };
    unsigned m = mode % (sizeof(modes) / sizeof(modes[0]));
    s->cr0 = modes[m].cr0;
    s->cr4 = modes[m].cr4;
    s->efer = modes[m].efer;
    s->cr3 = 0x1000;
    s->cs = (struct kvm_segment){ .selector = 0x08 | (mode >> 4 & 3), .limit = 0xffffffff,
                                  .type = 0xb, .present = 1, .s = 1, .l = modes[m].l,
                                  .db = !modes[m].l, .g = 1, .dpl = mode >> 4 & 3 };
    s->ss = (struct kvm_segment){ .selector = 0x10, .limit = 0xffffffff, .type = 3,
                                  .present = 1, .s = 1, .db = 1, .g = 1 };
    s->ds = s->es = s->ss;
    s->gdt = (struct kvm_dtable){ .base = 0x6000, .limit = 0x3f };
    s->idt = (struct kvm_dtable){ .base = 0x8000, .limit = (uint16_t)(mode & 0x40 ? 0xfff : 0xff) };
}

static void check_plan(const struct cpu_view *v, const struct stretch *s)
{
    uint64_t rip = cpu_linear_ip(v->regs, v->sregs);
    fuzz_check(s->nins >= 1 && s->nins <= STRETCH_MAX_PATH, "%u instructions", s->nins);
    fuzz_check(s->ins[0] == rip, "a stretch starts at RIP");
    fuzz_check(s->end != rip && stretch_index(s, s->end) < 0,
               "the end's breakpoint would fire on the way");
    fuzz_check(s->nh >= 0 && s->nh <= STRETCH_MAX_HANDLERS, "%d handlers", s->nh);
    for (int i = 0; i < s->nh; i++)
        fuzz_check(stretch_index(s, s->handler[i]) < 0 && s->handler[i] != s->end,
                   "a handler's breakpoint on the way");
    fuzz_check(s->nrec <= s->nins, "more records than instructions");
    fuzz_check(s->nleaf >= 1 && s->nleaf <= STRETCH_MAX_LEAVES && s->nprefix <= s->nins, "%u leaves", s->nleaf);
    fuzz_check(s->nh + (int)s->nleaf <= STRETCH_MAX_HANDLERS + 1, "more breakpoints than DR0-3");
    for (unsigned l = 0; l < s->nleaf; l++) {
        const struct stretch_leaf *f = &s->leaf[l];
        fuzz_check(f->end != rip && stretch_index(s, f->end) < 0, "a leaf's breakpoint would fire on the way");
        for (unsigned g = 0; g < f->nseg && g < 2; g++)
            fuzz_check(f->seg[g].first >= s->nprefix && f->seg[g].first <= f->seg[g].last &&
                       f->seg[g].last <= s->nins && f->seg[g].rec_first <= f->seg[g].rec_last &&
                       f->seg[g].rec_last <= s->nrec, "a leaf's ranges");
        fuzz_check(f->nseg <= 2, "%u segments", f->nseg);
        for (int i = 0; i < s->nh; i++)
            fuzz_check(s->handler[i] != f->end, "a handler at a leaf");
        for (unsigned m = 0; m < l; m++)
            fuzz_check(s->leaf[m].end != f->end, "two leaves at one address");
    }
    for (unsigned i = 1; i < s->nins; i++)
        fuzz_check(s->recs_before[i] >= s->recs_before[i - 1] && s->recs_before[i] <= s->nrec,
                   "records out of order");
    for (unsigned i = 0; i < s->nins; i++) {
        fuzz_check(s->first[i] == (stretch_index(s, s->ins[i]) == (int)i), "instruction %u: its first time?", i);
        fuzz_check(s->first[i] || (s->loops && i < s->nprefix && !s->rounds),
                   "an instruction twice where the stretch does not loop");
    }
}

static void check_take(const struct cpu_view *v, const struct branch_pred *p,
                       const struct kvm_regs *before, const struct kvm_regs *after)
{
    int64_t d = (int64_t)(after->rsp - before->rsp);
    if (cpu_mode(v->sregs) != MODE_LONG64)
        d = (int32_t)(uint32_t)(after->rsp - before->rsp);
    fuzz_check(d == 0 || d == -8 || d == -4 || (d > 0 && d <= 8 + 0xffff),
               "a branch moved RSP by %lld", (long long)d);
    uint64_t to = p->taken ? p->target : p->from + p->len;
    fuzz_check(cpu_linear_ip(after, v->sregs) == (cpu_mode(v->sregs) == MODE_LONG64 ? to : (uint32_t)to),
               "RIP is not where the branch goes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    memset(gmem_ptr(&mem, 0, RAM), 0, RAM);
    size_t n = size - 8 < RAM ? size - 8 : RAM;
    if (n)  /* gmem_ptr gives no pointer for 0 bytes */
        memcpy(gmem_ptr(&mem, 0, n), data + 8, n);
    struct kvm_regs regs = { 0 };
    struct kvm_sregs sregs = { 0 };
    set_mode(&sregs, data[0]);
    regs.rip = (uint64_t)data[1] << 8 | data[2];
    regs.rsp = (uint64_t)data[3] << 8 | data[4];
    regs.rcx = data[5];
    regs.rflags = 2 | (data[6] & 0xd5) | (uint64_t)(data[7] & 3) << 8;
    struct cpu_view v = { &mem, &regs, &sregs };
    static struct stretch s;
    static uint64_t s_mem[STRETCH_MEM(STRETCH_MAX_PATH) / 8 + 1];
    stretch_attach(&s, s_mem, STRETCH_MAX_PATH);
    uint64_t stop = regs.rip + (data[7] >> 2);
    const struct stretch_opts o = { data[7] >> 6, data[7] & 0x20 ? &stop : NULL, data[6] & 0x20, NULL, data[6] & 0x08,
                                    data[6] & 0x04, data[6] & 0x02 };
    if (stretch_plan(&v, &o, &s))
        check_plan(&v, &s);
    struct branch_pred p;
    const char *why;
    if (branch_predict(&v, &p, &why) == 0) {
        struct kvm_regs before = regs, after = regs;
        if (take_branch(&v, &p, &after))
            check_take(&v, &p, &before, &after);
    }
    return 0;
}
