/* SPDX-License-Identifier: MIT */
#include "x86/event.h"

#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/vm.h"
#include "x86/arch.h"

int event_observe(struct vm *vm, event_observer_fn fn, void *ctx)
{
    struct arch_vm *a = arch_vm(vm);
    if (a->nobservers == ARCH_MAX_LISTENERS)
        return error_fail("too many event observers");
    a->observer[a->nobservers].fn = fn;
    a->observer[a->nobservers].ctx = ctx;
    a->nobservers++;
    return 0;
}

static int inject_exception(struct vcpu *cpu, const struct event *ev)
{
    struct kvm_vcpu_events e;
    if (ev->vector == 14) {
        struct kvm_sregs sregs;
        if (ioctl(cpu->fd, KVM_GET_SREGS, &sregs) < 0)
            return error_fail_errno("KVM_GET_SREGS");
        sregs.cr2 = ev->cr2;
        if (ioctl(cpu->fd, KVM_SET_SREGS, &sregs) < 0)
            return error_fail_errno("KVM_SET_SREGS");
    }
    if (ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_GET_VCPU_EVENTS");
    e.exception.injected = 1;
    e.exception.nr = ev->vector;
    e.exception.has_error_code = ev->has_error;
    e.exception.error_code = ev->error;
    e.flags = 0;
    if (ioctl(cpu->fd, KVM_SET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_SET_VCPU_EVENTS");
    return 0;
}

/*
 * A software interrupt completed for the CPU: RIP moves past the
 * instruction, then the vector is delivered, so the handler sees the
 * return address after it.
 */
static int inject_soft(struct vcpu *cpu, const struct event *ev)
{
    struct kvm_vcpu_events e;
    struct kvm_regs regs;
    if (ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_GET_VCPU_EVENTS");
    /* Something is already being delivered: do not stack another event on it. */
    if (e.exception.injected || e.interrupt.injected || e.nmi.injected)
        return error_fail("an event is already being delivered");
    if (ioctl(cpu->fd, KVM_GET_REGS, &regs) < 0)
        return error_fail_errno("KVM_GET_REGS");
    regs.rip += ev->insn_len;
    if (ioctl(cpu->fd, KVM_SET_REGS, &regs) < 0)
        return error_fail_errno("KVM_SET_REGS");
    if (ev->vector < 32) {
        e.exception.injected = 1;
        e.exception.nr = ev->vector;
        e.exception.has_error_code = 0;
        e.exception.error_code = 0;
    } else {
        e.interrupt.injected = 1;
        e.interrupt.nr = ev->vector;
        e.interrupt.soft = 1;
    }
    e.flags = 0;
    if (ioctl(cpu->fd, KVM_SET_VCPU_EVENTS, &e) < 0) {
        int r = error_fail_errno("KVM_SET_VCPU_EVENTS");
        regs.rip -= ev->insn_len;
        ioctl(cpu->fd, KVM_SET_REGS, &regs);
        return r;
    }
    return 0;
}

int event_raise(struct vcpu *cpu, const struct event *ev)
{
    int r = 0;
    switch (ev->kind) {
    case EVENT_EXCEPTION:
        r = inject_exception(cpu, ev);
        break;
    case EVENT_SOFT_INT:
        r = inject_soft(cpu, ev);
        break;
    case EVENT_INTERRUPT: {
        struct kvm_interrupt irq = { .irq = ev->vector };
        if (ioctl(cpu->fd, KVM_INTERRUPT, &irq) < 0)
            r = error_fail_errno("KVM_INTERRUPT %u", ev->vector);
        break;
    }
    case EVENT_NMI:
        if (ioctl(cpu->fd, KVM_NMI) < 0)
            r = error_fail_errno("KVM_NMI");
        break;
    }
    if (r < 0)
        return -1;
    const struct arch_vm *a = arch_vm(cpu->vm);
    for (int i = 0; i < a->nobservers; i++)
        a->observer[i].fn(cpu, ev, a->observer[i].ctx);
    return 0;
}
