#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# linux_trace.t: a trace window inside Debian's kernel, opened by a symbol
# (a hardware breakpoint, or the symbol's page hidden where breakpoints do
# not fire; then single-step) for 50,000 branches: it must
# decode with the kernel's real symbols, carry context markers, and pass
# --verify-flow with 0 violations.  --stop-after-trace ends the run when
# the window closes, so no full boot is needed.  The 2-vCPU window runs
# inside linux.t's 2-vCPU boot.
#
# Whole-system windows (--cpl all) from a system call, through the return
# to user mode and context switches, and one process alone (--cr3 start).
#   VBTS_LINUX=0        skip
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
linux_guest_or_skip "Linux trace windows" symbols
# nokaslr: the symbols of System.map are where the kernel runs.
APPEND="console=ttyS0 panic=-1 nokaslr quiet"

# Whole-system windows step user mode (on kvm_pvm through the guest's #DB
# handler: docs/engine.md).  The init is a static program
# (guest-stub/linux/yield.c): two processes asking uname(2) and yielding.
# kvm_pvm boots to user space in minutes only with tap.sh's shorter boot.
YIELD=$STUBS/linux/yield
case $VBTS_HOST in
kvm_pvm) USER_APPEND="$LINUX_APPEND nokaslr rdinit=/yield" ;;
*) USER_APPEND="$APPEND rdinit=/yield" ;;
esac
mkdir -p "$TMP/y"
cp "$YIELD" "$TMP/y/yield"
{ cat "$LINUX_INITRD"; (cd "$TMP/y" && echo yield | cpio -o -H newc --quiet -R 0:0 | gzip -9); } >"$TMP/yield.cpio"
# The --cr3 filter is the trace layer's, the same on every host: on kvm_pvm,
# where each of these boots costs minutes, the lab's run checks it
# (VBTS_LINUX_BOOT=1 runs it here too).
runs="syscall:10000 syscall_cr3:10000"
cr3_here=1
case $VBTS_HOST:${VBTS_LINUX_BOOT:-0} in kvm_pvm:0) runs="syscall:10000" cr3_here=0 ;; esac
for run in $runs; do
    name=${run%:*} n=${run#*:}
    extra=
    [ "$name" = syscall_cr3 ] && extra="--cr3 start"
    # shellcheck disable=SC2086
    linux_run "$name" 1 --initrd "$TMP/yield.cpio" --append "$USER_APPEND" --symbols "$LINUX_MAP" \
        --trace-start __x64_sys_newuname --cpl all --max-branches "$n" --verify-flow \
        --stop-after-trace $extra --trace "$TMP/$name.vbts"
    # Each boots for minutes on kvm_pvm: one at a time leaves the lab a core
    # (the start_kernel window, a minute, goes beside the last).
    case $VBTS_HOST:$name:$cr3_here in kvm_pvm:syscall:1) linux_wait "$name" ;; esac
done

linux_run start_kernel 1 --initrd "$LINUX_INITRD" --append "$APPEND" --symbols "$LINUX_MAP" \
    --trace-start start_kernel --max-branches 50000 --verify-flow --stop-after-trace \
    --trace "$TMP/start_kernel.vbts" --trace "$TMP/start_kernel.vbts.zst"
linux_wait start_kernel
check_linux_window start_kernel 1 start_kernel "$rc"
diag "start_kernel window: ${secs}s"
# The same window as .zst: zstd(1) gives the plain file back, a kernel's
# branches pack at least 8 to 1.
plain=$(stat -c %s "$TMP/start_kernel.vbts") packed=$(stat -c %s "$TMP/start_kernel.vbts.zst" 2>/dev/null || echo 0)
if command -v zstd >/dev/null && zstd -qdc "$TMP/start_kernel.vbts.zst" 2>/dev/null | cmp -s - "$TMP/start_kernel.vbts" &&
   [ $((packed * 8)) -le "$plain" ]; then
    ok "start_kernel window as .zst: zstd -d gives the plain file; $((plain / packed))x smaller ($plain bytes, $packed)"
else
    not_ok "start_kernel window as .zst: zstd -d == plain, at least 8x smaller ($plain bytes, $packed)"
fi

# The window's views with the kernel's symbols: start_kernel is the
# outermost frame of every stack (it does not return, and interrupts are
# still off), the folded counts are the 50,000 branches, and the chrome
# file nests.
for f in calls folded chrome; do
    "$VBTS_DECODE" --format $f --symbols "$LINUX_MAP" "$TMP/start_kernel.vbts" >"$TMP/sk.$f" 2>"$TMP/sk.$f.err"
    echo $? >"$TMP/sk.$f.rc"
