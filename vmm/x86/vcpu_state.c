/* SPDX-License-Identifier: MIT */
#include "x86/vcpu_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "core/vcpu.h"
#include "x86/arch.h"

/* Local APIC registers, by their offset in the APIC page (and in KVM_GET_LAPIC's copy). */
#define APIC_TPR   0x080
#define APIC_PPR   0x0a0
#define APIC_SVR   0x0f0
#define APIC_ISR   0x100
#define APIC_IRR   0x200
#define APIC_LVTT  0x320
#define APIC_TMICT 0x380
#define APIC_TMCCT 0x390
#define APIC_TDCR  0x3e0

#define APIC_SVR_ENABLED (1u << 8)
#define APIC_LVT_MASKED  (1u << 16)

#define MSR_IA32_TSC          0x10
#define MSR_IA32_TSC_DEADLINE 0x6e0

static uint32_t apic_reg(const struct kvm_lapic_state *l, unsigned off)
{
    uint32_t v;
    memcpy(&v, l->regs + off, sizeof(v));
    return v;
}

static void take_lapic(struct vcpu *cpu, struct vcpu_state *s)
{
    struct kvm_lapic_state l;
    if (ioctl(cpu->fd, KVM_GET_LAPIC, &l) < 0)
        return;
    s->has_lapic = true;
    s->svr = apic_reg(&l, APIC_SVR);
    s->tpr = apic_reg(&l, APIC_TPR);
    s->ppr = apic_reg(&l, APIC_PPR);
    s->lvt_timer = apic_reg(&l, APIC_LVTT);
    s->tmict = apic_reg(&l, APIC_TMICT);
    s->tmcct = apic_reg(&l, APIC_TMCCT);
    s->tdcr = apic_reg(&l, APIC_TDCR);
    for (int i = 0; i < 8; i++) {
        s->irr[i] = apic_reg(&l, APIC_IRR + 0x10 * (unsigned)i);
        s->isr[i] = apic_reg(&l, APIC_ISR + 0x10 * (unsigned)i);
    }
    struct {
        struct kvm_msrs h;
        struct kvm_msr_entry e[2];
    } m = { .h.nmsrs = 2, .e = { { .index = MSR_IA32_TSC_DEADLINE }, { .index = MSR_IA32_TSC } } };
    if (ioctl(cpu->fd, KVM_GET_MSRS, &m) == 2) {
        s->has_tsc = true;
        s->tsc_deadline = m.e[0].data;
        s->tsc = m.e[1].data;
    }
}

void vcpu_state_take(struct vcpu *cpu, struct vcpu_state *s)
{
    memset(s, 0, sizeof(*s));
    struct kvm_regs r;
    struct kvm_mp_state mp;
    struct kvm_debugregs dr;
    if (ioctl(cpu->fd, KVM_GET_REGS, &r) < 0 || ioctl(cpu->fd, KVM_GET_MP_STATE, &mp) < 0)
        return;
    s->known = true;
    s->rflags = r.rflags;
    s->mp_state = mp.mp_state;
    if (arch_vm(cpu->vm)->irqchip)
        take_lapic(cpu, s);
    s->has_events = ioctl(cpu->fd, KVM_GET_VCPU_EVENTS, &s->ev) == 0;
    if (ioctl(cpu->fd, KVM_GET_DEBUGREGS, &dr) == 0)
        s->guest_dr7 = dr.dr7;
    s->debug_control = arch_vcpu(cpu)->dbg.control;
}

static int on_thread_end(struct vcpu *cpu, void *ctx)
{
    (void)ctx;
    vcpu_state_take(cpu, &arch_vcpu(cpu)->end_state);
    return 0;
}

int vcpu_state_install(struct vm *vm)
{
    return vcpu_on_hook(vm, VCPU_HOOK_THREAD_END, on_thread_end, NULL);
}

const struct vcpu_state *vcpu_state_of(const struct vm *vm, int i)
{
    if (i < 0 || i >= vm->ncpus || !vm->vcpus[i].arch)
        return NULL;
    const struct vcpu_state *s = &arch_vcpu(&vm->vcpus[i])->end_state;
    return s->known ? s : NULL;
}

