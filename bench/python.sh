#!/bin/bash
# Python package benchmark (docs/python.md), side by side in one run: a
# .zst trace of BENCH_PY_RECORDS records (default 10 million) read into
# NumPy arrays by the vbts package (Trace.chunks(); and into one array,
# Trace.to_numpy()) against vbts-decode's text to /dev/null, alternately,
# BENCH_RUNS times each (default 5), the medians: seconds and records/s of
# whole runs (the interpreter's start and NumPy's import included).  The
# records are a Linux window's (BENCH_LINUX branches from start_kernel,
# default 100000; 0 or no guest in $BUILD/linux: a call/ret loop's), again
# and again (bench/big-trace).
. "$(dirname "$0")/prelude"
N=${BENCH_PY_RECORDS:-10000000}
LINUX_N=${BENCH_LINUX:-100000}
L=$BUILD/linux
PY=$(scripts/python)
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
if ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "python bench: $PY has no NumPy (Debian: python3-numpy; PYTHON=... picks another)" >&2
    exit 1
fi

if [ "$LINUX_N" != 0 ] && [ -f "$L/bzImage" ] && [ -f "$L/System.map" ] && [ -f "$L/initramfs.cpio" ]; then
    src="a Linux window's $LINUX_N records"
    "$BUILD/vbts" --force --trace "$T/src.vbts" --cpus 1 --initrd "$L/initramfs.cpio" \
        --append "console=ttyS0 panic=-1 nokaslr quiet" --symbols "$L/System.map" --trace-start start_kernel \
        --max-branches "$LINUX_N" --stop-after-trace "$L/bzImage" >/dev/null 2>"$T/err" ||
        { echo "python bench: the Linux window was not traced:" >&2; cat "$T/err" >&2; exit 1; }
else
    src="a call/ret loop's records"
    nasm -f bin -Iguest-stub/include/ -DLOOPS=100000 -DPAD=0 -o "$T/loop.bin" bench/loop.asm
    "$BUILD/vbts" --force --trace "$T/src.vbts" "$T/loop.bin" >/dev/null 2>&1 || true
fi
python3 bench/big-trace "$T/src.vbts" "$N" "$T/big.vbts" "$T/big.vbts.zst"
rm -f "$T/big.vbts"

# The reader: branch records into NumPy, counted (markers apart).
cat >"$T/read.py" <<'PY'
import sys
import vbts
with vbts.open(sys.argv[2]) as t:
    if sys.argv[1] == "chunks":
        n = sum(a.size for a in t.chunks())
    else:
        n = t.to_numpy().size
print(n + len(t.markers))
PY
export VBTS_LIB=$BUILD/libvbtsdecode.so PYTHONPATH=$PWD/python
n_py=$("$PY" "$T/read.py" chunks "$T/big.vbts.zst")
n_dec=$("$BUILD/vbts-decode" "$T/big.vbts.zst" | wc -l)
[ "$n_py" = "$N" ] && [ "$n_dec" = "$N" ] ||
    { echo "python bench: records read: python $n_py, vbts-decode $n_dec, want $N" >&2; exit 1; }

# dt CMD...: wall seconds of one run.
dt() { local t0 t1; t0=$(now); "$@" >/dev/null; t1=$(now); echo "$t1 - $t0" | bc; }
: >"$T/dec"; : >"$T/chunks"; : >"$T/numpy"
for _ in $(seq "${BENCH_RUNS:-5}"); do
    dt "$BUILD/vbts-decode" "$T/big.vbts.zst" >>"$T/dec"
    dt "$PY" "$T/read.py" chunks "$T/big.vbts.zst" >>"$T/chunks"
    dt "$PY" "$T/read.py" numpy "$T/big.vbts.zst" >>"$T/numpy"
done
echo "reading $N records ($src, $(stat -c %s "$T/big.vbts.zst") bytes .zst), medians of ${BENCH_RUNS:-5} runs:"
awk -v n="$N" -v d="$(median <"$T/dec")" -v c="$(median <"$T/chunks")" -v a="$(median <"$T/numpy")" 'BEGIN {
    printf "%-40s %8.3f s %12.0f records/s\n", "vbts-decode FILE.zst > /dev/null", d, n / d
    printf "%-40s %8.3f s %12.0f records/s  python/vbts-decode rate %.2f\n", "python: vbts.open(FILE.zst).chunks()", c, n / c, d / c
    printf "%-40s %8.3f s %12.0f records/s  python/vbts-decode rate %.2f\n", "python: vbts.open(FILE.zst).to_numpy()", a, n / a, d / a }'