done
if [ "$(cat "$TMP/sk.calls.rc" "$TMP/sk.folded.rc" "$TMP/sk.chrome.rc" | tr -d '\n')" = 000 ] &&
   [ "$(grep -v '^#' "$TMP/sk.calls" | head -n 1)" = "0	1	start_kernel" ] &&
   awk '$1 !~ /^start_kernel(;|$)/ { bad = 1 } { sum += $NF } END { exit bad || sum != 50000 }' "$TMP/sk.folded" &&
   chrome_check "$TMP/sk.chrome" >"$TMP/sk.names" 2>"$TMP/sk.chrome.err" && [ "$(head -n 1 "$TMP/sk.names")" = start_kernel ]; then
    ok "start_kernel window: calls, folded and chrome nest under start_kernel; folded counts all 50000 branches ($(wc -l <"$TMP/sk.folded") stacks)"
else
    not_ok "start_kernel window: the stack views"
    diag "$(head -n 3 "$TMP/sk.calls")"; diag_file "$TMP/sk.chrome.err"; diag_file "$TMP/sk.folded.err"
fi

# lcov with the kernel's DWARF (the -dbg package's vmlinux): a record for
# init/main.c whose lines ran (start_kernel's), and the functions the
# window entered, by their DWARF entries, most of them frames in calls too.
"$VBTS_DECODE" --format lcov --symbols "$LINUX_GUEST/vmlinux" "$TMP/start_kernel.vbts" >"$TMP/sk.info" 2>"$TMP/sk.info.err"
lrc=$?
main_lh=$(awk '/^SF:.*\/init\/main\.c$/ { p = 1 } p && /^LH:/ { print substr($0, 4); exit }' "$TMP/sk.info")
awk -F, '/^FNDA:[1-9]/ { print $2 }' "$TMP/sk.info" | sort -u >"$TMP/sk.lcov.names"
grep -v '^#' "$TMP/sk.calls" | cut -f 3 | sed 's/^ *//; s/ \[.*//' | sort -u >"$TMP/sk.calls.names"
nfn=$(wc -l <"$TMP/sk.lcov.names")
nboth=$(comm -12 "$TMP/sk.lcov.names" "$TMP/sk.calls.names" | wc -l)
if [ "$lrc" = 0 ] && [ "${main_lh:-0}" -gt 0 ] && [ "$nfn" -gt 20 ] && [ $((nboth * 10)) -ge $((nfn * 9)) ]; then
    ok "start_kernel window: lcov from vmlinux's DWARF: init/main.c $main_lh lines ran; $nfn functions entered, $nboth of them frames in calls"
else
    not_ok "start_kernel window: lcov from vmlinux's DWARF (status $lrc, init/main.c LH ${main_lh:-none}, $nboth of $nfn)"
    diag_file "$TMP/sk.info.err"
fi

# user_window NAME N: a --cpl all window of N branches from the kernel's
# uname(2): status 0, N records, 0 flow violations, decoded with symbols.
user_window() {
    local name=$1 n=$2 drc=0
    linux_wait "$name"
    "$VBTS_DECODE" --format json --symbols "$LINUX_MAP" "$TMP/$name.vbts" >"$TMP/$name.json" 2>"$TMP/$name.derr" || drc=$?
    local got
    got=$(grep -c '"from"' "$TMP/$name.json")
    if [ "$rc" = 0 ] && [ $drc = 0 ] && [ "$got" = "$n" ] &&
       grep -qx "vbts: verify-flow: $n records checked, 0 violations" "$TMP/$name.err"; then
        ok "$name: $n branch records from __x64_sys_newuname, 0 flow violations (${secs}s)"
    else
        not_ok "$name: $n branch records, 0 flow violations"
        diag "status $rc, decode $drc, $got records"; diag_file "$TMP/$name.err"; diag_file "$TMP/$name.out" 5
    fi
}
# In JSON order: each branch record with the CR3 it was taken in.
with_cr3() {
    awk -F'"' '/"kind":"ctx-arrive"/ {for (i = 1; i < NF; i++) if ($i == "cr3") cr3 = $(i + 2)}
               /"from"/ {for (i = 1; i < NF; i++) { if ($i == "from") f = $(i + 2); if ($i == "to") t = $(i + 2); if ($i == "kind" && $(i + 2) != "") k = $(i + 2) }
                         print cr3, f, t, k}' "$1"
}
user() { awk '{ a = $2; sub(/^0x/, "", a); if (length(a) < 16 || a !~ /^ffff/) n++ } END { print n + 0 }'; }

