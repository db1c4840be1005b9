/* SPDX-License-Identifier: MIT */
#include "x86/debug.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/kvm.h"
#include "core/vm.h"
#include "x86/arch.h"

static const char *const client_name[DEBUG_NCLIENTS] = { "trace", "host-compat", "gdb" };

/* A client whose wishes stand: it does not yield, or nobody else steps. */
static bool active(const struct debug_state *d, int c)
{
    if (!d->want[c].unless_stepped)
        return true;
    for (int o = 0; o < DEBUG_NCLIENTS; o++)
        if (o != c && (d->want[o].step || d->want[o].exclusive) && !d->want[o].unless_stepped)
            return false;
    return true;
}

bool debug_merge(struct debug_state *d, struct kvm_guest_debug *out)
{
    struct kvm_guest_debug dbg = { 0 };
    bool step = false;
    int slot = 0;
    for (int s = 0; s < DEBUG_MAX_BP; s++)
        d->slot_owner[s] = -1;
    for (int c = 0; c < DEBUG_NCLIENTS; c++) {
        const struct debug_want *w = &d->want[c];
        if (!active(d, c))
            continue;
        step |= w->step;
        for (int i = 0; i < w->nbp && slot < DEBUG_MAX_BP; i++, slot++) {
            d->slot_owner[slot] = c;
            d->slot_index[slot] = i;
            dbg.arch.debugreg[slot] = w->bp[i];
            /* The local enable bit of the slot, its R/W and LEN fields. */
            dbg.arch.debugreg[7] |= 1ull << (2 * slot) |
                                    (uint64_t)(w->bp_rw[i] & 3) << (16 + 4 * slot) |
                                    (uint64_t)(w->bp_len[i] & 3) << (18 + 4 * slot);
        }
    }
    if (step || slot)
        dbg.control = KVM_GUESTDBG_ENABLE;
    if (step)
        dbg.control |= KVM_GUESTDBG_SINGLESTEP;
    for (int c = 0; c < DEBUG_NCLIENTS; c++)
        if (active(d, c) && d->want[c].block_irq)
            dbg.control |= KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_BLOCKIRQ;
    if (slot || (step && d->hide_guest))
        dbg.control |= KVM_GUESTDBG_USE_HW_BP;
    *out = dbg;
    return step;
}

