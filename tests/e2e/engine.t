#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# engine.t: the two engines (docs/engine.md).  Where the host runs the
# branch engine, every stub, the loop stubs and a Linux window from
# start_kernel give the same records under both, and the branch engine
# runs the counted call/ret/jmp loop whole (--stats says where the exits
# went).  Where it
# cannot run, vbts says so in one line and picks the step engine.
. "$(dirname "$0")/tap.sh"

cd "$ROOT"
have_vbts && have_decode || { plan 1; skip "engines" "vbts is not built"; exit 0; }
# The plan comes last: the Linux part may not run.

images=()
for f in "$STUBS"/*.bin "$STUBS"/c/*.elf "$STUBS"/bts/*.bin; do [ -f "$f" ] && images+=("$f"); done
loop_image "$TMP/loop.bin" 2000
nasm -f bin -Iguest-stub/include/ -DLOOPS=2000 -DPAD=2 -o "$TMP/loop64.bin" bench/loop.asm
images+=("$TMP/loop.bin" "$TMP/loop64.bin")

# The records of a trace, markers' clocks left out (they differ run to run).
records() {
    "$VBTS_DECODE" "$1" 2>/dev/null | grep -v '^#' | sed -E 's/ t=\+[0-9]+ns//; s/(start|stop [a-z-]+) .*/\1/'
}

st=0
"$VBTS" --engine bogus "$TMP/loop.bin" >/dev/null 2>"$TMP/bogus.err" || st=$?
if [ $st = 125 ] && [ "$(head -n 1 "$TMP/bogus.err")" = "vbts: --engine: 'bogus' is not step or branch" ]; then
    ok "--engine bogus: status 125, named"
else fail "--engine bogus: status 125, named" "status $st" "$(cat "$TMP/bogus.err")"; fi