user_window syscall 10000
pair_check syscall "$TMP/syscall.json"
with_cr3 "$TMP/syscall.json" >"$TMP/syscall.rec"
first=$(head -n 1 "$TMP/syscall.rec")
# Back to user mode by sysret, or by iret where the exit path takes it
# (a pending reschedule or signal, an interrupt on the way).
back=$(awk '$4 == "syscall" || $4 == "iret" { a = $3; sub(/^0x/, "", a); if (a !~ /^ffff/) { print; exit } }' "$TMP/syscall.rec")
nuser=$(user <"$TMP/syscall.rec")
ncr3=$(awk '{print $1}' "$TMP/syscall.rec" | sort -u | wc -l)
departs=$(grep -c '"kind":"ctx-depart"' "$TMP/syscall.json")

# How far user mode gets within the window depends on the host's speed:
# the guest's timer keeps real time, so on a slow host its interrupts
# take most of the 10,000 branches (7 to 120 user-mode records seen in the
# lab; 50 on kvm_pvm).
if grep -q '"from_sym":"__x64_sys_newuname+0x[0-9a-f]*"' <<<"$(grep -m 1 '"from"' "$TMP/syscall.json")" &&
   [ -n "$back" ] && [ "$nuser" -ge 1 ] && [ "$ncr3" -ge 2 ] && [ "$departs" -ge 2 ]; then
    ok "syscall: kernel path, return to user mode, $nuser user-mode branches, $departs context switches between $ncr3 address spaces"
else
    not_ok "syscall: kernel path, return to user, user-mode branches, context switches"
    diag "first: $first" "return to user: ${back:-none}" "user-mode records: $nuser" "address spaces: $ncr3, departures: $departs"
fi

# The stack views across the user/kernel line: the window begins in the
# kernel, returns to user mode (a new outermost frame), and the next
# system calls are frames one level into the user code's.
for f in calls folded chrome; do
    "$VBTS_DECODE" --format $f --symbols "$LINUX_MAP" "$TMP/syscall.vbts" >"$TMP/sc.$f" 2>"$TMP/sc.$f.err"
    echo $? >"$TMP/sc.$f.rc"
done
# How many system calls the window holds depends on the scheduler: the
# calls view has a frame for each (a syscall record up to the kernel).
nsys=$(grep -c ' \[syscall\]$' "$TMP/sc.calls")
nup=$(python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) for r in [json.loads(l)]
      if r.get("kind") == "syscall" and "from" in r and int(r["to"], 16) > int(r["from"], 16)))' "$TMP/syscall.json")
if [ "$(cat "$TMP/sc.calls.rc" "$TMP/sc.folded.rc" "$TMP/sc.chrome.rc" | tr -d '\n')" = 000 ] && [ "$nsys" = "$nup" ] &&
   ! grep -q '^[0-9]*	[0-9]*	[^ ].* \[syscall\]$' "$TMP/sc.calls" &&
   awk '{ sum += $NF } END { exit sum != 10000 }' "$TMP/sc.folded" && chrome_check "$TMP/sc.chrome" >/dev/null 2>"$TMP/sc.chrome.err"; then
    ok "syscall: the stack views of a whole-system window: the $nup system calls nested in user frames, 10000 branches folded, chrome nests"
else
    not_ok "syscall: the stack views of a whole-system window ($nsys system-call frames, $nup system calls)"
    diag "$(grep -m 3 'syscall' "$TMP/sc.calls")"; diag_file "$TMP/sc.chrome.err"
fi

if [ $cr3_here = 0 ]; then
    skip "syscall_cr3: 10000 branch records from __x64_sys_newuname" "a boot takes minutes on kvm_pvm, and the --cr3 filter is the same on every host: the lab runs it (VBTS_LINUX_BOOT=1 runs it here)"
    skip "syscall_cr3: --cr3 start isolates one process" "as above"
    plan "$TAP_N"
    exit $((TAP_FAILED > 0))
fi
user_window syscall_cr3 10000
with_cr3 "$TMP/syscall_cr3.json" >"$TMP/syscall_cr3.rec"
mine=$(grep -m 1 '"kind":"ctx-arrive"' "$TMP/syscall_cr3.json" | sed 's/.*"cr3":"\([0-9a-fx]*\)".*/\1/')
others=$(grep '"kind":"ctx-arrive"' "$TMP/syscall_cr3.json" | grep -vc "\"cr3\":\"$mine\"")
strays=$(awk -v m="$mine" '$1 != m' "$TMP/syscall_cr3.rec" | wc -l)
nuser=$(user <"$TMP/syscall_cr3.rec")
if [ -n "$mine" ] && [ "$others" -ge 1 ] && [ "$strays" = 0 ] && [ "$nuser" -ge 1 ]; then
    ok "syscall_cr3: --cr3 start: every record in $mine (the caller's), none while another process ran ($others arrivals), $nuser in user mode"
else
    not_ok "syscall_cr3: --cr3 start isolates one process"
    diag "start cr3 ${mine:-none}, other arrivals $others, records elsewhere $strays, user-mode $nuser"
fi

plan "$TAP_N"
exit $((TAP_FAILED > 0))
