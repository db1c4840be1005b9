/* SPDX-License-Identifier: MIT */
/*
 * The monitor's sandbox (docs/security.md).  Once the VM, the trace files
 * and the listening sockets exist (and root is given up, cli/user.h), vbts
 * puts a seccomp-bpf allowlist on every thread: any other system call
 * prints one line naming it and kills the process with SIGSYS.
 */
#ifndef VBTS_CLI_SANDBOX_H
#define VBTS_CLI_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The allowlist on every thread of the process; -1 (error set) if not
 * installed.  unlink is allowed only with remove_sockets: the socket
 * server removes its unix: sockets at the end.
 */
int sandbox_install(bool remove_sockets);
/* A system call the allowlist forbids, for the tests: under the filter it does not return. */
void sandbox_forbidden_call(void);

#endif
