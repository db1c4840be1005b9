/* SPDX-License-Identifier: MIT */
#include "core/vm.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/kvm.h>

#include "core/vcpu.h"

/* The signal that makes a vCPU thread leave KVM_RUN (core/vcpu.c installs it). */
#define SIG_KICK SIGUSR1

void vm_init(struct vm *vm)
{
    memset(vm, 0, sizeof(*vm));
    vm->kvm_fd = vm->vm_fd = -1;
    pthread_mutex_init(&vm->end_lock, NULL);
}

void vm_fini(struct vm *vm)
{
    pthread_mutex_destroy(&vm->end_lock);
}

static void kick(struct vm *vm, bool everyone)
{
    for (int i = 0; i < vm->ncpus; i++) {
        struct vcpu *c = &vm->vcpus[i];
        if (!c->run)
            continue;
        if (!everyone && c->thread_started && pthread_equal(c->thread, pthread_self()))
            continue;
        c->run->immediate_exit = 1;
        /* A thread may not have started yet: immediate_exit stops its first KVM_RUN. */
        if (c->thread_started && !pthread_equal(c->thread, pthread_self()))
            pthread_kill(c->thread, SIG_KICK);
    }
}

void vm_request_end(struct vm *vm, enum vm_end why, int status, const char *fmt, ...)
{
    pthread_mutex_lock(&vm->end_lock);
    if (atomic_load(&vm->end) == VM_RUNNING) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(vm->end_msg, sizeof(vm->end_msg), fmt, ap);
        va_end(ap);
        vm->exit_status = status;
        atomic_store(&vm->end, why);
        kick(vm, true);
    }
    pthread_mutex_unlock(&vm->end_lock);
}

void vm_kick_others(struct vm *vm)
{
    kick(vm, false);
}

void vm_guest_event(struct vm *vm, enum vm_guest_event ev, const char *how)
{
    if (vm->on_guest_event) {
        vm->on_guest_event(vm, ev, how, vm->guest_event_ctx);
        return;
    }
    vm_request_end(vm, VM_END_HALT, VBTS_EXIT_OK, "guest %s (%s)",
                   ev == VM_GUEST_POWEROFF ? "powered off" : "rebooted", how);
}

int vm_image_add(struct vm *vm, uint64_t lin, uint64_t gpa, uint64_t len)
{
    if (len == 0 || lin + len < lin || gpa + len < gpa)
        return error_fail("image range 0x%llx+0x%llx is empty or wraps",
                          (unsigned long long)lin, (unsigned long long)len);
    if (vm->nimage == VM_MAX_IMAGE)
        return error_fail("more than %d image ranges", VM_MAX_IMAGE);
    vm->image[vm->nimage++] = (struct vm_image){ lin, gpa, len };
    return 0;
}

bool vm_image_gpa(const struct vm *vm, uint64_t lin, uint64_t *gpa)
{
    for (int i = 0; i < vm->nimage; i++) {
        const struct vm_image *m = &vm->image[i];
        if (lin >= m->lin && lin - m->lin < m->len) {
            *gpa = m->gpa + (lin - m->lin);
            return true;
        }
    }
    return false;
}
