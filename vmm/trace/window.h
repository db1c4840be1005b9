/* SPDX-License-Identifier: MIT */
/* The trace window, its filters, and where records go (window.c). */
#ifndef VBTS_TRACE_WINDOW_H
#define VBTS_TRACE_WINDOW_H

#include "trace/engine.h"

/* --cpl and --cr3: a branch taken at `cpl` in the context `cr3` is recorded. */
bool window_passes(const struct trace_config *c, int cpl, uint64_t cr3);
void window_emit_branch(struct trace_vcpu *t, uint64_t from, uint64_t to, unsigned kind, int cpl);
void window_follow_context(struct trace_vcpu *t, uint64_t cr3);
int window_enter(struct trace_vcpu *t, bool regs_synced);
int window_open_here(struct trace_vcpu *t);
/* The vCPU was started by INIT and SIPI: predicted afresh where it stands, --verify-flow too. */
int window_restart(struct trace_vcpu *t);
void window_leave(struct trace_vcpu *t, enum vbts_stop_reason why);
void window_close(struct trace_vcpu *t);
int window_poll(struct trace_vcpu *t);
void window_finish(struct trace_vcpu *t, enum vbts_stop_reason why);

#endif
