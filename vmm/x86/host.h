/* SPDX-License-Identifier: MIT */
/*
 * What this host's KVM can and cannot do, found once (docs/host-compat.md).
 * kvm_pvm, a software nested hypervisor, emulates CPL0 code and cannot
 * single-step CPL3 code; stock KVM (kvm_intel, kvm_amd) can.
 */
#ifndef VBTS_X86_HOST_H
#define VBTS_X86_HOST_H

#include <stdbool.h>

/* The host's KVM is kvm_pvm. */
bool host_is_pvm(void);
/* The host can single-step CPL3 code. */
bool host_steps_user(void);
/* The name of the host's KVM module, for messages: kvm_pvm, kvm_amd, kvm_intel or kvm. */
const char *host_kvm_name(void);

#endif
