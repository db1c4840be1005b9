/* SPDX-License-Identifier: MIT */
/*
 * gdb's execution breakpoints where the host's guests fire no hardware
 * breakpoint (QEMU TCG's nested SVM): rather than step the whole run, the
 * page that holds them is taken from the guest (core/kvm.c's hideable
 * page, as trace/catch.c does for --trace-start).  A vCPU that fetches an
 * instruction from it exits; it gets the page back and steps through it,
 * each step checked against gdb's points, until it leaves the page, which
 * is hidden again.  The guest sees its own bytes throughout.
 */
#ifndef VBTS_GDB_HIDE_H
#define VBTS_GDB_HIDE_H

#include <stdbool.h>

#include "core/vcpu.h"

struct gdb;

/*
 * At a resume, with every vCPU stopped: hide the page if gdb's points that
 * need stepping are all execution points on one page of the loaded image
 * that vbts may take (the hideable page is free or already this one of
 * gdb's), and the engine steps no vCPU and will not (no --trace).  Whether it did.
 * -1 with the error set if KVM refused.
 */
int hide_arm(struct gdb *g);
/* The target stopped: the page is the guest's again.  -1 with the error set. */
int hide_disarm(struct gdb *g);
/* KVM_EXIT_INTERNAL_ERROR: a fetch from the hidden page begins a passage through it. */
enum vcpu_verdict hide_on_fetch(struct vcpu *cpu, void *ctx);
/* After a step of a passing vCPU: the page is left behind (hidden again) or not. */
int hide_step(struct gdb *g, struct vcpu *cpu);
/*
 * A passing vCPU at a REP STOS/MOVS that nothing else steps: the monitor
 * runs its iterations (x86/rep.c) rather than step each one (Linux clears
 * its BSS with one).  1 if it moved the vCPU on, 0 if not, -1 on error.
 */
int hide_rep(struct gdb *g, struct vcpu *cpu);

#endif
