#!/bin/bash
# Compression benchmark, one run, side by side (docs/format.md, "Compressed
# traces"): the loop and a Linux window traced into a plain file and into a
# .zst, alternately, BENCH_RUNS times each: bytes per record and records/s of
# both; vbts-decode of a 10-million-record kernel trace, plain and
# compressed; and, where the kernel is unpacked on the host, Debian's LZ4
# kernel against the same kernel as gzip -9 (the kernel's default), the
# time to reach start_kernel.
#   BENCH_LOOPS  loop iterations (3 records each; default 200000)
#   BENCH_LINUX  branches in the Linux window (default 100000; 0: none)
#   BENCH_DECODE records in the decode test (default 10000000; 0: none)
#   BENCH_RUNS   runs of each kind, the median reported (default 5)
. "$(dirname "$0")/prelude"
LOOPS=${BENCH_LOOPS:-200000}
LINUX_N=${BENCH_LINUX:-100000}
DECODE_N=${BENCH_DECODE:-10000000}
L=$BUILD/linux
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run OUT VBTS-ARGS...: one traced run into OUT; prints records/s over the
# window and the records (the summary line's branches).
run() {
    local out=$1 line rec
    shift
    "$BUILD/vbts" --force --trace "$out" "$@" >/dev/null 2>"$T/err" || true
    line=$(grep '^vbts: trace' "$T/err") || { echo "no summary line:" >&2; cat "$T/err" >&2; return 1; }
    rec=$(sed -E 's/.*: ([0-9]+) branches, .*/\1/' <<<"$line")
    awk -v r="$rec" -v w="$(window_seconds "$out")" 'BEGIN { printf "%.0f %d\n", r / w, r }'
}

# side NAME VBTS-ARGS...: plain and .zst, alternately, BENCH_RUNS times; one row.
side() {
    local name=$1
    shift
    : >"$T/p.rate"
    : >"$T/z.rate"
    for _ in $(seq "${BENCH_RUNS:-5}"); do
        run "$T/t.vbts" "$@" >>"$T/p.rate"
        run "$T/t.vbts.zst" "$@" >>"$T/z.rate"
    done
    local pr zr n pb zb
    pr=$(cut -d' ' -f1 "$T/p.rate" | median)
    zr=$(cut -d' ' -f1 "$T/z.rate" | median)
    n=$(head -n 1 "$T/p.rate" | cut -d' ' -f2)
    pb=$(stat -c %s "$T/t.vbts")
    zb=$(stat -c %s "$T/t.vbts.zst")
    zstd -qdc "$T/t.vbts.zst" | "$BUILD/vbts-decode" - >/dev/null ||
        { echo "$name: zstd -d of the .zst does not decode" >&2; return 1; }
    awk -v name="$name" -v n="$n" -v pb="$pb" -v zb="$zb" -v pr="$pr" -v zr="$zr" 'BEGIN {
        printf "%-28s %9d %9.2f %9.3f %8.0fx %10.0f %10.0f %8.3f\n", name, n, pb / n, zb / n, pb / zb, pr, zr, zr / pr }'
}

printf '%-28s %9s %9s %9s %9s %10s %10s %8s\n' trace records "B/rec" "B/rec zst" smaller "rec/s" "rec/s zst" "zst/plain"
nasm -f bin -Iguest-stub/include/ -DLOOPS="$LOOPS" -DPAD=0 -o "$T/loop.bin" bench/loop.asm
side "loop x$LOOPS" "$T/loop.bin"
have_linux=0
[ -f "$L/bzImage" ] && [ -f "$L/System.map" ] && [ -f "$L/initramfs.cpio" ] && have_linux=1
LARGS=(--cpus 1 --initrd "$L/initramfs.cpio" --append "console=ttyS0 panic=-1 nokaslr quiet"
       --symbols "$L/System.map")
if [ "$have_linux" = 1 ] && [ "$LINUX_N" != 0 ]; then
    side "Linux start_kernel, $LINUX_N" "${LARGS[@]}" --trace-start start_kernel \
        --max-branches "$LINUX_N" --stop-after-trace "$L/bzImage"
    cp "$T/t.vbts" "$T/linux.vbts"
elif [ "$have_linux" = 0 ]; then
    echo "Linux window: no guest in $L (make linux-guest)"
fi

# Decoding: the Linux window's records, again and again, to DECODE_N
# records, plain and compressed as vbts does (bench/big-trace).
if [ -f "$T/linux.vbts" ] && [ "$DECODE_N" != 0 ]; then
    python3 bench/big-trace "$T/linux.vbts" "$DECODE_N" "$T/big.vbts" "$T/big.vbts.zst"
    zstd -qdc "$T/big.vbts.zst" | cmp -s - "$T/big.vbts" || { echo "decode bench: the .zst is not the file" >&2; exit 1; }
    dt() { local t0 t1; t0=$(now); "$BUILD/vbts-decode" "$1" >/dev/null; t1=$(now); echo "$t1 - $t0" | bc; }
    : >"$T/dp"
    : >"$T/dz"
    for _ in 1 2 3; do dt "$T/big.vbts" >>"$T/dp"; dt "$T/big.vbts.zst" >>"$T/dz"; done
    awk -v n="$DECODE_N" -v p="$(median <"$T/dp")" -v z="$(median <"$T/dz")" \
        -v pb="$(stat -c %s "$T/big.vbts")" -v zb="$(stat -c %s "$T/big.vbts.zst")" 'BEGIN {
        printf "vbts-decode to text, %d kernel records: plain %.2f s (%d MB), .zst %.2f s (%.1f MB): zst/plain time %.2f\n",
               n, p, pb / 1e6, z, zb / 1e6, z / p }'
fi

# Booting: Debian's LZ4 kernel and the same kernel as gzip -9, to
# start_kernel (one branch traced there ends the run), alternately.
if [ "$have_linux" = 1 ] && [ "${BENCH_BOOT:-1}" != 0 ]; then
    tests/e2e/repack-kernel "$L/bzImage" gzip "$T/gzip.bzImage" --level 9
    boot() {
        local t0 t1
        t0=$(now)
        "$BUILD/vbts" --force --trace "$T/b.vbts" "${LARGS[@]}" --trace-start start_kernel \
            --max-branches 1 --stop-after-trace "$1" >/dev/null 2>&1 || true
        t1=$(now)
        "$BUILD/vbts-decode" "$T/b.vbts" 2>/dev/null | grep -q -- '->' || { echo "boot $1: start_kernel not reached" >&2; return 1; }
        echo "$t1 - $t0" | bc
    }
    : >"$T/bl"
    : >"$T/bg"
    for _ in 1 2 3; do boot "$L/bzImage" >>"$T/bl"; boot "$T/gzip.bzImage" >>"$T/bg"; done
    awk -v l="$(median <"$T/bl")" -v g="$(median <"$T/bg")" 'BEGIN {
        printf "kernel to start_kernel: LZ4 (Debian) %.2f s, gzip -9 %.2f s: gzip/LZ4 time %.3f\n", l, g, g / l }'
fi