static int apply(struct vcpu *cpu)
{
    struct debug_state *d = &arch_vcpu(cpu)->dbg;
    struct kvm_guest_debug dbg;
    bool step = debug_merge(d, &dbg);
    if (ioctl(cpu->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0) {
        int n = 0;
        for (int s = 0; s < DEBUG_MAX_BP; s++)
            n += d->slot_owner[s] >= 0;
        return error_fail_errno("KVM_SET_GUEST_DEBUG (%s, %d breakpoint%s)",
                                step ? "single-step" : "no step", n, n == 1 ? "" : "s");
    }
    bool was = d->stepping, was_excl = d->exclusive;
    d->stepping = step;
    d->applied = true;
    d->control = dbg.control;
    d->exclusive = false;
    for (int c = 0; c < DEBUG_NCLIENTS; c++)
        d->exclusive |= active(d, c) && d->want[c].exclusive;
    /* Runs under an exclusive client's breakpoints end like its steps (trace/leap.c). */
    if (!step && (was || (was_excl && !d->exclusive))) {
        const struct arch_vm *a = arch_vm(cpu->vm);
        for (int i = 0; i < a->nstep_off; i++)
            a->step_off[i].fn(cpu, a->step_off[i].ctx);
    }
    return 0;
}

static bool same_want(const struct debug_want *a, const struct debug_want *b)
{
    if (a->step != b->step || a->block_irq != b->block_irq || a->unless_stepped != b->unless_stepped ||
        a->exclusive != b->exclusive || a->nbp != b->nbp)
        return false;
    for (int i = 0; i < a->nbp; i++)
        if (a->bp[i] != b->bp[i] || a->bp_rw[i] != b->bp_rw[i] || a->bp_len[i] != b->bp_len[i])
            return false;
    return true;
}

int debug_set(struct vcpu *cpu, enum debug_client who, const struct debug_want *w)
{
    struct debug_state *d = &arch_vcpu(cpu)->dbg;
    struct debug_want n = *w;
    if (n.nbp > DEBUG_MAX_BP)
        n.nbp = DEBUG_MAX_BP;
    /* A stretch that runs again wants what KVM has: no ioctl (trace/leap.c). */
    if (d->applied && same_want(&d->want[who], &n))
        return 0;
    d->want[who] = n;
    return apply(cpu);
}

int debug_slots_left(const struct vcpu *cpu, enum debug_client who)
{
    const struct debug_state *d = &arch_vcpu(cpu)->dbg;
    int used = 0;
    for (int c = 0; c < (int)who; c++)
        if (active(d, c))
            used += d->want[c].nbp;
    return used >= DEBUG_MAX_BP ? 0 : DEBUG_MAX_BP - used;
}

int debug_bps_of_others(const struct vcpu *cpu, enum debug_client who)
{
    const struct debug_state *d = &arch_vcpu(cpu)->dbg;
    int n = 0;
    for (int c = 0; c < DEBUG_NCLIENTS; c++)
        if (c != (int)who && !d->want[c].unless_stepped)
            n += d->want[c].step ? DEBUG_MAX_BP : d->want[c].nbp;
    return n > DEBUG_MAX_BP ? DEBUG_MAX_BP : n;
}

bool debug_others_break_at(const struct vcpu *cpu, enum debug_client who, uint64_t lin)
{
    const struct debug_state *d = &arch_vcpu(cpu)->dbg;
    for (int c = 0; c < DEBUG_NCLIENTS; c++) {
        const struct debug_want *w = &d->want[c];
        if (c == (int)who || w->unless_stepped)
            continue;
        for (int i = 0; i < w->nbp; i++)
            if (w->bp_rw[i] != DEBUG_RW_EXEC || w->bp[i] == lin)
                return true;
    }
    return false;
}

bool debug_stepping(const struct vcpu *cpu)
{
    return arch_vcpu(cpu)->dbg.stepping;
}

int debug_rearm(struct vcpu *cpu)
{
    return apply(cpu);
}

int debug_hide_guest(struct vcpu *cpu, bool on)
{
    struct debug_state *d = &arch_vcpu(cpu)->dbg;
    if (d->hide_guest == on)
        return 0;
    d->hide_guest = on;
    return d->applied ? apply(cpu) : 0;
}

int debug_let_irq(struct vcpu *cpu)
{
    struct kvm_guest_debug dbg;
    debug_merge(&arch_vcpu(cpu)->dbg, &dbg);
    dbg.control &= ~(uint32_t)KVM_GUESTDBG_BLOCKIRQ;
    if (ioctl(cpu->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0)
        return error_fail_errno("KVM_SET_GUEST_DEBUG (interrupts let in)");
    arch_vcpu(cpu)->dbg.control = dbg.control;
    return 0;
}

bool debug_can_block_irq(const struct vm *vm)
{
    return (kvm_extension(vm, KVM_CAP_SET_GUEST_DEBUG2) & KVM_GUESTDBG_BLOCKIRQ) != 0;
}

static bool steps(struct vcpu *cpu)
{
    const struct arch_vm *a = arch_vm(cpu->vm);
    const struct debug_state *d = &arch_vcpu(cpu)->dbg;
    bool done = false;
    for (int c = 0; c < DEBUG_NCLIENTS; c++)
        if (d->want[c].step && active(d, c) && a->debug_exit[c].fn)
            done |= a->debug_exit[c].fn(cpu, 0, a->debug_exit[c].ctx) == VCPU_EXIT_DONE;
    return done;
}

/*
 * A step goes to every stepping client, in client order (the trace engine
 * records the instruction before a debugger stops on it); then the client
 * whose breakpoint fired gets the exit.  A data breakpoint traps after its
 * instruction, so while stepping one exit is both.
 */
static enum vcpu_verdict on_debug_exit(struct vcpu *cpu, void *ctx)
{
    (void)ctx;
    const struct arch_vm *a = arch_vm(cpu->vm);
    const struct debug_state *d = &arch_vcpu(cpu)->dbg;
    uint64_t dr6 = cpu->run->debug.arch.dr6;
    unsigned hits[DEBUG_NCLIENTS] = { 0 };
    bool any = false, done = false;
    for (int s = 0; s < DEBUG_MAX_BP; s++)
        if ((dr6 & (1u << s)) && d->slot_owner[s] >= 0) {
            hits[d->slot_owner[s]] |= 1u << d->slot_index[s];
            any = true;
        }
    /*
     * DR6 keeps a single-step's BS bit until something clears it (kvm_amd
     * hands the VMCB's DR6 on as it is): it means a step only while one
     * was armed.
     */
    bool step = !any || ((dr6 & DEBUG_DR6_BS) && d->stepping);
    if (step)
        done = steps(cpu);
    for (int c = 0; c < DEBUG_NCLIENTS; c++)
        if (hits[c] && a->debug_exit[c].fn)
            done |= a->debug_exit[c].fn(cpu, hits[c], a->debug_exit[c].ctx) == VCPU_EXIT_DONE;
    /* A breakpoint nobody owns any more: the exit ended a step all the same. */
    if (!done && !step)
        done = steps(cpu);
    return done ? VCPU_EXIT_DONE : VCPU_EXIT_PASS;
}

int debug_install(struct vm *vm)
{
    return vcpu_on_exit(vm, KVM_EXIT_DEBUG, on_debug_exit, NULL);
}

int debug_on_exit(struct vm *vm, enum debug_client who, debug_exit_fn fn, void *ctx)
{
    struct arch_vm *a = arch_vm(vm);
    if (a->debug_exit[who].fn)
        return error_fail("debug exits of %s claimed twice", client_name[who]);
    a->debug_exit[who].fn = fn;
    a->debug_exit[who].ctx = ctx;
    return 0;
}

int debug_on_step_off(struct vm *vm, debug_step_off_fn fn, void *ctx)
{
    struct arch_vm *a = arch_vm(vm);
    if (a->nstep_off == ARCH_MAX_LISTENERS)
        return error_fail("too many step-off listeners");
    a->step_off[a->nstep_off].fn = fn;
    a->step_off[a->nstep_off].ctx = ctx;
    a->nstep_off++;
    return 0;
}
