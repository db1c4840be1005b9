/* SPDX-License-Identifier: MIT */
/*
 * The start trigger on hosts whose hardware breakpoints do not fire in the
 * guest (QEMU's TCG emulation of SVM: docs/host-compat.md).  The page of
 * guest RAM that holds the trigger gets a memory slot of its own and is
 * taken from the guest (kvm_mem_hide).  Its reads and writes still work:
 * they exit as MMIO and the core serves them from RAM.  Fetching an
 * instruction from it fails in KVM's emulator, which exits to the monitor
 * (KVM_CAP_EXIT_ON_EMULATION_FAILURE).  That vCPU then gets the page back
 * and single-steps through it, untraced, until it reaches the trigger (the
 * window opens) or leaves the page (which is hidden again once no vCPU is
 * passing through).  Nothing is written into the guest: it sees its own
 * bytes throughout.  While one vCPU passes, others run the page unwatched;
 * the window then opens at a later arrival, never at a wrong one.
 */
#include "trace/catch.h"

#include <sys/ioctl.h>

#include "core/kvm.h"
#include "trace/step.h"
#include "trace/window.h"
#include "x86/cpu.h"
#include "x86/event.h"
#include "x86/host.h"

int catch_arm(struct trace *tr)
{
    struct vm *vm = tr->vm;
    uint64_t start = tr->cfg->start, gpa;
    if (!vm_image_gpa(vm, start, &gpa))
        return error_fail("--trace-start 0x%llx: hardware breakpoints do not fire on this host "
                          "(%s), and the address is not in the loaded guest image, whose pages "
                          "vbts can watch instead", (unsigned long long)start, host_kvm_name());
    if (!kvm_extension(vm, KVM_CAP_EXIT_ON_EMULATION_FAILURE))
        return error_fail("--trace-start: hardware breakpoints do not fire on this host (%s), "
                          "and its KVM lacks KVM_CAP_EXIT_ON_EMULATION_FAILURE (Linux 5.14), "
                          "which watching the trigger's page needs", host_kvm_name());
    if (kvm_exit_on_emulation_failure(vm, true) < 0 || kvm_mem_isolate(vm, gpa) < 0 ||
        kvm_mem_hide(vm, true) < 0)
        return -1;
    tr->catch_armed = true;
    return 0;
}

/* Does the instruction at linear `lin` take a byte from the hidden page? */
static bool touches(const struct trace_vcpu *t, const struct cpu_view *v, uint64_t lin)
{
    return cpu_fetch_touches(v, lin, t->cpu->vm->hide.gpa);
}

/* A passage through the page begins or ends: the page is shown while any vCPU passes. */
static int passage(struct trace_vcpu *t, bool begin)
{
    struct trace *tr = t->tr;
    int r = 0;
    pthread_mutex_lock(&tr->catch_lock);
    if (t->passing != begin) {
        t->passing = begin;
        tr->catch_passing += begin ? 1 : -1;
        if (tr->catch_armed && tr->catch_passing == (begin ? 1 : 0))
            r = kvm_mem_hide(tr->vm, !begin);
    }
    pthread_mutex_unlock(&tr->catch_lock);
    return r;
}

static enum vcpu_verdict fail(struct trace_vcpu *t)
{
    vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
    return VCPU_EXIT_DONE;
}

enum vcpu_verdict catch_on_fetch(struct trace_vcpu *t)
{
    struct kvm_run *run = t->cpu->run;
    if (!t->tr->catch_armed || run->internal.suberror != KVM_INTERNAL_ERROR_EMULATION)
        return VCPU_EXIT_PASS;
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    if (!touches(t, &v, rip)) {
        if (cpu_cpl(v.sregs) == 0)
            return VCPU_EXIT_PASS;
        /* KVM would have given user mode #UD, but for the capability armed here. */
        struct event ud = { .kind = EVENT_EXCEPTION, .vector = 6 };
        return event_raise(t->cpu, &ud) < 0 ? fail(t) : VCPU_EXIT_DONE;
    }
    if (passage(t, true) < 0)
        return fail(t);
    if (rip == t->tr->cfg->start)
        return window_open_here(t) < 0 ? fail(t) : VCPU_EXIT_DONE;
    if (step_update(t) < 0 || step_predict(t, false) < 0)
        return fail(t);
    return VCPU_EXIT_DONE;
}

int catch_step(struct trace_vcpu *t, uint64_t rip)
{
    if (rip == t->tr->cfg->start)
        return window_open_here(t) < 0 ? -1 : 1;
    struct cpu_view v;
    trace_view(t, &v);
    if (touches(t, &v, rip))
        return 0;
    if (passage(t, false) < 0 || step_update(t) < 0)
        return -1;
    return 0;
}

int catch_window_open(struct trace_vcpu *t)
{
    struct trace *tr = t->tr;
    if (!tr->catch_armed && !t->passing)
        return 0;
    int r = passage(t, false);
    pthread_mutex_lock(&tr->catch_lock);
    if (tr->catch_armed) {
        tr->catch_armed = false;
        if (r == 0)
            r = kvm_mem_hide(tr->vm, false);
        if (r == 0)
            r = kvm_exit_on_emulation_failure(tr->vm, false);
    }
    pthread_mutex_unlock(&tr->catch_lock);
    return r;
}
