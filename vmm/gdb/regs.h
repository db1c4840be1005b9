/* SPDX-License-Identifier: MIT */
/*
 * The vCPU's registers as gdb sees them: a target description (XML) for
 * x86-64 and one for i386, and each register's bytes in that order.  Like
 * QEMU, vbts keeps one layout for a whole session; outside long mode the
 * x86-64 layout holds the 32-bit values zero-extended.
 */
#ifndef VBTS_GDB_REGS_H
#define VBTS_GDB_REGS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

enum regs_arch { REGS_X86_64, REGS_I386 };

/* Everything gdb can read of a vCPU, as KVM holds it. */
struct regs_state {
    struct kvm_regs regs;
    struct kvm_sregs sregs;
    struct kvm_fpu fpu;
};

/* What a write changed: the caller sets those parts back into KVM. */
#define REGS_CHANGED_REGS  1u
#define REGS_CHANGED_SREGS 2u
#define REGS_CHANGED_FPU   4u

#define REGS_MAX_BYTES 16   /* the widest register (xmm) */

/* target.xml for the layout, built once; its length in *len. */
const char *regs_target_xml(enum regs_arch a, size_t *len);
int regs_count(enum regs_arch a);
/* Register n's size in bytes, 0 if there is no such register. */
size_t regs_size(enum regs_arch a, int n);
/* Register n's bytes, little-endian as gdb wants them; its size, or 0. */
size_t regs_read(enum regs_arch a, const struct regs_state *s, int n, uint8_t *out);
/*
 * Register n from its bytes (len must be its size).  Selectors, control
 * registers and EFER are read-only here (a new value needs more than KVM's
 * set: descriptor caches, paging): a write of another value is refused.
 * 0, or -1; *changed gets REGS_CHANGED_* bits.
 */
int regs_write(enum regs_arch a, struct regs_state *s, int n, const uint8_t *in, size_t len,
               unsigned *changed);

#endif
