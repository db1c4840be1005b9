/* SPDX-License-Identifier: MIT */
#include "gdb/target.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "gdb/hide.h"
#include "gdb/points.h"
#include "gdb/stub.h"
#include "trace/branch.h"
#include "trace/trace.h"
#include "x86/cpu.h"
#include "x86/debug.h"
#include "x86/fpu.h"
#include "x86/host.h"

static void now_plus(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

void target_wait_a_little(struct gdb *g)
{
    struct timespec ts;
    now_plus(&ts, TARGET_POLL_MS);
    pthread_cond_timedwait(&g->cond, &g->lock, &ts);
}

/* --- the vCPUs' side ------------------------------------------------------------ */

/* After a resume, on the vCPU's thread: gdb's wishes into KVM and the engine. */
static int apply(struct gdb *g, struct vcpu *cpu, const struct debug_want *w, bool dirty,
                 bool record)
{
    struct gdb_vcpu *v = &g->cpu[cpu->index];
    if (debug_set(cpu, DEBUG_GDB, w) < 0)
        return -1;
    v->stepping = w->step;
    if (dirty && g->tr && trace_resync(g->tr, cpu) < 0)
        return -1;
    if (record != v->recording && g->tr) {
        if (trace_record(g->tr, cpu, record) < 0)
            return -1;
        v->recording = record;
    }
    return 0;
}

void target_request_stop(struct gdb *g)
{
    if (!atomic_exchange(&g->stop_req, true))
        vm_kick_others(g->vm);
}

/* Before a run, with a stop asked or a reason of its own: stop until gdb resumes it. */
static int stop_here(struct gdb *g, struct vcpu *cpu)
{
    struct gdb_vcpu *v = &g->cpu[cpu->index];
    /* Registers whole before gdb reads them: what the last exit owes is done first. */
    if (vcpu_complete(cpu) < 0)
        return -1;
    /* ...and the branch trace up to here (a stretch in flight ends at RIP). */
    if (g->tr && trace_pause(g->tr, cpu) < 0)
        return -1;
    pthread_mutex_lock(&g->lock);
    if (v->why != WHY_NONE && !g->have_stop) {
        g->have_stop = true;
        g->stop = (struct stub_stop){ .cpu = cpu->index, .signal = 5 };
        if (v->why == WHY_POINT) {
            const struct point *p = &g->points[v->point];
            g->stop.why = p->type == STUB_SW_BREAK ? STUB_WHY_SWBREAK
                          : p->type == STUB_HW_BREAK ? STUB_WHY_HWBREAK
                          : p->type == STUB_WRITE_WATCH ? STUB_WHY_WATCH : STUB_WHY_AWATCH;
            g->stop.addr = p->addr;
        }
    }
    v->why = WHY_NONE;
    target_request_stop(g);
    v->paused = true;
    g->npaused++;
    pthread_cond_broadcast(&g->cond);
    /* A vCPU gdb leaves stopped (vCont;s:1 alone) waits through the resume. */
    uint64_t gen = g->gen;
    while (!vm_ending(g->vm) && (g->gen == gen || v->act == STUB_STAY)) {
        if (g->gen != gen)
            gen = g->gen;
        target_wait_a_little(g);
    }
    v->paused = false;
    g->npaused--;
    struct debug_want w;
    points_want(g, v, &w);
    bool dirty = v->dirty, record = v->want_record;
    v->dirty = false;
    pthread_mutex_unlock(&g->lock);
    return vm_ending(g->vm) ? 0 : apply(g, cpu, &w, dirty, record);
}

/* kvm_run's registers are the vCPU's here: synced at its exit, or read again after gdb wrote them (apply). */
static bool enters_user(struct vcpu *cpu)
{
    struct branch_pred p;
    const char *why;
    struct cpu_view view = { &cpu->vm->mem, &cpu->run->s.regs.regs, &cpu->run->s.regs.sregs };
    return cpu_cpl(view.sregs) == 3 || (branch_predict(&view, &p, &why) == 0 && p.to_user);
}

static int on_pre_run(struct vcpu *cpu, void *ctx)
{
    struct gdb *g = ctx;
    struct gdb_vcpu *v = &g->cpu[cpu->index];
    while (!vm_ending(cpu->vm)) {
        if (v->why != WHY_NONE || atomic_load(&g->stop_req)) {
            if (stop_here(g, cpu) < 0)
                return -1;
        }
        /*
         * kvm_pvm hands a step in user mode to the guest as its own #DB:
         * gdb's steps stop before the instruction that would enter it.
         */
        if (!v->stepping || host_steps_user() || !enters_user(cpu))
            break;
        v->why = WHY_STEP;
    }
    /* Hosts that step with TF drop it when they emulate: set it again for this run. */
    return v->stepping && g->tf ? debug_rearm(cpu) : 0;
}

static int on_thread_end(struct vcpu *cpu, void *ctx)
{
    struct gdb *g = ctx;
    pthread_mutex_lock(&g->lock);
    g->cpu[cpu->index].ended = true;
    g->alive--;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    return 0;
}

/* A step gdb asked for, or one of its points (hits: bits in points[] order). */
static enum vcpu_verdict on_debug(struct vcpu *cpu, unsigned hits, void *ctx)
{
    struct gdb *g = ctx;
    struct gdb_vcpu *v = &g->cpu[cpu->index];
    if (!hits) {
        if (!v->stepping)
            return VCPU_EXIT_PASS;
        int at = points_reached(g, cpu), rep;
        /* The iterations of a REP the monitor ran end at a boundary of their own. */
        while (at < 0 && (rep = hide_rep(g, cpu)) != 0) {
            if (rep < 0) {
                vm_request_end(cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
                return VCPU_EXIT_DONE;
            }
            at = points_reached(g, cpu);
        }
        if (at >= 0) {
            v->why = WHY_POINT;
            v->point = at;
        } else if (v->act == STUB_STEP && v->why == WHY_NONE) {
            v->why = WHY_STEP;
        } else if (hide_step(g, cpu) < 0) {
            vm_request_end(cpu->vm, VM_END_MONITOR, VBTS_EXIT_MONITOR, "%s", error_last());
        }
        return VCPU_EXIT_DONE;
    }
    v->why = WHY_POINT;
    v->point = v->dr_point[__builtin_ctz(hits)];
    return VCPU_EXIT_DONE;
}

static void on_record(void *ctx, int cpu, uint64_t from, uint64_t to)
{
    struct gdb *g = ctx;
    btrace_add(&g->cpu[cpu].bt, from, to);
}

/* --- the target's operations, on the server thread while the vCPUs stand ---------- */

static int op_regs_get(void *ctx, int cpu, struct regs_state *s)
{
    struct gdb *g = ctx;
    int fd = g->vm->vcpus[cpu].fd;
    if (ioctl(fd, KVM_GET_REGS, &s->regs) < 0 || ioctl(fd, KVM_GET_SREGS, &s->sregs) < 0 ||
        fpu_get(&g->vm->vcpus[cpu], &s->fpu) < 0)
        return -1;
    return 0;
}

static int op_regs_set(void *ctx, int cpu, const struct regs_state *s, unsigned changed)
{
    struct gdb *g = ctx;
    int fd = g->vm->vcpus[cpu].fd;
    if (((changed & REGS_CHANGED_REGS) && ioctl(fd, KVM_SET_REGS, &s->regs) < 0) ||
        ((changed & REGS_CHANGED_SREGS) && ioctl(fd, KVM_SET_SREGS, &s->sregs) < 0) ||
        ((changed & REGS_CHANGED_FPU) && fpu_set(&g->vm->vcpus[cpu], &s->fpu) < 0))
        return -1;
    pthread_mutex_lock(&g->lock);
    g->cpu[cpu].dirty = true;
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static bool paging_of(struct gdb *g, int cpu, struct gmem_paging *pg)
{
    struct kvm_sregs s;
    if (ioctl(g->vm->vcpus[cpu].fd, KVM_GET_SREGS, &s) < 0)
        return false;
    cpu_paging(&s, pg);
    return true;
}

/* gdb's addresses are linear ones (flat segments), read through the vCPU's page tables. */
size_t target_mem_read(struct gdb *g, int cpu, uint64_t addr, void *buf, size_t len)
{
    struct gmem_paging pg;
    if (!paging_of(g, cpu, &pg))
        return 0;
    size_t done = 0;
    while (done < len) {
        uint64_t at = addr + done;
        size_t n = 4096 - (at & 4095);
        if (n > len - done)
            n = len - done;
        if (at < addr || gmem_read_linear(&g->vm->mem, &pg, at, (uint8_t *)buf + done, n) != GMEM_OK)
            break;
        done += n;
    }
    return done;
}

static size_t op_mem_read(void *ctx, int cpu, uint64_t addr, void *buf, size_t len)
{
    return target_mem_read(ctx, cpu, addr, buf, len);
}

static size_t op_mem_write_raw(struct gdb *g, int cpu, uint64_t addr, const void *buf, size_t len)
{
    struct gmem_paging pg;
    uint64_t fault = addr;
    if (!paging_of(g, cpu, &pg) || addr + len < addr)
        return 0;
    enum gmem_xlate r = gmem_write_linear(&g->vm->mem, &pg, addr, buf, len, &fault);
    return r == GMEM_OK ? len : (size_t)(fault - addr);
}

static void mark_dirty(struct gdb *g);

static size_t op_mem_write(void *ctx, int cpu, uint64_t addr, const void *buf, size_t len)
{
    struct gdb *g = ctx;
    size_t n = op_mem_write_raw(g, cpu, addr, buf, len);
    /* The engine may have foreseen an instruction gdb just rewrote. */
    mark_dirty(g);
    return n;
}

static void mark_dirty(struct gdb *g)
{
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->vm->ncpus; i++)
        g->cpu[i].dirty = true;
    pthread_mutex_unlock(&g->lock);
}

static int op_resume(void *ctx, const enum stub_action *act, const char **why)
{
    struct gdb *g = ctx;
    for (int i = 0; i < g->vm->ncpus; i++) {
        struct kvm_sregs s;
        if (host_steps_user() || (act[i] != STUB_STEP && !(act[i] == STUB_CONTINUE && points_any_by_step(g))))
            continue;
        if (ioctl(g->vm->vcpus[i].fd, KVM_GET_SREGS, &s) == 0 && cpu_cpl(&s) == 3) {
            *why = "cannot single-step CPL3 code on this host (kvm_pvm steps kernel mode only; "
                   "a watchpoint there is checked by stepping)";
            return -1;
        }
    }
    if (!g->dr_fire && hide_arm(g) < 0) {
        *why = error_last();
        return -1;
    }
    pthread_mutex_lock(&g->lock);
    /* Points by stepping: a write watchpoint compares with the bytes as gdb leaves them. */
    for (int i = 0; i < g->npoints; i++)
        if (g->points[i].type == STUB_WRITE_WATCH)
            target_mem_read(g, 0, g->points[i].addr, g->points[i].old, g->points[i].len);
    for (int i = 0; i < g->vm->ncpus; i++)
        g->cpu[i].act = act[i];
    g->have_stop = false;
    g->held = false;
    atomic_store(&g->stop_req, false);
    g->gen++;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static void op_interrupt(void *ctx)
{
    struct gdb *g = ctx;
    pthread_mutex_lock(&g->lock);
    target_request_stop(g);
    pthread_mutex_unlock(&g->lock);
}

static void op_kill(void *ctx)
{
    struct gdb *g = ctx;
    vm_request_end(g->vm, VM_END_SIGNAL, 128 + SIGKILL, "killed by gdb");
}

void target_release(struct gdb *g, bool resume)
{
    hide_disarm(g);
    pthread_mutex_lock(&g->lock);
    g->npoints = 0;
    for (int i = 0; i < g->vm->ncpus; i++) {
        g->cpu[i].act = STUB_CONTINUE;
        g->cpu[i].want_record = false;
        btrace_disable(&g->cpu[i].bt);
    }
    if (resume) {
        g->have_stop = false;
        g->held = false;
        atomic_store(&g->stop_req, false);
        g->gen++;
        pthread_cond_broadcast(&g->cond);
    }
    pthread_mutex_unlock(&g->lock);
}

static bool op_alive(void *ctx, int cpu)
{
    struct gdb *g = ctx;
    return cpu >= 0 && cpu < g->vm->ncpus && !g->cpu[cpu].ended;
}

static uint64_t pc_of(struct gdb *g, int cpu)
{
    struct kvm_regs r;
    struct kvm_sregs s;
    int fd = g->vm->vcpus[cpu].fd;
    if (ioctl(fd, KVM_GET_REGS, &r) < 0 || ioctl(fd, KVM_GET_SREGS, &s) < 0)
        return 0;
    return cpu_linear_ip(&r, &s);
}

static int op_btrace_on(void *ctx, int cpu, uint64_t size, const char **why)
{
    struct gdb *g = ctx;
    struct gdb_vcpu *v = &g->cpu[cpu];
    struct kvm_sregs s;
    if (!g->tr) {
        *why = "no trace engine.";
        return -1;
    }
    if (v->bt.on) {
        *why = "Btrace already enabled.";
        return -1;
    }
    if (!host_steps_user() && ioctl(g->vm->vcpus[cpu].fd, KVM_GET_SREGS, &s) == 0 &&
        cpu_cpl(&s) == 3) {
        *why = "cannot record CPL3 code on this host (kvm_pvm steps kernel mode only).";
        return -1;
    }
    if (btrace_enable(&v->bt, size, pc_of(g, cpu)) < 0) {
        *why = "out of memory.";
        return -1;
    }
    pthread_mutex_lock(&g->lock);
    v->want_record = true;
    pthread_mutex_unlock(&g->lock);
    return 0;
}

static int op_btrace_off(void *ctx, int cpu, const char **why)
{
    struct gdb *g = ctx;
    struct gdb_vcpu *v = &g->cpu[cpu];
    if (!v->bt.on) {
        *why = "Branch tracing not enabled.";
        return -1;
    }
    pthread_mutex_lock(&g->lock);
    v->want_record = false;
    pthread_mutex_unlock(&g->lock);
    btrace_disable(&v->bt);
    return 0;
}

static char *op_btrace_read(void *ctx, int cpu, enum btrace_read how, size_t *len, const char **why)
{
    struct gdb *g = ctx;
    struct gdb_vcpu *v = &g->cpu[cpu];
    if (!v->bt.on) {
        *why = "Branch tracing not enabled.";
        return NULL;
    }
    return btrace_xml(&v->bt, how, pc_of(g, cpu), len, why);
}

static char *op_btrace_conf(void *ctx, int cpu, size_t *len)
{
    struct gdb *g = ctx;
    return btrace_conf_xml(&g->cpu[cpu].bt, len);
}

static void op_send(void *ctx, const char *buf, size_t len)
{
    struct gdb *g = ctx;
    while (len && g->cfd >= 0) {
        ssize_t n = send(g->cfd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = { g->cfd, POLLOUT, 0 };
            poll(&p, 1, 1000);
            continue;
        }
        if (n <= 0)
            return;     /* the connection is gone: the reader sees it */
        buf += n;
        len -= (size_t)n;
    }
}

static void op_detach(void *ctx)
{
    target_release(ctx, true);
}

const struct stub_ops target_ops = {
    .regs_get = op_regs_get, .regs_set = op_regs_set, .mem_read = op_mem_read,
    .mem_write = op_mem_write, .point = points_set, .resume = op_resume,
    .interrupt = op_interrupt, .kill = op_kill, .detach = op_detach, .alive = op_alive,
    .btrace_on = op_btrace_on, .btrace_off = op_btrace_off, .btrace_read = op_btrace_read,
    .btrace_conf = op_btrace_conf, .send = op_send,
};

int target_step_for_points(struct gdb *g, struct vcpu *cpu)
{
    struct debug_want w;
    pthread_mutex_lock(&g->lock);
    points_want(g, &g->cpu[cpu->index], &w);
    pthread_mutex_unlock(&g->lock);
    if (debug_set(cpu, DEBUG_GDB, &w) < 0)
        return -1;
    g->cpu[cpu->index].stepping = w.step;
    return 0;
}

int target_install(struct gdb *g)
{
    if (vcpu_on_exit(g->vm, KVM_EXIT_INTERNAL_ERROR, hide_on_fetch, g) < 0 ||
        vcpu_on_hook(g->vm, VCPU_HOOK_PRE_RUN, on_pre_run, g) < 0 ||
        vcpu_on_hook(g->vm, VCPU_HOOK_THREAD_END, on_thread_end, g) < 0 ||
        debug_on_exit(g->vm, DEBUG_GDB, on_debug, g) < 0)
        return -1;
    return 0;
}

void target_set_trace(struct gdb *g, struct trace *tr)
{
    g->tr = tr;
    trace_on_record(tr, on_record, g);
}