st=0
"$VBTS" --engine branch --force --trace "$TMP/b.vbts" "$TMP/loop.bin" >/dev/null 2>"$TMP/b.err" || st=$?
# Breakpoints fire on kvm_pvm, in the lab (QEMU 10) and on VMX/SVM
# hardware; a host whose guests fire none (QEMU 7.2's nested SVM,
# LAB_QEMU=system) refuses the branch engine and defaults to steps.
case $VBTS_HOST in
kvm_pvm|kvm_amd|kvm_intel) branch=1 ;;
lab/*) [ "${LAB_QEMU:-}" = system ] && branch=0 || branch=1 ;;
*) branch=0 ;;
esac
[ $branch = 1 ] && default=branch || default=step
if [ $branch = 1 ]; then
    if [ $st = 1 ] && [ "$(grep -B 1 '^vbts: trace ' "$TMP/b.err" | head -n 1)" = "vbts: engine: branch" ]; then
        ok "--engine branch runs here, and stderr names it beside the summary"
    else fail "--engine branch runs here" "status $st" "$(cat "$TMP/b.err")"; fi
else
    if [ $st = 125 ] && [ "$(cat "$TMP/b.err")" = "vbts: --engine branch: hardware breakpoints do not fire in this host's guests" ]; then
        ok "--engine branch: refused in one line (this host's guests fire no breakpoints)"
    else fail "--engine branch: refused in one line" "status $st" "$(cat "$TMP/b.err")"; fi
fi

st=0
"$VBTS" --force --trace "$TMP/d.vbts" "$TMP/loop.bin" >/dev/null 2>"$TMP/d.err" || st=$?
if [ $st = 1 ] && [ "$(grep -B 1 '^vbts: trace ' "$TMP/d.err" | head -n 1)" = "vbts: engine: $default" ]; then
    ok "the default engine here is the $default engine, named on stderr"
else fail "the default engine is $default" "status $st" "$(cat "$TMP/d.err")"; fi

# The summary line counts the engine's exits.
line=$(grep '^vbts: trace ' "$TMP/d.err")
if [[ $line =~ ^vbts:\ trace\ .*:\ 5999\ branches,\ ([0-9]+)\ exits\ in\ [0-9.]+\ s\ \([0-9]+\ branches/s,\ ([0-9.]+)\ exits/branch\)$ ]]; then
    ok "summary line: 5999 branches, ${BASH_REMATCH[1]} exits, ${BASH_REMATCH[2]} exits/branch"
    exits=${BASH_REMATCH[1]}
else fail "summary line: N branches, E exits in S s (R branches/s, X exits/branch)" "$line"; exits=; fi

st=0
"$VBTS" --quiet --force --trace "$TMP/q.vbts" "$TMP/loop.bin" >/dev/null 2>"$TMP/q.err" || st=$?
if [ $st = 1 ] && [ ! -s "$TMP/q.err" ]; then ok "--quiet: neither the engine line nor the summary"
else fail "--quiet: nothing on stderr" "status $st" "$(cat "$TMP/q.err")"; fi

# The loop: 2000 calls, rets and jumps; at most 0.7 exits per record.
# (32-bit, paging off: its pushes are not known not to fault, so it is
# not run whole.)
if [ $branch = 1 ]; then
    if [ -n "$exits" ] && [ "$exits" -le $((5999 * 7 / 10)) ]; then ok "branch engine: $exits exits for 5999 records of the call/ret/jmp loop (at most 0.7 each)"
    else fail "branch engine: at most 0.7 exits per record on the loop" "${exits:-no count}"; fi
    # The same loop in 64-bit mode, two instructions a call: run whole, at
    # most one exit per 50 records (the setup's), and --stats says so: the
    # exits by cause add up to the summary's, one at the loop's exit.
    st=0
    "$VBTS" --engine branch --stats --force --trace "$TMP/l64.vbts" "$TMP/loop64.bin" >/dev/null 2>"$TMP/l64.err" || st=$?
    sum=$(grep '^vbts: trace ' "$TMP/l64.err" | sed -nE 's/.*: ([0-9]+) branches, ([0-9]+) exits.*/\1 \2/p')
    line=$(grep '^vbts: exits: ' "$TMP/l64.err")
    re='^vbts: exits: ([0-9]+) jcc, ([0-9]+) ret, ([0-9]+) indirect, ([0-9]+) cut, ([0-9]+) store, ([0-9]+) handlers, ([0-9]+) loop, ([0-9]+) limit, ([0-9]+) rounds, ([0-9]+) exception, ([0-9]+) probe, ([0-9]+) step$'
    if [ $st = 1 ] && [[ $line =~ $re ]] && [ -n "$sum" ]; then
        n=0
        for i in $(seq 1 12); do n=$((n + BASH_REMATCH[i])); done
        set -- $sum
        if [ "${BASH_REMATCH[9]}" = 1 ] && [ "$n" = "$2" ] && [ "$2" -le $(($1 / 50)) ]; then
            ok "64-bit loop run whole: $2 exits for $1 records; --stats: $n exits by cause, 1 at the loop's exit"
        else fail "64-bit loop run whole, --stats adding up" "$line" "summary: $sum"; fi
    else fail "--stats: one line, exits by cause" "status $st" "$(cat "$TMP/l64.err")"; fi
    st=0
    "$VBTS" --engine branch --stats --quiet --force --trace "$TMP/l64q.vbts" "$TMP/loop64.bin" >/dev/null 2>"$TMP/l64q.err" || st=$?
    if [ $st = 1 ] && [ "$(wc -l <"$TMP/l64q.err")" = 1 ] && grep -q '^vbts: exits: ' "$TMP/l64q.err"; then
        ok "--stats --quiet: the one line"
    else fail "--stats --quiet: the one line" "status $st" "$(cat "$TMP/l64q.err")"; fi
    # Loops over data whose rounds the planner computes (guest-stub/loops.asm,
    # 3,040 records, a loop of 3,000 rounds among them): at most one exit
    # per 50 records; its records are checked against QEMU in oracle.t.
    st=0
    "$VBTS" --engine branch --stats --force --trace "$TMP/ld.vbts" "$STUBS/loops.bin" >/dev/null 2>"$TMP/ld.err" || st=$?
    sum=$(grep '^vbts: trace ' "$TMP/ld.err" | sed -nE 's/.*: ([0-9]+) branches, ([0-9]+) exits.*/\1 \2/p')
    set -- $sum
    if [ $st = 1 ] && [ "${1:-0}" = 3040 ] && [ "${2:-99999}" -le 60 ]; then
        ok "loops over data computed before they run: $2 exits for $1 records"
    else fail "loops over data: at most 60 exits for 3040 records" "status $st" "$(cat "$TMP/ld.err")"; fi
