#!/bin/bash
# Tracer benchmark: one guest, run untraced and traced side by side, and the
# same guest's branches derived by QEMU TCG single-stepping, for scale.
# Prints the ratios measured in this run.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
now() { date +%s.%N; }

printf '%-34s %10s %10s %12s %12s %10s\n' guest records steps "steps/s" "records/s" "slowdown"
for cfg in "20000 0" "20000 2" "5000 20"; do
    set -- $cfg
    loops=$1 pad=$2
    nasm -f bin -Iguest-stub/include/ -DLOOPS=$loops -DPAD=$pad -o "$T/loop.bin" bench/loop.asm
    t0=$(now); "$BUILD/vbts" "$T/loop.bin" >/dev/null 2>&1 || true; t1=$(now)
    "$BUILD/vbts" --force --trace "$T/loop.vbts" "$T/loop.bin" >/dev/null 2>"$T/err" || true
    t2=$(now)
    line=$(grep '^vbts: trace' "$T/err")
    rec=$(sed -E 's/.*: ([0-9]+) branches, ([0-9]+) steps.*/\1/' <<<"$line")
    steps=$(sed -E 's/.*: ([0-9]+) branches, ([0-9]+) steps.*/\2/' <<<"$line")
    awk -v name="loop x$loops, $pad insns/call" -v r="$rec" -v s="$steps" \
        -v plain="$(echo "$t1 - $t0" | bc)" -v traced="$(echo "$t2 - $t1" | bc)" 'BEGIN {
        printf "%-34s %10d %10d %12.0f %12.0f %9.0fx\n", name, r, s, s / traced, r / traced, traced / plain }'
done

# Scale: QEMU TCG single-stepping and logging every instruction of the same
# guest (what the test oracle does), one configuration.
# (BENCH_QEMU=0 leaves it out: in the lab it would be QEMU inside QEMU.)
if [ "${BENCH_QEMU:-1}" != 0 ] && command -v qemu-system-x86_64 >/dev/null; then
    nasm -f bin -Iguest-stub/include/ -DLOOPS=5000 -DPAD=2 -o "$T/q.bin" bench/loop.asm
    t0=$(now)
    "$BUILD/vbts" --trace "$T/q.vbts" "$T/q.bin" >/dev/null 2>&1 || true
    t1=$(now)
    qemu-system-x86_64 -accel tcg -singlestep -d exec,nochain -dfilter 0x100000+0x10000 \
        -D "$T/q.log" -display none -nodefaults -no-reboot -monitor none -serial null \
        -kernel "$T/q.bin" -device isa-debug-exit,iobase=0xf4,iosize=1 >/dev/null 2>&1 || true
    t2=$(now)
    awk -v v="$(echo "$t1 - $t0" | bc)" -v q="$(echo "$t2 - $t1" | bc)" 'BEGIN {
        printf "loop x5000 traced: vbts %.2f s, QEMU TCG -singlestep -d exec %.2f s (boot included): vbts/QEMU time %.2f\n", v, q, v / q }'
fi
