#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linux_trace.t: a trace window inside Debian's kernel, opened by a symbol
# (hardware breakpoint, then single-step) for 50,000 branches: it must
# decode with the kernel's real symbols, carry context markers, and pass
# --verify-flow with 0 violations.  --stop-after-trace ends the run when
# the window closes, so no full boot is needed.  The 2-vCPU window runs
# inside linux.t's 2-vCPU boot.
#   VBTS_LINUX=0        skip
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
linux_guest_or_skip "Linux trace windows" symbols
# nokaslr: the symbols of System.map are where the kernel runs.
APPEND="console=ttyS0 panic=-1 nokaslr quiet"

linux_run start_kernel 1 --initrd "$LINUX_INITRD" --append "$APPEND" --symbols "$LINUX_MAP" \
    --trace-start start_kernel --max-branches 50000 --verify-flow --stop-after-trace \
    --trace "$TMP/start_kernel.vbts"
linux_wait start_kernel
check_linux_window start_kernel 1 start_kernel "$rc"
diag "start_kernel window: ${secs}s"

plan "$TAP_N"
exit $((TAP_FAILED > 0))
