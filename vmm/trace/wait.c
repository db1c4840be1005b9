/* SPDX-License-Identifier: MIT */
#include "trace/wait.h"

#include <sys/ioctl.h>
#include <time.h>
#include <linux/kvm.h>

#include "core/vcpu.h"
#include "core/vm.h"
#include "trace/step.h"
#include "trace/window.h"
#include "x86/cpu.h"

#define POLL_MIN_NS (100 * 1000)
#define POLL_MAX_NS (10 * 1000 * 1000)

void wait_backoff(long *ns, long max_ns)
{
    struct timespec ts = { 0, *ns };
    nanosleep(&ts, NULL);
    if (*ns < max_ns)
        *ns *= 2;
}

/*
 * An AP waits for INIT and SIPI (KVM_MP_STATE_UNINITIALIZED, then
 * INIT_RECEIVED), and KVM, taking the SIPI inside KVM_RUN, sets its CS:IP
 * and runs it on at once: a step armed where it stood would end past the
 * first instruction of an entry the engine never saw.  KVM_RUN returns
 * before any guest code while the AP is UNINITIALIZED (EAGAIN once INIT,
 * or INIT and SIPI, came); in INIT_RECEIVED the vCPU is kept out of
 * KVM_RUN and KVM_GET_MP_STATE (which takes a pending SIPI) asked until it
 * has started.  Then the engine predicts from the SIPI's entry.  (An INIT
 * that a running vCPU gets is not seen: its step ends elsewhere than
 * predicted, and the trace stops there.)
 */
int wait_start(struct trace_vcpu *t)
{
    struct kvm_mp_state mp;
    long ns = POLL_MIN_NS;
    for (;;) {
        if (ioctl(t->cpu->fd, KVM_GET_MP_STATE, &mp) < 0)
            return error_fail_errno("KVM_GET_MP_STATE");
        if (mp.mp_state == KVM_MP_STATE_UNINITIALIZED) {
            t->sipi_wait = true;
            return 0;
        }
        if (mp.mp_state != KVM_MP_STATE_INIT_RECEIVED || vm_ending(t->cpu->vm))
            break;
        t->sipi_wait = true;
        wait_backoff(&ns, POLL_MAX_NS);
    }
    if (mp.mp_state == KVM_MP_STATE_INIT_RECEIVED)
        return 0;       /* the run ends: KVM_RUN returns at once */
    t->started = true;
    return t->sipi_wait ? window_restart(t) : 0;
}

/*
 * A HLT halts the CPU until an interrupt (with IF set), an NMI, an SMI or
 * an INIT.  Single-stepped, kvm_pvm leaves the vCPU runnable and runs the
 * next instruction at once (an AP's `cli; hlt; jmp` looped in its trace,
 * 643 times, while untraced it stays halted); stock KVM leaves it halted.
 * Either way it is halted here and waits out of KVM_RUN: with IF set, a
 * probe (KVM_RUN that ends before the guest runs) lets KVM find an event
 * to wake it; with IF clear, KVM_GET_VCPU_EVENTS shows a pending NMI or
 * SMI.  An INIT makes it wait for its SIPI (wait_start); the window's
 * closing lets it run on untraced.
 */
int wait_halted(struct trace_vcpu *t)
{
    bool irq = t->cpu->run->s.regs.regs.rflags & RFLAGS_IF;
    long ns = POLL_MIN_NS;
    t->halted_off = false;
    for (bool first = true;; first = false) {
        struct kvm_mp_state mp;
        struct kvm_vcpu_events ev;
        if (!first && irq && vcpu_probe(t->cpu) < 0)
            return -1;
        if (ioctl(t->cpu->fd, KVM_GET_MP_STATE, &mp) < 0)
            return error_fail_errno("KVM_GET_MP_STATE");
        if (first && mp.mp_state == KVM_MP_STATE_RUNNABLE) {
            mp.mp_state = KVM_MP_STATE_HALTED;
            if (ioctl(t->cpu->fd, KVM_SET_MP_STATE, &mp) < 0)
                return error_fail_errno("KVM_SET_MP_STATE");
        } else if (mp.mp_state == KVM_MP_STATE_RUNNABLE) {
            return 0;       /* woken: the next step takes what woke it */
        } else if (mp.mp_state != KVM_MP_STATE_HALTED) {
            t->started = false;     /* INIT, and perhaps SIPI, came: predicted afresh */
            t->sipi_wait = true;
            return 0;
        }
        if (!irq) {
            if (ioctl(t->cpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
                return error_fail_errno("KVM_GET_VCPU_EVENTS");
            if (ev.nmi.pending || ev.smi.pending)
                return 0;
        }
        if (vm_ending(t->cpu->vm))
            return 0;
        if (window_poll(t) < 0)
            return -1;
        if (!t->stepping)
            return 0;
        wait_backoff(&ns, POLL_MAX_NS);
    }
}

/*
 * HLT is the monitor's on kvm_pvm (pvm.c).  Single-stepped, kvm_pvm halts nothing (an
 * AP's `hlt; jmp` idle loop left a record each turn), and a HLT an
 * interrupt ended within its step left the vCPU to halt later, in the
 * handler with interrupts off, for good (kvm-unit-tests' smptest: the AP
 * stood in its IPI handler and the BSP waited for it).  The monitor moves
 * RIP past it, which ends its step (no record: it is no branch), and the
 * vCPU waits halted for what wakes it (wait_halted); the next step takes that
 * event from the instruction after the HLT, as the CPU does.
 */
int wait_hlt(struct trace_vcpu *t)
{
    struct kvm_regs *r = &t->cpu->run->s.regs.regs;
    struct kvm_vcpu_events ev;
    r->rip += t->pred.len;
    if (ioctl(t->cpu->fd, KVM_SET_REGS, r) < 0)
        return error_fail_errno("KVM_SET_REGS");
    /* The HLT ran: an STI's or MOV SS's shadow over it ends (`sti; hlt` takes its interrupt). */
    if (ioctl(t->cpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
        return error_fail_errno("KVM_GET_VCPU_EVENTS");
    if (ev.interrupt.shadow) {
        ev.interrupt.shadow = 0;
        ev.flags = KVM_VCPUEVENT_VALID_SHADOW;
        if (ioctl(t->cpu->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
            return error_fail_errno("KVM_SET_VCPU_EVENTS");
    }
    t->steps++;
    if (step_complete(t) < 0)
        return -1;
    if (t->stepping && wait_halted(t) < 0)
        return -1;
    return t->stepping && !t->started ? wait_start(t) : 0;
}
