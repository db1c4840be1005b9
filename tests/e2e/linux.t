#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linux.t: boot Debian's kernel (bzImage) with a busybox initramfs to its
# marker line and power-off, status 0, on 1 vCPU and, side by side, on 2
# vCPUs, where a window is traced on the way: 50,000 branches from
# sched_init_smp, on both vCPUs, with --verify-flow.
#
# A boot takes minutes where CPL0 code is emulated (kvm_pvm: about 3.5, see
# docs/host-compat.md), so the two runs go side by side.
#   VBTS_LINUX_BOOT=1   also an untraced 2-vCPU boot and a panic=-1 boot
#                       that must end with status 2
#   VBTS_LINUX=0        nothing that needs the kernel
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
linux_guest_or_skip "Linux boots" symbols

# marker NAME CPUS: the boot reached the marker with every CPU online and powered off.
marker() {
    local name=$1 cpus=$2 want="VBTS-LINUX-OK cpus=$2 online=0"
    [ "$cpus" -gt 1 ] && want="$want-$((cpus - 1))"
    if [ "$rc" = 0 ] && tr -d '\r' <"$TMP/$name.out" | grep -qx "$want"; then
        ok "Linux --cpus $cpus: '$want', powered off, status 0 (${secs}s)"
    else
        not_ok "Linux --cpus $cpus: '$want', status 0"
        diag "status $rc after ${secs}s; last console lines and stderr:"
        diag_file "$TMP/$name.out" 20
        diag_file "$TMP/$name.err" 10
    fi
    grep -h '^vbts: host-compat: .*\(emulated\|completed\|done\)' "$TMP/$name.err" | diag
}

# --cpus is for multiboot kernels too: a PC with two CPUs (docs/multiboot.md,
# tests/e2e/multiboot.t); the stub ends with its own status there.
"$VBTS" --cpus 2 "$STUBS/branches64.bin" >/dev/null 2>"$TMP/mb.err" </dev/null
rc=$?
if [ $rc = 1 ] && [ ! -s "$TMP/mb.err" ]; then
    ok "multiboot image with --cpus 2: runs on a 2-CPU PC, the stub's status"
else
    not_ok "multiboot image with --cpus 2: runs on a 2-CPU PC, the stub's status"; diag "status $rc: $(cat "$TMP/mb.err")"
fi

# The kernel starts: its banner and command line on COM1 within a minute
# (early console: polled UART), then SIGINT ends the run with 130.
"$VBTS" --cpus 2 --initrd "$LINUX_INITRD" --append "console=ttyS0 earlyprintk=ttyS0 panic=-1" \
    "$LINUX_GUEST/bzImage" >"$TMP/start.out" 2>"$TMP/start.err" </dev/null &
pid=$!
for _ in $(seq 120); do
    grep -q "Command line: .*earlyprintk=ttyS0" "$TMP/start.out" 2>/dev/null && break
    sleep 0.5
done
kill -INT $pid 2>/dev/null
wait_bounded $pid 30
rc=$?
if [ $rc = 130 ] && grep -q "Linux version" "$TMP/start.out" &&
   grep -q "Command line: .*console=ttyS0 earlyprintk=ttyS0 panic=-1" "$TMP/start.out"; then
    ok "bzImage detected, kernel started: banner and command line on COM1; SIGINT ends with 130"
else
    not_ok "bzImage detected, kernel started: banner and command line on COM1"
    diag "status $rc"; diag_file "$TMP/start.out" 5; diag_file "$TMP/start.err" 5
fi

# More boots where a boot takes seconds (the lab); where CPL0 code is
# emulated (minutes a boot) the traced 2-vCPU boot guards host-compat alone.
case $VBTS_HOST in lab/*) more=1 ;; *) more=${VBTS_LINUX_BOOT:-0} ;; esac
[ "$more" = 1 ] && linux_run cpu1 1 --initrd "$LINUX_INITRD" --append "$LINUX_APPEND"
# Side by side, 2 vCPUs: a window of 50,000 branches from sched_init_smp
# (nokaslr: the symbols of System.map are where the kernel runs), then on,
# untraced, to the marker.  The initramfs is the user's own: the test's,
# followed by a gzip-compressed cpio that adds /my-init, which the command
# line names (rdinit=) and hands a word through the environment.
mkdir -p "$TMP/my"
printf '#!/bin/sh\necho "MY-INIT says $VBTS_MY"\nexec /init\n' >"$TMP/my/my-init"
chmod 0755 "$TMP/my/my-init"
{ cat "$LINUX_INITRD"; (cd "$TMP/my" && echo my-init | cpio -o -H newc --quiet -R 0:0 | gzip -9); } >"$TMP/my.cpio"
linux_run smp 2 --initrd "$TMP/my.cpio" --append "$LINUX_APPEND nokaslr rdinit=/my-init VBTS_MY=hello-from-append" \
    --symbols "$LINUX_MAP" --trace-start sched_init_smp --max-branches 50000 --verify-flow --trace "$TMP/smp.vbts"

if [ "$more" = 1 ]; then
    linux_wait cpu1
    marker cpu1 1
else
    skip "Linux --cpus 1 boot to its marker" "a boot takes minutes on $VBTS_HOST (VBTS_LINUX_BOOT=1 runs it; the lab always does)"
fi
linux_wait smp
marker smp 2
if tr -d '\r' <"$TMP/smp.out" | grep -qx "MY-INIT says hello-from-append"; then
    ok "smp: a user's initramfs (gzip part) and command line: its rdinit ran with the word from --append"
else
    not_ok "smp: a user's initramfs and command line"; diag_file "$TMP/smp.out" 10
fi
check_linux_window smp 2 sched_init_smp "$rc"
n1=$(grep -c '^{"cpu":1,.*"from"' "$TMP/smp.json")
[ "$n1" -gt 0 ] && ok "smp: vCPU 1 has its own branch records ($n1)" || not_ok "smp: vCPU 1 has branch records"

if [ "$more" = 1 ]; then
    # Side by side again: an untraced 2-vCPU boot, and a kernel that finds
    # no init in the initramfs, panics and reboots (panic=-1): status 2.
    linux_run cpu2 2 --initrd "$LINUX_INITRD" --append "$LINUX_APPEND"
    linux_run panic 1 --initrd "$LINUX_INITRD" --append "$LINUX_APPEND rdinit=/nonexistent init=/nonexistent"
    linux_wait cpu2
    marker cpu2 2
    linux_wait panic
    if [ "$rc" = 2 ] && grep -q "^vbts: guest kernel panicked (\"Kernel panic - not syncing" "$TMP/panic.err"; then
        ok "Linux panic=-1: status 2, the panic named (${secs}s)"
    else
        not_ok "Linux panic=-1: status 2, the panic named"
        diag "status $rc after ${secs}s"; diag_file "$TMP/panic.out" 10; diag_file "$TMP/panic.err" 5
    fi
else
    skip "Linux --cpus 2 untraced boot to its marker" "a boot takes minutes on $VBTS_HOST (VBTS_LINUX_BOOT=1 runs it; the lab always does)"
    skip "Linux panic=-1 ends with status 2" "a boot takes minutes on $VBTS_HOST (VBTS_LINUX_BOOT=1 runs it; the lab always does)"
fi

plan "$TAP_N"
exit $((TAP_FAILED > 0))