/* A bounded appender: what does not fit is cut, the buffer stays terminated. */
struct line {
    char *buf;
    size_t len, n;
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct line *l, const char *fmt, ...)
{
    if (l->n >= l->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->buf + l->n, l->len - l->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->n = (size_t)k < l->len - l->n ? l->n + (size_t)k : l->len;
}

static const char *mp_name(uint32_t mp)
{
    switch (mp) {
    case KVM_MP_STATE_RUNNABLE: return "runnable";
    case KVM_MP_STATE_UNINITIALIZED: return "waiting for INIT";
    case KVM_MP_STATE_INIT_RECEIVED: return "waiting for SIPI";
    case KVM_MP_STATE_HALTED: return "halted";
    case KVM_MP_STATE_SIPI_RECEIVED: return "SIPI received";
    default: return "mp-state ?";
    }
}

/* The vectors set in a 256-bit APIC register, or "-". */
static void put_vectors(struct line *l, const char *name, const uint32_t r[8])
{
    int n = 0;
    put(l, "; %s ", name);
    for (unsigned v = 0; v < 256; v++)
        if (r[v / 32] & (1u << (v % 32)))
            put(l, "%s0x%x", n++ ? "," : "", v);
    if (!n)
        put(l, "-");
}

static void put_timer(struct line *l, const struct vcpu_state *s)
{
    static const char *const mode[] = { "one-shot", "periodic", "tsc-deadline", "mode 3" };
    uint32_t t = s->lvt_timer;
    put(l, ", timer %s vector 0x%x%s", mode[(t >> 17) & 3], t & 0xff,
        t & APIC_LVT_MASKED ? " masked" : "");
    if (((t >> 17) & 3) == 2) {
        if (!s->has_tsc)
            put(l, ", deadline unknown");
        else if (!s->tsc_deadline)
            put(l, ", not armed");
        else if (s->tsc_deadline <= s->tsc)
            put(l, ", deadline passed %llu TSC ticks ago",
                (unsigned long long)(s->tsc - s->tsc_deadline));
        else
            put(l, ", deadline in %llu TSC ticks", (unsigned long long)(s->tsc_deadline - s->tsc));
    } else {
        put(l, ", initial count %u current %u divide 0x%x", s->tmict, s->tmcct, s->tdcr);
    }
}

static void put_events(struct line *l, const struct kvm_vcpu_events *e)
{
    int n = 0;
    put(l, "; events:");
    if (e->exception.injected || e->exception.pending)
        put(l, "%s exception %u %s", n++ ? "," : "", e->exception.nr,
            e->exception.injected ? "injected" : "pending");
    if (e->interrupt.injected)
        put(l, "%s interrupt 0x%x injected%s", n++ ? "," : "", e->interrupt.nr,
            e->interrupt.soft ? " (soft)" : "");
    if (e->interrupt.shadow)
        put(l, "%s interrupt shadow 0x%x", n++ ? "," : "", e->interrupt.shadow);
    if (e->nmi.injected || e->nmi.pending)
        put(l, "%s NMI %s", n++ ? "," : "", e->nmi.injected ? "injected" : "pending");
    if (e->nmi.masked)
        put(l, "%s NMIs masked", n++ ? "," : "");
    if (!n)
        put(l, " none");
}

static void put_debug(struct line *l, uint32_t c, uint64_t dr7)
{
    int n = 0;
    put(l, "; monitor's debug:");
    if (c & KVM_GUESTDBG_SINGLESTEP)
        put(l, "%s single-step", n++ ? "," : "");
    if (c & KVM_GUESTDBG_BLOCKIRQ)
        put(l, "%s interrupts blocked", n++ ? "," : "");
    if (c & KVM_GUESTDBG_USE_HW_BP)
        put(l, "%s breakpoints", n++ ? "," : "");
    if (!n)
        put(l, " none");
    put(l, "; guest's DR7 0x%llx", (unsigned long long)dr7);
}

void vcpu_state_describe(const struct vcpu_state *s, char *buf, size_t len)
{
    struct line l = { buf, len, 0 };
    if (!len)
        return;
    buf[0] = 0;
    if (!s->known) {
        put(&l, "state unknown");
        return;
    }
    put(&l, "IF=%d %s", (int)((s->rflags >> 9) & 1), mp_name(s->mp_state));
    if (s->has_lapic) {
        put(&l, "; LAPIC %s, TPR 0x%x PPR 0x%x", s->svr & APIC_SVR_ENABLED ? "on" : "off (SVR)",
            s->tpr, s->ppr);
        put_timer(&l, s);
        put_vectors(&l, "IRR", s->irr);
        put_vectors(&l, "ISR", s->isr);
    }
    if (s->has_events)
        put_events(&l, &s->ev);
    put_debug(&l, s->debug_control, s->guest_dr7);
}
