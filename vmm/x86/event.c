/* SPDX-License-Identifier: MIT */
#include "x86/event.h"

#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "core/error.h"
#include "core/vm.h"
#include "x86/arch.h"
#include "x86/cpu.h"
#include "x86/deliver.h"
#include "x86/host.h"

int event_iret_done(struct vcpu *cpu)
{
    struct kvm_vcpu_events e;
    if (ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_GET_VCPU_EVENTS");
    if (!e.nmi.masked)
        return 0;
    e.nmi.masked = 0;
    e.flags &= KVM_VCPUEVENT_VALID_SHADOW | KVM_VCPUEVENT_VALID_SMM;
    if (ioctl(cpu->fd, KVM_SET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_SET_VCPU_EVENTS");
    return 0;
}

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

void event_soft(struct vcpu *cpu, bool on)
{
    arch_vcpu(cpu)->soft_events = on;
}

bool event_is_soft(const struct vcpu *cpu)
{
    return arch_vcpu(cpu)->soft_events;
}

static int deliver_on(struct vcpu *cpu, const struct delivery *d, uint64_t *from, uint64_t *to,
                      unsigned *vector, bool nested)
{
    struct kvm_regs *r = &cpu->run->s.regs.regs;
    struct kvm_sregs *s = &cpu->run->s.regs.sregs;
    struct kvm_regs r0 = *r;
    struct kvm_sregs s0 = *s;
    const char *why;
    *from = cpu_linear_ip(r, s);
    int rc = (nested ? deliver_nested : deliver_event)(&cpu->vm->mem, r, s, d, to, vector, &why);
    if (rc < 0) {
        error_fail("vCPU %d cannot take vector %u at 0x%llx: %s", cpu->index, d->vector,
                   (unsigned long long)*from, why);
        return rc;
    }
    /* A set bit would make KVM inject that interrupt again. */
    memset(s->interrupt_bitmap, 0, sizeof(s->interrupt_bitmap));
    if (ioctl(cpu->fd, KVM_SET_SREGS, s) < 0 || ioctl(cpu->fd, KVM_SET_REGS, r) < 0) {
        int rc = error_fail_errno("delivering vector %u on vCPU %d: KVM_SET_SREGS/KVM_SET_REGS",
                                  *vector, cpu->index);
        *r = r0;
        *s = s0;
        return rc;
    }
    if (d->kind == DELIVER_NMI) {
        struct kvm_vcpu_events e;
        if (ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &e) < 0)
            return error_fail_errno("KVM_GET_VCPU_EVENTS");
        e.nmi.masked = 1;               /* blocked until the handler's IRET */
        e.flags &= KVM_VCPUEVENT_VALID_SHADOW | KVM_VCPUEVENT_VALID_SMM;
        if (ioctl(cpu->fd, KVM_SET_VCPU_EVENTS, &e) < 0)
            return error_fail_errno("KVM_SET_VCPU_EVENTS");
    }
    return 0;
}

int event_deliver(struct vcpu *cpu, const struct delivery *d, uint64_t *from, uint64_t *to,
                  unsigned *vector)
{
    return deliver_on(cpu, d, from, to, vector, false);
}

int event_deliver_nested(struct vcpu *cpu, const struct delivery *d, uint64_t *from, uint64_t *to,
                         unsigned *vector)
{
    return deliver_on(cpu, d, from, to, vector, true);
}

int event_syscall_msrs(struct vcpu *cpu, struct deliver_syscall_msrs *m)
{
    struct {
        struct kvm_msrs h;
        struct kvm_msr_entry e[4];
    } g = { .h.nmsrs = 4, .e = { { .index = MSR_STAR }, { .index = MSR_LSTAR },
                                 { .index = MSR_FMASK }, { .index = MSR_CSTAR } } };
    if (ioctl(cpu->fd, KVM_GET_MSRS, &g) != 4)
        return error_fail_errno("KVM_GET_MSRS (STAR, LSTAR, FMASK, CSTAR) on vCPU %d", cpu->index);
    *m = (struct deliver_syscall_msrs){ g.e[0].data, g.e[1].data, g.e[2].data, g.e[3].data, host_is_amd() };
    return 0;
}

int event_syscall(struct vcpu *cpu, uint8_t insn_len, uint64_t *to)
{
    struct deliver_syscall_msrs m;
    if (event_syscall_msrs(cpu, &m) < 0)
        return -1;
    struct kvm_regs *r = &cpu->run->s.regs.regs;
    struct kvm_sregs *s = &cpu->run->s.regs.sregs;
    struct kvm_regs r0 = *r;
    struct kvm_sregs s0 = *s;
    const char *why;
    uint64_t from = cpu_linear_ip(r, s);
    if (deliver_syscall(r, s, &m, insn_len, &why) < 0)
        return error_fail("vCPU %d: SYSCALL at 0x%llx: %s", cpu->index, (unsigned long long)from, why);
    if (ioctl(cpu->fd, KVM_SET_SREGS, s) < 0 || ioctl(cpu->fd, KVM_SET_REGS, r) < 0) {
        *r = r0;
        *s = s0;
        return error_fail_errno("SYSCALL on vCPU %d: KVM_SET_SREGS/KVM_SET_REGS", cpu->index);
    }
    *to = r->rip;
    return 0;
}

int event_take_pending(struct vcpu *cpu, struct delivery *d)
{
    struct kvm_vcpu_events e;
    if (ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_GET_VCPU_EVENTS");
    memset(d, 0, sizeof(*d));
    if (e.exception.injected || e.exception.pending) {
        *d = (struct delivery){ .kind = DELIVER_FAULT, .vector = e.exception.nr,
                                .has_error = e.exception.has_error_code,
                                .error = e.exception.error_code,
                                .cr2 = cpu->run->s.regs.sregs.cr2 };
        e.exception.injected = 0;
        e.exception.pending = 0;
    } else if (e.nmi.injected) {
        *d = (struct delivery){ .kind = DELIVER_NMI, .vector = 2 };
        e.nmi.injected = 0;
    } else if (e.interrupt.injected && !e.interrupt.soft) {
        *d = (struct delivery){ .kind = DELIVER_INTERRUPT, .vector = e.interrupt.nr };
        e.interrupt.injected = 0;
    } else {
        return 0;
    }
    e.flags &= KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SHADOW |
               KVM_VCPUEVENT_VALID_SMM;
    if (ioctl(cpu->fd, KVM_SET_VCPU_EVENTS, &e) < 0)
        return error_fail_errno("KVM_SET_VCPU_EVENTS");
    return 1;
}

/* What a monitor-raised event is, as the CPU delivers it. */
static void as_delivery(const struct event *ev, struct delivery *d)
{
    static const enum deliver_kind kind[] = {
        [EVENT_EXCEPTION] = DELIVER_FAULT, [EVENT_INTERRUPT] = DELIVER_INTERRUPT,
        [EVENT_NMI] = DELIVER_NMI, [EVENT_SOFT_INT] = DELIVER_SOFT,
    };
    *d = (struct delivery){ .kind = kind[ev->kind], .vector = ev->vector,
                            .has_error = ev->has_error, .error = ev->error, .cr2 = ev->cr2,
                            .insn_len = ev->insn_len };
    if (ev->kind == EVENT_SOFT_INT && (ev->vector == 3 || ev->vector == 4 || ev->vector == 1))
        d->kind = DELIVER_TRAP;
}

static void tell(struct vcpu *cpu, const struct event *ev)
{
    const struct arch_vm *a = arch_vm(cpu->vm);
    for (int i = 0; i < a->nobservers; i++)
        a->observer[i].fn(cpu, ev, a->observer[i].ctx);
}

void event_completed(struct vcpu *cpu)
{
    struct event ev = { .kind = EVENT_COMPLETED };
    tell(cpu, &ev);
}

int event_raise(struct vcpu *cpu, const struct event *ev)
{
    if (ev->kind == EVENT_COMPLETED)
        return error_fail("event_raise: nothing to raise");
    if (event_is_soft(cpu)) {
        struct delivery d;
        struct event done = *ev;
        unsigned vector;
        as_delivery(ev, &d);
        done.from_cpl = (uint8_t)cpu_cpl(&cpu->run->s.regs.sregs);
        if (event_deliver(cpu, &d, &done.from, &done.to, &vector) < 0)
            return -1;
        done.vector = (uint8_t)vector;
        done.delivered = true;
        tell(cpu, &done);
        return 0;
    }
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
    case EVENT_COMPLETED:       /* refused above */
        break;
    }
    if (r < 0)
        return -1;
    tell(cpu, ev);
    return 0;
}
