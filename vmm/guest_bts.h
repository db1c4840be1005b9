/* SPDX-License-Identifier: MIT */
/*
 * The guest's own Branch Trace Store: IA32_DEBUGCTL, IA32_DS_AREA and
 * IA32_MISC_ENABLE virtualised per vCPU, records written into the guest's
 * DS buffer as the SDM describes (vol. 3, "Branch Trace Store").  This is
 * independent of vbts's own --trace: both may run at once.
 */
#ifndef VBTS_GUEST_BTS_H
#define VBTS_GUEST_BTS_H

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

struct vcpu;

struct guest_bts {
    uint64_t debugctl;
    uint64_t ds_area;
    uint64_t misc_enable;
    bool above_threshold;   /* PMI raised; re-armed when the index drops below */
    unsigned warned;        /* bit per enum gmem_xlate: its one log line was printed */
};

void guest_bts_init(struct guest_bts *g);

/* Install the MSR filter on the VM; -1 with the error set if KVM cannot. */
int guest_bts_install(int vm_fd);

/* MSR exits.  false: the access raises #GP in the guest, as on hardware. */
bool guest_bts_rdmsr(struct vcpu *cpu, uint32_t index, uint64_t *value);
bool guest_bts_wrmsr(struct vcpu *cpu, uint32_t index, uint64_t value);

static inline bool guest_bts_on(const struct guest_bts *g)
{
    return (g->debugctl & (DEBUGCTL_TR | DEBUGCTL_BTS)) == (DEBUGCTL_TR | DEBUGCTL_BTS);
}

/* Store one branch record, taken at privilege `cpl`, in the guest's DS buffer. */
void guest_bts_store(struct vcpu *cpu, const struct vbts_record *r, int cpl);

#endif
