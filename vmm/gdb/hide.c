/* SPDX-License-Identifier: MIT */
#include "gdb/hide.h"

#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/kvm.h"
#include "core/vm.h"
#include "gdb/target.h"
#include "trace/trace.h"
#include "x86/cpu.h"
#include "x86/host.h"
#include "x86/rep.h"

/* The guest-physical page of an execution point: the loader's image first (before paging), then vCPU 0's tables. */
static bool page_of(struct gdb *g, uint64_t lin, uint64_t *page)
{
    uint64_t gpa;
    struct kvm_sregs s;
    struct gmem_paging pg;
    if (!vm_image_gpa(g->vm, lin, &gpa)) {
        if (ioctl(g->vm->vcpus[0].fd, KVM_GET_SREGS, &s) < 0)
            return false;
        cpu_paging(&s, &pg);
        if (gmem_translate(&g->vm->mem, &pg, lin, &gpa) != GMEM_OK)
            return false;
    }
    *page = gpa & ~0xfffull;
    return true;
}

int hide_arm(struct gdb *g)
{
    uint64_t page = 0;
    bool any = false;
    for (int i = 0; i < g->npoints; i++) {
        const struct point *p = &g->points[i];
        uint64_t pp;
        if (p->type != STUB_SW_BREAK && p->type != STUB_HW_BREAK)
            return 0;           /* a watchpoint checked by stepping: step anyway */
        if (!page_of(g, p->addr, &pp) || (any && pp != page))
            return 0;
        page = pp;
        any = true;
    }
    struct vm *vm = g->vm;
    /*
     * A vCPU the engine steps anyway (gdb records it, --trace) checks at
     * each step for free; and the engine does not step through a page
     * that comes and goes (with --trace its window may open meanwhile).
     */
    if (g->tr && trace_writes(g->tr))
        return 0;
    for (int i = 0; i < vm->ncpus; i++)
        if (g->cpu[i].want_record || (g->tr && trace_steps(g->tr, &vm->vcpus[i])))
            return 0;
    if (!any || (vm->hide.on && (!g->hide_isolated || vm->hide.gpa != page)) ||
        !kvm_extension(vm, KVM_CAP_EXIT_ON_EMULATION_FAILURE))
        return 0;
    if (!g->hide_isolated) {
        if (kvm_exit_on_emulation_failure(vm, true) < 0 || kvm_mem_isolate(vm, page) < 0)
            return -1;
        g->hide_isolated = true;
    }
    if (kvm_mem_hide(vm, true) < 0)
        return -1;
    g->hide_on = true;
    return 1;
}

int hide_disarm(struct gdb *g)
{
    if (!g->hide_on)
        return 0;
    g->hide_on = false;
    g->hide_passing = 0;
    for (int i = 0; i < g->vm->ncpus; i++)
        g->cpu[i].passing = false;
    return kvm_mem_hide(g->vm, false);
}

/* Does the instruction at the vCPU's RIP take a byte from the page? */
static bool touches(struct gdb *g, struct vcpu *cpu)
{
    struct cpu_view v = { &g->vm->mem, &cpu->run->s.regs.regs, &cpu->run->s.regs.sregs };
    return cpu_fetch_touches(&v, cpu_linear_ip(v.regs, v.sregs), g->vm->hide.gpa);
}

/* A passage begins or ends: the page is shown while any vCPU passes. */
static int passage(struct gdb *g, struct vcpu *cpu, bool begin)
{
    struct gdb_vcpu *v = &g->cpu[cpu->index];
    int r = 0;
    pthread_mutex_lock(&g->lock);
    if (g->hide_on && v->passing != begin) {
        v->passing = begin;
        g->hide_passing += begin ? 1 : -1;
        if (g->hide_passing == (begin ? 1 : 0))
            r = kvm_mem_hide(g->vm, !begin);
    }
    pthread_mutex_unlock(&g->lock);
    return r;
}

enum vcpu_verdict hide_on_fetch(struct vcpu *cpu, void *ctx)
{
    struct gdb *g = ctx;
    if (!g->hide_on || cpu->run->internal.suberror != KVM_INTERNAL_ERROR_EMULATION ||
        !touches(g, cpu))
        return VCPU_EXIT_PASS;
    if (passage(g, cpu, true) < 0 || target_step_for_points(g, cpu) < 0)
        vm_request_end(cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
    return VCPU_EXIT_DONE;
}

int hide_step(struct gdb *g, struct vcpu *cpu)
{
    if (!g->cpu[cpu->index].passing || touches(g, cpu))
        return 0;
    if (passage(g, cpu, false) < 0)
        return -1;
    return target_step_for_points(g, cpu);
}

int hide_rep(struct gdb *g, struct vcpu *cpu)
{
    if (!g->cpu[cpu->index].passing || !host_tdp() || (g->tr && trace_steps(g->tr, cpu)))
        return 0;
    struct kvm_regs *r = &cpu->run->s.regs.regs;
    struct cpu_view v = { &cpu->vm->mem, r, &cpu->run->s.regs.sregs };
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    const char *why;
    if (cpu_decode(&v, cpu_linear_ip(r, v.sregs), &in, ops, &why) < 0 || !rep_run(&v, &in, ops, r))
        return 0;
    if (ioctl(cpu->fd, KVM_SET_REGS, r) < 0)
        return error_fail_errno("KVM_SET_REGS");
    return 1;
}
