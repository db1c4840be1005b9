/* SPDX-License-Identifier: MIT */
/*
 * The guest's own Branch Trace Store: IA32_DEBUGCTL, IA32_DS_AREA and
 * IA32_MISC_ENABLE virtualised per vCPU, records written into the guest's
 * DS buffer as the SDM describes (vol. 3, "Branch Trace Store").  This is
 * independent of vbts's own --trace: both may run at once; the trace
 * engine steps while either needs it and hands every record here.
 */
#ifndef VBTS_GUEST_BTS_GUEST_BTS_H
#define VBTS_GUEST_BTS_GUEST_BTS_H

#include <stdbool.h>
#include <stdint.h>

#include "vbts/format.h"

#define MSR_IA32_MISC_ENABLE  0x1a0
#define MSR_IA32_DEBUGCTL     0x1d9
#define MSR_IA32_DS_AREA      0x600

#define DEBUGCTL_LBR          (1ull << 0)
#define DEBUGCTL_BTF          (1ull << 1)
#define DEBUGCTL_TR           (1ull << 6)
#define DEBUGCTL_BTS          (1ull << 7)
#define DEBUGCTL_BTINT        (1ull << 8)
#define DEBUGCTL_BTS_OFF_OS   (1ull << 9)
#define DEBUGCTL_BTS_OFF_USR  (1ull << 10)
#define DEBUGCTL_FREEZE_LBRS  (1ull << 11)
#define DEBUGCTL_FREEZE_PERF  (1ull << 12)
#define DEBUGCTL_FREEZE_SMM   (1ull << 14)
/* Bits a write may set; any other bit is reserved and the write gets #GP. */
#define DEBUGCTL_VALID        (DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_TR | DEBUGCTL_BTS | \
                               DEBUGCTL_BTINT | DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR | \
                               DEBUGCTL_FREEZE_LBRS | DEBUGCTL_FREEZE_PERF | DEBUGCTL_FREEZE_SMM)

#define MISC_ENABLE_FAST_STRINGS  (1ull << 0)
#define MISC_ENABLE_PERFMON       (1ull << 7)
#define MISC_ENABLE_BTS_UNAVAIL   (1ull << 11)
#define MISC_ENABLE_PEBS_UNAVAIL  (1ull << 12)

struct vm;
struct vcpu;

/* One vCPU's BTS MSRs. */
struct guest_bts_cpu {
    uint64_t debugctl;
    uint64_t ds_area;
    uint64_t misc_enable;
    bool above_threshold;   /* PMI raised; re-armed when the index drops below */
    unsigned warned;        /* bit per enum gmem_xlate: its one log line was printed */
};

struct guest_bts;

/* The MSRs of ncpus vCPUs, as after reset; NULL with the error set. */
struct guest_bts *guest_bts_new(int ncpus);
/* guest_bts_new, the MSR filter and exit handlers on the VM; NULL, error set, if KVM cannot. */
struct guest_bts *guest_bts_install(struct vm *vm);
/* The PMI guest BTS raises at its threshold: the machine's APIC, if it has one of ours. */
void guest_bts_set_pmi(struct guest_bts *g, void (*raise_pmi)(void *ctx, struct vcpu *cpu),
                       void *ctx);
void guest_bts_free(struct guest_bts *g);
/* A WRMSR changed a vCPU's BTS MSRs: -1 (error set) ends the run. */
void guest_bts_on_change(struct guest_bts *g, int (*fn)(void *ctx, struct vcpu *cpu), void *ctx);

/* The MSR exits.  false: the access raises #GP in the guest, as on hardware. */
bool guest_bts_rdmsr(struct guest_bts *g, const struct vcpu *cpu, uint32_t index, uint64_t *value);
bool guest_bts_wrmsr(struct guest_bts *g, const struct vcpu *cpu, uint32_t index, uint64_t value);

/* The vCPU's guest has BTS on (DEBUGCTL.TR and .BTS). */
bool guest_bts_on(const struct guest_bts *g, const struct vcpu *cpu);

/* Store one branch record, taken at privilege `cpl`, in the guest's DS buffer. */
void guest_bts_store(struct guest_bts *g, struct vcpu *cpu, const struct vbts_record *r, int cpl);

#endif
