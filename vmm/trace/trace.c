/* SPDX-License-Identifier: MIT */
/* The trace engine wired to a VM: hooks, exits and notifications it registers. */
#include "trace/trace.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kvm.h>

#include "export/sink.h"
#include "guest_bts/guest_bts.h"
#include "trace/backend.h"
#include "trace/catch.h"
#include "trace/engine.h"
#include "trace/exitcheck.h"
#include "trace/leap.h"
#include "trace/step.h"
#include "trace/wait.h"
#include "trace/window.h"
#include "x86/debug.h"
#include "x86/event.h"
#include "x86/host.h"
#include "x86/hostcompat.h"

static enum vbts_stop_reason stop_reason(enum vm_end e)
{
    switch (e) {
    case VM_END_HALT:
    case VM_END_DEBUG_EXIT: return VBTS_STOP_GUEST_EXIT;
    case VM_END_CRASH: return VBTS_STOP_GUEST_CRASH;
    case VM_END_HOST: return VBTS_STOP_UNSUPPORTED;
    case VM_END_SIGNAL: return VBTS_STOP_INTERRUPTED;
    case VM_END_TRACE_DONE: return VBTS_STOP_LIMIT;
    default: return VBTS_STOP_ERROR;
    }
}

int trace_desync(struct trace_vcpu *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    leap_flush_at(t, 0);    /* a stretch in flight ran to nowhere known: none of its records */
    if (t->tr->sink)
        sink_stop(t->tr->sink, t->cpu->index, VBTS_STOP_DESYNC);
    vm_request_end(t->cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", msg);
    return error_fail("%s", msg);
}

static struct trace_vcpu *of(void *ctx, struct vcpu *cpu)
{
    return &((struct trace *)ctx)->cpu[cpu->index];
}

/*
 * The start trigger, once for all vCPUs: a hardware breakpoint, or where
 * they do not fire (or VBTS_START_TRIGGER=page asks), its page watched.
 */
static int arm_start(struct trace *tr)
{
    if (tr->start_armed)
        return 0;
    tr->start_armed = true;
    const char *how = getenv("VBTS_START_TRIGGER");
    if (how && strcmp(how, "page") && strcmp(how, "breakpoint"))
        return error_fail("VBTS_START_TRIGGER=%s: expected page or breakpoint", how);
    bool page = how && !strcmp(how, "page");
    int fire = page ? 0 : host_breakpoints_fire(tr->vm->kvm_fd);
    if (fire < 0)
        return -1;
    if (how && !page && !fire)
        return error_fail("VBTS_START_TRIGGER=breakpoint: hardware breakpoints do not fire in this host's guests");
    return fire ? 0 : catch_arm(tr);
}

/* Before the first run: with --trace, START and stepping, or the start trigger. */
static int on_start(struct vcpu *cpu, void *ctx)
{
    struct trace_vcpu *t = of(ctx, cpu);
    /* Registers arrive with every exit, so a step costs no extra ioctl. */
    cpu->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
    t->pvm.event_vector = -1;
    if (!t->tr->sink)
        return 0;
    if (atomic_load(&t->tr->cfg->window) == WINDOW_WAITING) {
        /* Untraced at full speed until a vCPU reaches the start trigger. */
        if (arm_start(t->tr) < 0)
            return -1;
        if (t->tr->catch_armed)
            return 0;
        t->bp_armed = true;
        return step_update(t);
    }
    return window_enter(t, false);
}

/*
 * kvm_pvm runs user mode natively and fires no breakpoint there, so a start
 * trigger in a user-mode page never opens the window.  Its page tables are
 * read at every run while the trigger waits (on kvm_pvm a process exits to
 * the monitor often: interrupt controller, system calls), and once more
 * when the vCPU ends, for a run that had no exit in between.
 */
static bool start_in_user_page(struct trace_vcpu *t)
{
    if (!t->bp_armed || !host_is_pvm() || host_steps_user())
        return false;
    struct cpu_view v;
    trace_view(t, &v);
    struct gmem_paging pg;
    cpu_paging(v.sregs, &pg);
    uint64_t gpa;
    struct gmem_access a;
    return (pg.cr0 & CR0_PG) && gmem_walk(v.mem, &pg, t->tr->cfg->start, &gpa, &a) == GMEM_OK && a.user;
}

/* Said once, when first seen: the run goes on, the kernel may still run it. */
static void start_reachable(struct trace_vcpu *t)
{
    if (atomic_load(&t->tr->start_user) || !start_in_user_page(t) || atomic_exchange(&t->tr->start_user, true))
        return;
    fprintf(stderr, "vbts: --trace-start 0x%llx is in a user-mode page: kvm_pvm fires no breakpoints in "
            "user mode, so only kernel code can open the window there (docs/engine.md)\n",
            (unsigned long long)t->tr->cfg->start);
}

/*
 * A WRMSR or LIDT the engine stepped in the run before has run now: the
 * guest may have moved the areas KVM writes (kvmclock, steal time: the
 * branch engine reads them again) and set LSTAR or its IDT, which
 * host-compat reads only then while the engine sees every instruction,
 * and every 16th run in case a host ran one inside another's step.
 */
static void tell_loads(struct trace_vcpu *t, bool before)
{
    if (before) {
        if (t->loads_msr)
            t->leap.host_known = false;
        if (t->loads_msr || ++t->runs_unchecked >= 16) {
            hostcompat_recheck(t->cpu);
            t->runs_unchecked = 0;
        }
        return;
    }
    t->loads_msr = t->stepping && t->pred_valid &&
                   (t->pred.mnemonic == ZYDIS_MNEMONIC_WRMSR || t->pred.mnemonic == ZYDIS_MNEMONIC_LIDT);
    hostcompat_follow(t->cpu, t->stepping && t->pred_valid);
}

static int pre_run(struct trace_vcpu *t)
{
    if (window_poll(t) < 0)
        return -1;
    start_reachable(t);
    if (!t->stepping)
        return 0;
    if (t->halted_off && wait_halted(t) < 0)
        return -1;
    if (!t->stepping)
        return 0;
    if (!t->started && wait_start(t) < 0)
        return -1;
    return t->tr->engine == TRACE_ENGINE_BRANCH ? leap_before_run(t) : t->tr->be->arm_step(t, false);
}

static int on_pre_run(struct vcpu *cpu, void *ctx)
{
    struct trace_vcpu *t = of(ctx, cpu);
    tell_loads(t, true);
    int r = pre_run(t);
    tell_loads(t, false);
    return r;
}

static const char *exit_name(uint32_t reason)
{
    switch (reason) {
    case KVM_EXIT_IO: return "port I/O";
    case KVM_EXIT_MMIO: return "MMIO";
    case KVM_EXIT_HLT: return "HLT";
    case KVM_EXIT_SHUTDOWN: return "shutdown";
    case KVM_EXIT_INTERNAL_ERROR: return "internal error";
    case KVM_EXIT_X86_RDMSR: return "RDMSR";
    case KVM_EXIT_X86_WRMSR: return "WRMSR";
    case KVM_EXIT_SYSTEM_EVENT: return "system event";
    default: return "other";
    }
}

/*
 * Every exit of a vCPU the engine follows, checked against its prediction
 * (exitcheck.h): at the instruction it predicted, or on the stretch in
 * flight; anywhere else, what ran since is read as a step, or the trace
 * ends here.
 */
static int on_any_exit(struct vcpu *cpu, void *ctx)
{
    struct trace_vcpu *t = of(ctx, cpu);
    uint32_t reason = cpu->run->exit_reason;
    if (!t->stepping || !t->pred_valid)
        return 0;
    struct cpu_view v;
    trace_view(t, &v);
    uint64_t rip = cpu_linear_ip(v.regs, v.sregs);
    bool reset = exitcheck_reset(v.regs, v.sregs);
    if (reason == KVM_EXIT_SHUTDOWN && t->tr->be->own_shutdowns) {
        if (t->tr->sink)
            sink_stop(t->tr->sink, cpu->index, VBTS_STOP_UNSUPPORTED);
        vm_request_end(cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR,
                       "trace stopped at 0x%llx on vCPU %d: this host (%s) shut the guest down there, and it "
                       "delivers nested events otherwise than the CPU: whether the CPU would is not known",
                       (unsigned long long)rip, cpu->index, t->tr->be->name);
        return 0;
    }
    if (t->leap.flight) {
        enum exitcheck_verdict k = exitcheck_step(reason, rip, rip, reset);
        if (k == EXITCHECK_NONE || k == EXITCHECK_GONE || stretch_index(&t->leap.s, rip) >= 0)
            return 0;
        /*
         * An MMIO write: KVM completes the instruction, then exits.  By the
         * stretch's last one, the vCPU stands at the end, whose breakpoint
         * fires when it resumes there (the emulator leaves RF clear).
         */
        if (reason == KVM_EXIT_MMIO && stretch_leaf_at(&t->leap.s, rip) >= 0)
            return 0;
        return trace_desync(t, "trace incomplete: vCPU %d stopped at 0x%llx (%s exit), where the "
                            "stretch it ran from 0x%llx to 0x%llx does not go", cpu->index,
                            (unsigned long long)rip, exit_name(reason),
                            (unsigned long long)t->leap.s.ins[0], (unsigned long long)t->leap.s.end);
    }
    t->owed = false;
    switch (exitcheck_step(reason, t->pred.from, rip, reset)) {
    case EXITCHECK_OWED:
        t->owed = true;
        return 0;
    case EXITCHECK_RAN:
        /* The step ended at this exit (the guest's, not one more of the engine's). */
        if (step_complete(t) < 0)
            return -1;
        t->owed = reason == KVM_EXIT_IO || reason == KVM_EXIT_MMIO || reason == KVM_EXIT_X86_RDMSR ||
                  reason == KVM_EXIT_X86_WRMSR;
        return 0;
    default:
        return 0;
    }
}

static int on_thread_end(struct vcpu *cpu, void *ctx)
{
    struct trace_vcpu *t = of(ctx, cpu);
    if (atomic_load(&t->tr->cfg->window) == WINDOW_WAITING && start_in_user_page(t))
        atomic_store(&t->tr->start_user, true);
    window_finish(t, stop_reason(atomic_load(&cpu->vm->end)));
    return 0;
}

/* Port I/O and MMIO are completed by the monitor: the engine watches, the devices act. */
static enum vcpu_verdict on_completion(struct vcpu *cpu, void *ctx)
{
    struct trace_vcpu *t = of(ctx, cpu);
    t->tr->be->completion(t);
    return VCPU_EXIT_PASS;
}

/* KVM could not emulate an instruction: perhaps one fetched from the trigger's hidden page. */
static enum vcpu_verdict on_internal_error(struct vcpu *cpu, void *ctx)
{
    return catch_on_fetch(of(ctx, cpu));
}

static enum vcpu_verdict on_debug(struct vcpu *cpu, unsigned hits, void *ctx)
{
    return step_on_debug(of(ctx, cpu), hits);
}

/*
 * The monitor raised an event: a stretch in flight ends where it came (its
 * records up to there are written), and the host reads its delivery.
 */
static void on_event(struct vcpu *cpu, const struct event *ev, void *ctx)
{
    struct trace_vcpu *t = of(ctx, cpu);
    if (!t->stepping)
        return;
    if (ev->kind == EVENT_COMPLETED) {
        /*
         * Its step ends here, as a CPU's would: stepped on, the host would
         * run the next instruction in the same step.  A stretch in flight
         * runs on past it.
         */
        if (!t->leap.flight && t->pred_valid) {
            t->steps++;
            step_complete(t);
        }
        return;
    }
    if (t->leap.flight) {
        struct cpu_view v;
        trace_view(t, &v);
        leap_flush_at(t, ev->delivered ? ev->from : cpu_linear_ip(v.regs, v.sregs));
        if (!ev->delivered && step_predict(t, false) < 0)
            return;
    }
    t->tr->be->event(t, ev);
}

static int on_bts_change(void *ctx, struct vcpu *cpu)
{
    return step_bts_changed(of(ctx, cpu));
}

struct trace *trace_install(struct vm *vm, struct trace_config *c, struct guest_bts *gbts)
{
    struct trace *tr = calloc(1, sizeof(*tr));
    if (tr)
        tr->cpu = calloc((size_t)vm->ncpus, sizeof(*tr->cpu));
    if (!tr || !tr->cpu) {
        free(tr);
        error_fail("out of memory");
        return NULL;
    }
    tr->vm = vm;
    tr->cfg = c;
    pthread_mutex_init(&tr->catch_lock, NULL);
    tr->gbts = gbts;
    tr->be = host_is_pvm() ? &backend_pvm : &backend_tf;
    tr->block_irq = debug_can_block_irq(vm);
    /* Stretches run through loops only where one vCPU is alone (trace/stretch.h): room for that there. */
    unsigned cap = vm->ncpus == 1 ? STRETCH_MAX_PATH : STRETCH_MAX_INSNS;
    for (int i = 0; i < vm->ncpus; i++) {
        tr->cpu[i].tr = tr;
        tr->cpu[i].cpu = &vm->vcpus[i];
        tr->cpu[i].pvm.event_vector = -1;
        tr->cpu[i].leap.mem = calloc(1, STRETCH_MEM(cap));
        if (!tr->cpu[i].leap.mem) {
            trace_free(tr);
            error_fail("out of memory");
            return NULL;
        }
        stretch_attach(&tr->cpu[i].leap.s, tr->cpu[i].leap.mem, cap);
    }
    if (vcpu_on_hook(vm, VCPU_HOOK_START, on_start, tr) < 0 ||
        vcpu_on_hook(vm, VCPU_HOOK_PRE_RUN, on_pre_run, tr) < 0 ||
        vcpu_on_hook(vm, VCPU_HOOK_THREAD_END, on_thread_end, tr) < 0 ||
        vcpu_on_hook(vm, VCPU_HOOK_EXIT, on_any_exit, tr) < 0 ||
        vcpu_on_exit(vm, KVM_EXIT_IO, on_completion, tr) < 0 ||
        vcpu_on_exit(vm, KVM_EXIT_MMIO, on_completion, tr) < 0 ||
        vcpu_on_exit(vm, KVM_EXIT_INTERNAL_ERROR, on_internal_error, tr) < 0 ||
        debug_on_exit(vm, DEBUG_TRACE, on_debug, tr) < 0 ||
        event_observe(vm, on_event, tr) < 0) {
        trace_free(tr);
        return NULL;
    }
    if (gbts)
        guest_bts_on_change(gbts, on_bts_change, tr);
    return tr;
}

void trace_on_record(struct trace *t, trace_record_fn fn, void *ctx)
{
    t->on_record = fn;
    t->record_ctx = ctx;
}

int trace_record(struct trace *tr, struct vcpu *cpu, bool on)
{
    struct trace_vcpu *t = &tr->cpu[cpu->index];
    if (on == t->recording)
        return 0;
    if (on && !tr->on_record)
        return error_fail("trace_record: nobody listens");
    t->recording = on;
    bool was = t->stepping;
    if (step_update(t) < 0)
        return -1;
    if (!t->stepping || was)
        return 0;
    t->pvm.event_vector = -1;
    return step_sync_regs(t) < 0 ? -1 : step_predict(t, false);
}

int trace_pause(struct trace *tr, struct vcpu *cpu)
{
    return leap_pause(&tr->cpu[cpu->index]);
}

int trace_resync(struct trace *tr, struct vcpu *cpu)
{
    struct trace_vcpu *t = &tr->cpu[cpu->index];
    if (step_sync_regs(t) < 0)
        return -1;
    return t->stepping ? step_predict(t, false) : 0;
}

bool trace_steps(const struct trace *tr, const struct vcpu *cpu)
{
    return tr->cpu[cpu->index].stepping;
}

bool trace_writes(const struct trace *tr)
{
    return tr->sink != NULL;
}

static const char *const engine_names[] = { "step", "branch" };

int trace_set_engine(struct trace *t, int asked)
{
    int fire = host_breakpoints_fire(t->vm->kvm_fd);
    if (fire < 0)
        return -1;
    t->bp_fire = fire;
    /* VBTS_EXCEPTION_WATCH=0: foresight alone, as where breakpoints do not fire (the tests' way there). */
    const char *w = getenv("VBTS_EXCEPTION_WATCH");
    t->watch = fire && !(w && !strcmp(w, "0"));
    /* The branch engine runs where breakpoints fire: stretches end at them. */
    if (asked == TRACE_ENGINE_BRANCH && !fire)
        return error_fail("--engine branch: hardware breakpoints do not fire in this host's guests");
    t->engine = asked >= 0 ? (enum trace_engine)asked
                           : fire ? TRACE_ENGINE_BRANCH : TRACE_ENGINE_STEP;
    return 0;
}

const char *trace_start_unreachable(const struct trace *t)
{
    return atomic_load(&t->start_user) ? "it is in a user-mode page, where kvm_pvm fires no breakpoints" : NULL;
}

const char *trace_engine_name(const struct trace *t)
{
    return engine_names[t->engine];
}

void trace_set_sink(struct trace *t, struct sink *s)
{
    t->sink = s;
}

void trace_totals(const struct trace *t, uint64_t *branches, uint64_t *exits)
{
    *branches = *exits = 0;
    for (int i = 0; i < t->vm->ncpus; i++) {
        if (t->sink)
            *branches += sink_branches(t->sink, i);
        *exits += t->cpu[i].steps + t->cpu[i].leap.stops;
    }
}

void trace_exit_causes(const struct trace *t, char *buf, size_t len)
{
    static const char *const name[STRETCH_END_KINDS] = {
        [STRETCH_END_JCC] = "jcc", [STRETCH_END_RET] = "ret", [STRETCH_END_INDIRECT] = "indirect",
        [STRETCH_END_CUT] = "cut", [STRETCH_END_STORE] = "store", [STRETCH_END_HANDLERS] = "handlers",
        [STRETCH_END_LOOP] = "loop", [STRETCH_END_LIMIT] = "limit", [STRETCH_END_ROUNDS] = "rounds",
    };
    uint64_t ends[STRETCH_END_KINDS] = { 0 }, caught = 0, probes = 0, steps = 0;
    for (int i = 0; i < t->vm->ncpus; i++) {
        for (int k = 0; k < STRETCH_END_KINDS; k++)
            ends[k] += t->cpu[i].leap.ends[k];
        caught += t->cpu[i].leap.caught;
        probes += t->cpu[i].leap.probes;
        steps += t->cpu[i].steps;
    }
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < STRETCH_END_KINDS && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%" PRIu64 " %s, ", ends[k], name[k]);
    probes = probes < steps ? probes : steps;   /* each probe is a step */
    if (n < len)
        snprintf(buf + n, len - n, "%" PRIu64 " exception, %" PRIu64 " probe, %" PRIu64 " step", caught, probes,
                 steps - probes);
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->catch_lock);
    for (int i = 0; t->cpu && i < t->vm->ncpus; i++)
        free(t->cpu[i].leap.mem);
    free(t->cpu);
    free(t);
}
