#!/bin/bash
# Tracer benchmark, one run, side by side: each guest untraced, then traced
# by the step engine and by the branch engine (where this host runs it),
# with exits per record and records/s, and below each row what caused the
# exits (vbts --stats); a Linux window from start_kernel under both; and
# QEMU TCG's branch trace of a loop stub, as a time ratio.
. "$(dirname "$0")/prelude"

nasm -f bin -Iguest-stub/include/ -DLOOPS=1 -DPAD=0 -o "$T/one.bin" bench/loop.asm
engines="step branch"
if "$BUILD/vbts" --engine branch --trace "$T/one.vbts" "$T/one.bin" 2>&1 | grep -q -- '--engine branch:'; then
    engines=step
    "$BUILD/vbts" --engine branch --trace "$T/one.vbts" "$T/one.bin" 2>&1 | grep -- '--engine branch:' || true
fi

# traced NAME PLAIN_SECONDS ENGINE VBTS-ARGS...: one traced run, one table row.
traced() {
    local name=$1 plain=$2 e=$3
    shift 3
    local t0 t1
    t0=$(now)
    "$BUILD/vbts" --engine "$e" --stats --force --trace "$T/t.vbts" "$@" >/dev/null 2>"$T/err" || true
    t1=$(now)
    local line rec exits
    line=$(grep '^vbts: trace' "$T/err") || { echo "$name ($e): no summary line"; cat "$T/err"; return 1; }
    rec=$(sed -E 's/.*: ([0-9]+) branches, ([0-9]+) exits.*/\1/' <<<"$line")
    exits=$(sed -E 's/.*: ([0-9]+) branches, ([0-9]+) exits.*/\2/' <<<"$line")
    local win
    win=$(window_seconds "$T/t.vbts")
    awk -v name="$name" -v e="$e" -v r="$rec" -v x="$exits" -v plain="$plain" -v win="$win" \
        -v traced="$(echo "$t1 - $t0" | bc)" 'BEGIN {
        printf "%-30s %-7s %9d %9d %10.2f %11.0f %9.2f %9.2f %9s\n", name, e, r, x, x / r, r / win,
               win, traced, (plain > 0 ? sprintf("%.1fx", traced / plain) : "-") }'
    # What caused the exits: the stretches' ends by kind, exceptions, interrupt probes, steps.
    grep '^vbts: exits: ' "$T/err" | sed 's/^vbts: exits: /    exits by cause: /' || true
}

# records/s over the trace window (its start and stop markers); seconds: the
# window, and the whole run; slowdown: the whole run against the untraced one.
printf '%-30s %-7s %9s %9s %10s %11s %9s %9s %9s\n' guest engine records exits "exits/rec" "records/s" "window s" "run s" "slowdown"
for cfg in "20000 0" "20000 2" "5000 20"; do
    set -- $cfg
    nasm -f bin -Iguest-stub/include/ -DLOOPS=$1 -DPAD=$2 -o "$T/loop.bin" bench/loop.asm
    t0=$(now); "$BUILD/vbts" "$T/loop.bin" >/dev/null 2>&1 || true; t1=$(now)
    for e in $engines; do
        traced "loop x$1, $2 insns/call" "$(echo "$t1 - $t0" | bc)" "$e" "$T/loop.bin"
    done
done

# A Linux window: start_kernel on one vCPU, 20,000 records (before its first interrupt).
L=$BUILD/linux
if [ -f "$L/bzImage" ] && [ -f "$L/System.map" ] && [ -f "$L/initramfs.cpio" ]; then
    for e in $engines; do
        traced "Linux start_kernel, 20000" 0 "$e" --cpus 1 --initrd "$L/initramfs.cpio" \
            --append "console=ttyS0 panic=-1 nokaslr quiet" --symbols "$L/System.map" \
            --trace-start start_kernel --max-branches 20000 --stop-after-trace "$L/bzImage"
    done
else
    echo "Linux start_kernel window: no guest in $L (make linux-guest)"
fi

# Scale: QEMU TCG's branch trace of the same loop (-singlestep -d exec logs
# every instruction; the branches follow from it), 200,000 iterations, so
# that neither boot counts.  (BENCH_QEMU=0 leaves it out: in the lab it
# would be QEMU inside QEMU.)
if [ "${BENCH_QEMU:-1}" != 0 ] && command -v qemu-system-x86_64 >/dev/null; then
    nasm -f bin -Iguest-stub/include/ -DLOOPS=200000 -DPAD=0 -o "$T/q.bin" bench/loop.asm
    t0=$(now)
    "$BUILD/vbts" --quiet --trace "$T/q.vbts" "$T/q.bin" >/dev/null 2>&1 || true
    t1=$(now)
    qemu-system-x86_64 -accel tcg -singlestep -d exec,nochain -dfilter 0x100000+0x10000 \
        -D "$T/q.log" -display none -nodefaults -no-reboot -monitor none -serial null \
        -kernel "$T/q.bin" -device isa-debug-exit,iobase=0xf4,iosize=1 >/dev/null 2>&1 || true
    t2=$(now)
    awk -v v="$(echo "$t1 - $t0" | bc)" -v q="$(echo "$t2 - $t1" | bc)" 'BEGIN {
        printf "loop x200000 (600,000 records): vbts (default engine) %.2f s, QEMU TCG -singlestep -d exec %.2f s: vbts/QEMU time %.2f\n", v, q, v / q }'
fi
