#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linux_trace.t: trace windows inside Debian's kernel.  A window opened by a
# symbol (hardware breakpoint, then single-step) for 50,000 branches must
# decode with the kernel's real symbols, carry context markers, and pass
# --verify-flow with 0 violations; on 2 vCPUs every vCPU has its own
# records.  --stop-after-trace ends each run when its window closes, so no
# full boot is needed.
#
# The guest comes from `make linux-guest` and the symbols from the kernel's
# -dbg package (scripts/linux-symbols.sh); both are fetched when missing.
#   VBTS_LINUX=0        skip
#   VBTS_LINUX_SMP=0    skip the 2-vCPU window (it waits for SMP bring-up)
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
GUEST=${LINUX_GUEST:-$ROOT/build/linux}
LIMIT=${VBTS_LINUX_TIMEOUT:-600}
APPEND="console=ttyS0 panic=-1 nokaslr quiet"

if [ "${VBTS_LINUX:-1}" = 0 ]; then
    plan 1; skip "Linux trace windows" "VBTS_LINUX=0"; exit 0
fi
if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    plan 1; skip "Linux trace windows" "no usable /dev/kvm"; exit 0
fi
if ! scripts/linux-guest.sh "$GUEST" >"$TMP/guest.log" 2>&1 ||
   ! scripts/linux-symbols.sh "$GUEST" >"$TMP/sym.log" 2>&1; then
    plan 1; not_ok "Linux guest and symbols"; diag_file "$TMP/guest.log"; diag_file "$TMP/sym.log"; exit 1
fi
MAP=$GUEST/System.map
INITRD=$GUEST/initramfs.cpio
[ -s "$INITRD" ] || INITRD=$GUEST/initramfs.cpio.gz

# window NAME CPUS SYMBOL: 50,000 branches from SYMBOL; sets rc, secs.
window() {
    local name=$1 cpus=$2 sym=$3 t0=$SECONDS
    rc=0
    timeout -k 5 "$LIMIT" "$VBTS" --cpus "$cpus" --memory 256M --initrd "$INITRD" \
        --append "$APPEND" --symbols "$MAP" --trace-start "$sym" --max-branches 50000 \
        --verify-flow --stop-after-trace --trace "$TMP/$name.vbts" "$GUEST/bzImage" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || rc=$?
    secs=$((SECONDS - t0))
    "$VBTS_DECODE" --format json --symbols "$MAP" "$TMP/$name.vbts" >"$TMP/$name.json" 2>"$TMP/$name.derr"
    drc=$?
}

check_window() { # NAME CPUS SYMBOL
    local name=$1 cpus=$2 sym=$3
    if [ $rc = 0 ] && [ $drc = 0 ]; then ok "$name: window ran, run ended with it, trace decodes (${secs}s)"
    else not_ok "$name: window ran and decodes"; diag "status $rc, decode $drc"; diag_file "$TMP/$name.err"; diag_file "$TMP/$name.derr"; fi
    local n
    n=$(grep -c '"from"' "$TMP/$name.json")
    [ "$n" = 50000 ] && ok "$name: exactly 50000 branch records" || { not_ok "$name: 50000 branch records"; diag "got $n"; }
    if grep -qx "vbts: verify-flow: 50000 records checked, 0 violations" "$TMP/$name.err"; then
        ok "$name: --verify-flow: 50000 records, 0 violations"
    else not_ok "$name: --verify-flow 0 violations"; diag "$(grep verify-flow "$TMP/$name.err")"; fi
    # The vCPU that reached the trigger takes its first branch inside the
    # symbol (--verify-flow checked the straight line from the trigger to it).
    local firsts
    firsts=$(for c in $(seq 0 $((cpus - 1))); do grep -m 1 "^{\"cpu\":$c,.*\"from\"" "$TMP/$name.json"; done)
    if grep -q "\"from_sym\":\"$sym+0x[0-9a-f]*\"" <<<"$firsts"; then ok "$name: the window starts in $sym, named by symbol"
    else not_ok "$name: the window starts in $sym"; diag "$firsts"; fi
    local cpu
    for cpu in $(seq 0 $((cpus - 1))); do
        if grep -q "^{\"cpu\":$cpu,\"seq\":[0-9]*,\"kind\":\"ctx-arrive\",\"cr3\":\"0x[0-9a-f]*\"" "$TMP/$name.json" &&
           grep -q "^{\"cpu\":$cpu,.*\"kind\":\"stop\",\"reason\":\"limit\"" "$TMP/$name.json"; then
            ok "$name: vCPU $cpu: context arrival marker and stop marker"
        else not_ok "$name: vCPU $cpu: context and stop markers"; fi
    done
}

window start_kernel 1 start_kernel
check_window start_kernel 1 start_kernel

if [ "${VBTS_LINUX_SMP:-1}" != 0 ]; then
    # After SMP bring-up: both vCPUs run inside the window.
    window smp 2 sched_init_smp
    check_window smp 2 sched_init_smp
    n1=$(grep -c '^{"cpu":1,.*"from"' "$TMP/smp.json")
    [ "$n1" -gt 0 ] && ok "smp: vCPU 1 has its own branch records ($n1)" || not_ok "smp: vCPU 1 has branch records"
else
    skip "2-vCPU window" "VBTS_LINUX_SMP=0"
fi

plan "$TAP_N"
exit $((TAP_FAILED > 0))
