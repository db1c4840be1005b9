#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linux.t: boot Debian's kernel (bzImage) with a busybox initramfs to its
# marker line and power-off, status 0.  The guest comes from `make
# linux-guest` (scripts/linux-guest.sh: apt-get download + dpkg -x, and
# busybox-static); this test builds it when missing.
#
# A full boot is slow where CPL0 code is emulated (kvm_pvm: about 7 minutes
# each, docs/host-compat.md), so:
#   by default          the kernel starts and prints its banner (seconds);
#   VBTS_LINUX_BOOT=1   full boots: --cpus 1 and --cpus 2 to the marker (the
#                       kernel must bring both CPUs online), and a panic=-1
#                       boot that must end with status 2;
#   VBTS_LINUX=0        nothing that needs the kernel.
# VBTS_LINUX_TIMEOUT bounds each boot (seconds, default 600).
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
GUEST=${LINUX_GUEST:-$ROOT/build/linux}
LIMIT=${VBTS_LINUX_TIMEOUT:-600}
# The kernel's command line for the tests: quiet, and without the boot work
# that costs minutes where CPL0 is emulated and that the test does not need
# (docs/host-compat.md measures it): crypto self-tests, tracefs and trace
# event setup, ftrace's weak-function check, speculation mitigations.
APPEND="console=ttyS0 panic=-1 quiet mitigations=off cryptomgr.notests"
APPEND="$APPEND initcall_blacklist=trace_eval_init,tracer_init_tracefs,ftrace_check_for_weak_functions,init_kprobe_trace"

if [ "${VBTS_LINUX:-1}" = 0 ]; then
    plan 1; skip "Linux boot" "VBTS_LINUX=0"; exit 0
fi
if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    plan 1; skip "Linux boot" "no usable /dev/kvm"; exit 0
fi
if [ ! -s "$GUEST/bzImage" ] || [ ! -s "$GUEST/initramfs.cpio" ] || [ scripts/linux-guest.sh -nt "$GUEST/initramfs.cpio" ]; then
    if ! scripts/linux-guest.sh "$GUEST" >"$TMP/guest.log" 2>&1; then
        plan 1; skip "Linux boot" "no Linux guest: $(tail -n 1 "$TMP/guest.log")"; exit 0
    fi
fi

# boot NAME CPUS [vbts args...]: output in $TMP/NAME.{out,err}, status in $rc, seconds in $secs
boot() {
    local name=$1 cpus=$2
    shift 2
    local t0=$SECONDS
    rc=0
    timeout -k 5 "$LIMIT" "$VBTS" --cpus "$cpus" --memory 256M "$@" "$GUEST/bzImage" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || rc=$?
    secs=$((SECONDS - t0))
    [ "$rc" = 124 ] && echo "(killed after ${LIMIT}s)" >>"$TMP/$name.err"
}

# Multiboot-only options are refused for a bzImage and the other way round.
"$VBTS" --cpus 2 "$STUBS/branches64.bin" >/dev/null 2>"$TMP/mb.err" </dev/null
rc=$?
if [ $rc = 125 ] && grep -q -- "--cpus and --initrd are for Linux guests" "$TMP/mb.err"; then
    ok "multiboot image with --cpus 2: status 125, says why"
else
    not_ok "multiboot image with --cpus 2: status 125, says why"; diag "status $rc: $(cat "$TMP/mb.err")"
fi

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
}

# The kernel starts: its banner and command line on COM1 within a minute
# (early console: polled UART), then SIGINT ends the run with 130.
"$VBTS" --cpus 2 --initrd "$GUEST/initramfs.cpio" --append "console=ttyS0 earlyprintk=ttyS0 panic=-1" \
    "$GUEST/bzImage" >"$TMP/start.out" 2>"$TMP/start.err" </dev/null &
pid=$!
for _ in $(seq 120); do
    grep -q "Command line: .*earlyprintk=ttyS0" "$TMP/start.out" 2>/dev/null && break
    sleep 0.5
done
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc = 130 ] && grep -q "Linux version" "$TMP/start.out" &&
   grep -q "Command line: .*console=ttyS0 earlyprintk=ttyS0 panic=-1" "$TMP/start.out"; then
    ok "bzImage detected, kernel started: banner and command line on COM1; SIGINT ends with 130"
else
    not_ok "bzImage detected, kernel started: banner and command line on COM1"
    diag "status $rc"; diag_file "$TMP/start.out" 5; diag_file "$TMP/start.err" 5
fi

if [ "${VBTS_LINUX_BOOT:-0}" = 1 ]; then
    for n in 1 2; do
        boot cpu$n $n --initrd "$GUEST/initramfs.cpio" --append "$APPEND"
        marker cpu$n $n
        grep -h '^vbts: host-compat: .*\(emulated\|completed\|done\)' "$TMP/cpu$n.err" | diag
    done
    # No init in the initramfs: the kernel panics, reboots (panic=-1), status 2.
    boot panic 1 --initrd "$GUEST/initramfs.cpio" --append "$APPEND rdinit=/nonexistent init=/nonexistent"
    if [ "$rc" = 2 ] && grep -q "^vbts: guest kernel panicked (\"Kernel panic - not syncing" "$TMP/panic.err"; then
        ok "Linux panic=-1: status 2, the panic named (${secs}s)"
    else
        not_ok "Linux panic=-1: status 2, the panic named"
        diag "status $rc after ${secs}s"; diag_file "$TMP/panic.out" 10; diag_file "$TMP/panic.err" 5
    fi
else
    skip "Linux --cpus 1 boots to its marker" "set VBTS_LINUX_BOOT=1 (minutes where CPL0 is emulated)"
    skip "Linux --cpus 2 boots to its marker" "set VBTS_LINUX_BOOT=1"
    skip "Linux panic=-1 ends with status 2" "set VBTS_LINUX_BOOT=1"
fi

plan "$TAP_N"
exit $((TAP_FAILED > 0))