else
    skip "branch engine: exits per record on the loop" "the branch engine cannot run on $VBTS_HOST (vbts said so above)"
    skip "64-bit loop run whole" "the branch engine cannot run on $VBTS_HOST"
    skip "loops over data" "the branch engine cannot run on $VBTS_HOST"
    skip "--stats --quiet" "the branch engine cannot run on $VBTS_HOST"
fi

# Every image under both engines: the same records, the same status.
for img in "${images[@]}"; do
    name=$(basename "$img")
    if [ $branch = 0 ]; then
        skip "$name: step and branch engines give the same records" "the branch engine cannot run on $VBTS_HOST"
        continue
    fi
    for e in step branch; do
        s=0
        timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --engine $e --force --trace "$TMP/$name.$e.vbts" "$img" \
            >/dev/null 2>"$TMP/$name.$e.err" </dev/null || s=$?
        echo $s >"$TMP/$name.$e.st"
        records "$TMP/$name.$e.vbts" >"$TMP/$name.$e.txt"
    done
    n=$(grep -vc -- ' -- ' "$TMP/$name.step.txt")
    if [ "$(cat "$TMP/$name.step.st")" = "$(cat "$TMP/$name.branch.st")" ] && [ "$n" -gt 0 ] &&
       cmp -s "$TMP/$name.step.txt" "$TMP/$name.branch.txt"; then
        ok "$name: step and branch engines give the same $n records, status $(cat "$TMP/$name.step.st")"
    else
        fail "$name: step and branch engines give the same records" \
            "status $(cat "$TMP/$name.step.st") / $(cat "$TMP/$name.branch.st")" \
            "$(diff "$TMP/$name.step.txt" "$TMP/$name.branch.txt" | head -n 20)"
    fi
done

# Linux from start_kernel, one vCPU, 20,000 records: before its first interrupt.
if [ "${VBTS_LINUX:-1}" = 0 ]; then
    skip "Linux start_kernel window: the same records under both engines" "VBTS_LINUX=0"
elif ! "$ROOT/scripts/linux-guest.sh" "$LINUX_GUEST" >"$TMP/guest.log" 2>&1 ||
     ! "$ROOT/scripts/linux-symbols.sh" "$LINUX_GUEST" >"$TMP/sym.log" 2>&1; then
    fail "Linux start_kernel window: the guest and its symbols" "$(tail -n 5 "$TMP/guest.log" "$TMP/sym.log")"
elif [ $branch = 0 ]; then
    skip "Linux start_kernel window: the same records under both engines" "the branch engine cannot run on $VBTS_HOST"
else
    for e in step branch; do
        linux_run sk_$e 1 --engine $e --initrd "$LINUX_GUEST/initramfs.cpio" --append "console=ttyS0 panic=-1 nokaslr quiet" \
            --symbols "$LINUX_GUEST/System.map" --trace-start start_kernel --max-branches 20000 --stop-after-trace \
            --force --trace "$TMP/sk_$e.vbts"
        linux_wait sk_$e
        echo "$rc" >"$TMP/sk_$e.st"
        records "$TMP/sk_$e.vbts" >"$TMP/sk_$e.txt"
    done
    n=$(grep -vc -- ' -- ' "$TMP/sk_step.txt")
    ints=$(grep -c 'interrupt' "$TMP/sk_step.txt")
    if [ "$(cat "$TMP/sk_step.st")" = 0 ] && [ "$(cat "$TMP/sk_branch.st")" = 0 ] && [ "$n" = 20000 ] &&
       [ "$ints" = 0 ] && cmp -s "$TMP/sk_step.txt" "$TMP/sk_branch.txt"; then
        ok "Linux start_kernel window: the same 20000 records under both engines ($(grep -o '[0-9.]* exits/branch' "$TMP/sk_step.err") and $(grep -o '[0-9.]* exits/branch' "$TMP/sk_branch.err"))"
    else
        fail "Linux start_kernel window: the same records under both engines" "status $(cat "$TMP/sk_step.st") / $(cat "$TMP/sk_branch.st"), $n records, $ints interrupts" \
            "$(diff "$TMP/sk_step.txt" "$TMP/sk_branch.txt" | head -n 20)" "$(tail -n 3 "$TMP/sk_branch.err")"
    fi
fi
plan "$TAP_N"
exit $((TAP_FAILED > 0))
