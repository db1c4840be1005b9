#!/bin/bash
# A long window, one run: Linux on 2 vCPUs traced from start_kernel for
# BENCH_LONG records (default 5,000,000) into a .zst file and a unix socket
# at once (a client streams it to a file), with --verify-flow; then the guest
# boots on untraced to its marker and powers off.  Reports records/s, the
# monitor's resident memory after the first tenth of the records and at the
# window's end, guest RAM aside (it must not grow with the trace's length:
# within 10%), and
# reads both copies back with vbts-decode: every record, 0 flow violations.
#   BENCH_LONG       records in the window (default 5000000)
#   BENCH_LONG_TIME  seconds the whole run may take (default 3600)
. "$(dirname "$0")/prelude"
. scripts/linux-cmdline
N=${BENCH_LONG:-5000000}
L=$BUILD/linux
if [ ! -f "$L/bzImage" ] || [ ! -f "$L/System.map" ] || [ ! -f "$L/initramfs.cpio" ]; then
    echo "long window: no Linux guest in $L (make linux-guest)"
    exit 0
fi
S=$T/s.sock
timeout -s TERM "${BENCH_LONG_TIME:-3600}" "$BUILD/vbts" --cpus 2 --memory 256M --initrd "$L/initramfs.cpio" \
    --append "$LINUX_APPEND nokaslr" --symbols "$L/System.map" --trace-start start_kernel \
    --max-branches "$N" --verify-flow --trace "$T/t.vbts.zst" --trace "unix:$S" "$L/bzImage" \
    >"$T/out" 2>"$T/err" </dev/null &
pid=$!
# The monitor itself, not timeout(1) that runs it.
vpid=""
for _ in $(seq 100); do vpid=$(pgrep -P $pid) && break; sleep 0.1; done
for _ in $(seq 600); do [ -S "$S" ] && break; sleep 0.1; done
"$BUILD/vbts-ctl" "unix:$S" stream -o "$T/s.vbts" 2>"$T/ctl.err" &
ctl=$!

# The monitor's resident memory (kB) apart from guest RAM (the one 256 MiB
# mapping, which the booting guest fills whatever vbts does), and the
# records streamed so far (the plain stream: 24 bytes a record, chunk
# headers aside), every half second until the window ends.
rss() {
    awk 'function hex(s,  i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
         /^[0-9a-f]+-[0-9a-f]+ / { split($1, a, "-"); big = hex(a[2]) - hex(a[1]) == 268435456 }
         /^Rss:/ && !big { kb += $2 } END { if (NR) print kb }' "/proc/$vpid/smaps" 2>/dev/null
}
tenth=$((N / 10)) rss_tenth="" rss_end="" rss_max=0 t0=$(now) ended=""
while kill -0 $pid 2>/dev/null; do
    r=$(rss)
    [ -n "$r" ] || break
    got=$(( $(stat -c %s "$T/s.vbts" 2>/dev/null || echo 0) / 24 ))
    if [ -z "$ended" ]; then
        [ "$r" -gt "$rss_max" ] && rss_max=$r
        [ -z "$rss_tenth" ] && [ "$got" -ge "$tenth" ] && rss_tenth=$r
        rss_end=$r
        [ "$got" -ge "$N" ] && ended=1
    fi
    sleep 0.5
done
st=0 cst=0
wait $pid || st=$?
wait $ctl || cst=$?
t1=$(now)

fail=0
say() { echo "long window: $*"; }
marker=$(tr -d '\r' <"$T/out" | grep -c "VBTS-LINUX-OK cpus=2 online=0-1")
[ "$st" = 0 ] && [ "$marker" = 1 ] || {
    say "the guest did not live on to its marker (status $st)"; tail -n 8 "$T/err"; tr -d '\r' <"$T/out" | tail -n 3; fail=1; }
[ "$cst" = 0 ] || { say "vbts-ctl stream: status $cst: $(cat "$T/ctl.err")"; fail=1; }
grep "^vbts: verify-flow" "$T/err" || true
grep -qx "vbts: verify-flow: $N records checked, 0 violations" "$T/err" || fail=1
nz=$("$BUILD/vbts-decode" "$T/t.vbts.zst" 2>"$T/dz.err" | grep -vc -- ' -- ' || true)
ns=$("$BUILD/vbts-decode" "$T/s.vbts" 2>"$T/ds.err" | grep -vc -- ' -- ' || true)
[ "$nz" = "$N" ] && [ "$ns" = "$N" ] || { say "read back: $nz from the .zst, $ns from the socket, of $N"; cat "$T/dz.err" "$T/ds.err"; fail=1; }
win=$(window_seconds "$T/t.vbts.zst")
awk -v n="$N" -v w="$win" -v a="$rss_tenth" -v b="$rss_end" -v m="$rss_max" -v z="$(stat -c %s "$T/t.vbts.zst")" \
    -v all="$(echo "$t1 - $t0" | bc)" 'BEGIN {
    printf "%-32s %12d\n", "records (both copies read back)", n
    printf "%-32s %12.1f\n", "window seconds", w
    printf "%-32s %12.0f\n", "records/s", n / w
    printf "%-32s %12.1f\n", ".zst bytes/record", z / n
    printf "%-32s %12d\n", "RSS kB after a tenth (no RAM)", a
    printf "%-32s %12d\n", "RSS kB at the end (no RAM)", b
    printf "%-32s %12d\n", "RSS kB at most (no RAM)", m
    printf "%-32s %11.1f%%\n", "growth, tenth to end", a ? 100 * (b - a) / a : 0
    printf "%-32s %12.1f\n", "whole run seconds", all }'
if [ -z "$rss_tenth" ] || [ "$(( (rss_end - rss_tenth) * 10 ))" -gt "$rss_tenth" ]; then
    say "resident memory grew by more than 10% from the first tenth of the records to the end"; fail=1
fi
exit $fail
