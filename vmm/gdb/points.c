/* SPDX-License-Identifier: MIT */
#include "gdb/points.h"

#include <string.h>

#include "core/vm.h"
#include "x86/cpu.h"

static const uint8_t dr7_len[9] = { 0, 0, 1, 0, 3, 0, 0, 0, 2 };

static bool is_exec(const struct point *p)
{
    return p->type == STUB_SW_BREAK || p->type == STUB_HW_BREAK;
}

/*
 * A point the host cannot fire: the vCPU steps and each step is checked.
 * QEMU TCG's nested SVM never arms the guest's DR7; kvm_pvm emulates
 * kernel code and fires execution breakpoints there, not data ones.
 */
bool points_by_step(const struct gdb *g, const struct point *p)
{
    if (is_exec(p))
        return !g->dr_fire;
    return !g->dr_fire || g->pvm;
}

bool points_any_by_step(const struct gdb *g)
{
    for (int i = 0; i < g->npoints; i++)
        if (points_by_step(g, &g->points[i]))
            return true;
    return false;
}

/* What gdb wants of KVM's debug state for this vCPU now (under the lock). */
void points_want(const struct gdb *g, struct gdb_vcpu *v, struct debug_want *w)
{
    memset(w, 0, sizeof(*w));
    w->step = v->act == STUB_STEP ||
              (v->act == STUB_CONTINUE && points_any_by_step(g) && (!g->hide_on || v->passing));
    for (int i = 0; i < g->npoints; i++) {
        const struct point *p = &g->points[i];
        if (points_by_step(g, p) || w->nbp == DEBUG_MAX_BP)
            continue;
        int k = w->nbp++;
        v->dr_point[k] = (int8_t)i;
        w->bp[k] = p->addr;
        w->bp_rw[k] = p->type == STUB_WRITE_WATCH ? DEBUG_RW_WRITE
                      : p->type == STUB_ACCESS_WATCH ? DEBUG_RW_ACCESS : DEBUG_RW_EXEC;
        w->bp_len[k] = w->bp_rw[k] == DEBUG_RW_EXEC ? 0 : dr7_len[p->len];
    }
}

/* Points by stepping: the vCPU, after a step, at one of gdb's (under no lock: they stand still while it runs). */
int points_reached(struct gdb *g, struct vcpu *cpu)
{
    const struct kvm_run *run = cpu->run;
    uint64_t rip = cpu_linear_ip(&run->s.regs.regs, &run->s.regs.sregs);
    for (int i = 0; i < g->npoints; i++) {
        struct point *p = &g->points[i];
        if (!points_by_step(g, p))
            continue;
        if (is_exec(p) || p->type == STUB_HW_BREAK) {
            if (p->addr == rip)
                return i;
        } else {
            uint8_t now[8];
            if (target_mem_read(g, cpu->index, p->addr, now, p->len) == p->len &&
                memcmp(now, p->old, p->len)) {
                memcpy(p->old, now, p->len);
                return i;
            }
        }
    }
    return -1;
}

static int find_point(const struct gdb *g, enum stub_point type, uint64_t addr, unsigned len)
{
    for (int i = 0; i < g->npoints; i++)
        if (g->points[i].type == type && g->points[i].addr == addr && g->points[i].len == len)
            return i;
    return -1;
}

/*
 * Every kind is a debug register: Z0 too, since int3 at CPL0 is what
 * kvm_pvm cannot run, and a breakpoint that leaves the guest's code alone
 * keeps the trace and the guest's own reads of its code exact.
 */
int points_set(void *ctx, bool insert, enum stub_point type, uint64_t addr, uint64_t kind,
               const char **why)
{
    struct gdb *g = ctx;
    unsigned len = 0;
    if (type == STUB_READ_WATCH)
        return 1;       /* x86 has no read-only data breakpoint: gdb falls back to awatch */
    uint64_t top = addr >> 47;
    if (top != 0 && top != 0x1ffff) {
        *why = "not a canonical address";
        return -1;
    }
    if (type == STUB_WRITE_WATCH || type == STUB_ACCESS_WATCH) {
        if (kind != 1 && kind != 2 && kind != 4 && kind != 8) {
            *why = "a watchpoint covers 1, 2, 4 or 8 bytes";
            return -1;
        }
        len = (unsigned)kind;
        if (addr % len) {
            *why = "a watchpoint's address must be aligned to its length";
            return -1;
        }
    }
    if (type == STUB_ACCESS_WATCH && (!g->dr_fire || g->pvm)) {
        *why = "this host fires no data breakpoints in kernel code, and reads cannot be watched by stepping";
        return -1;
    }
    pthread_mutex_lock(&g->lock);
    int at = find_point(g, type, addr, len), r = 0;
    if (!insert) {
        if (at >= 0)
            g->points[at] = g->points[--g->npoints];
    } else if (at < 0) {
        int left = DEBUG_MAX_BP;
        int in_dr = 0;
        struct point np = { .type = type, .addr = addr, .len = len };
        bool dr = !points_by_step(g, &np);
        for (int i = 0; i < g->npoints; i++)
            in_dr += !points_by_step(g, &g->points[i]);
        for (int i = 0; dr && i < g->vm->ncpus; i++) {
            int l = debug_slots_left(&g->vm->vcpus[i], DEBUG_GDB);
            left = l < left ? l : left;
        }
        if ((dr && in_dr >= left) || g->npoints == DEBUG_MAX_BP) {
            *why = "no debug register left (x86 has 4; vbts may hold some itself)";
            r = -1;
        } else {
            g->points[g->npoints++] = (struct point){ .type = type, .addr = addr, .len = len };
        }
    }
    pthread_mutex_unlock(&g->lock);
    return r;
}

