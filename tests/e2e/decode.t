#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# decode.t: vbts-decode on traces that are cut off and on hostile symbol
# files.  A trace without its stop markers (a monitor killed with SIGKILL
# stops between chunks) prints every record, then one line, status 1; a
# symbol name, however long or strange, gives lines of at most 1024 bytes
# of printable ASCII, and valid JSON.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"

# chunks TRACE: "offset cpu count" of each chunk
chunks() {
    python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
o = struct.unpack_from("<I", d, 12)[0]
while o < len(d):
    _, cpu, _, count, _, _ = struct.unpack_from("<IHHIIQ", d, o)
    print(o, cpu, count)
    o += 24 + 24 * count
PY
}
# decode NAME ARGS...: stdout, stderr and status in $TMP/NAME.{out,err,rc}
decode() {
    local name=$1
    shift
    "$VBTS_DECODE" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    echo $? >"$TMP/$name.rc"
}
# incomplete NAME TRACE EXPECTED-STDOUT-FILE WHAT: the checks on a cut-off trace
incomplete() {
    local name=$1 trace=$2 exp=$3 what=$4
    local want="vbts-decode: $trace: trace incomplete: no stop marker"
    if [ "$(cat "$TMP/$name.rc")" = 1 ] && [ "$(cat "$TMP/$name.err")" = "$want" ] &&
       cmp -s "$exp" "$TMP/$name.out"; then
        ok "$what: every record ($(wc -l <"$exp") lines), then 'vbts-decode: FILE: trace incomplete: no stop marker', status 1"
    else
        not_ok "$what"
        diag "status $(cat "$TMP/$name.rc"), stdout $(wc -l <"$TMP/$name.out") lines (want $(wc -l <"$exp"))"
        diag_file "$TMP/$name.err"
    fi
}

# A trace of several chunks: branches64's 52 records, 10 per chunk.
if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    plan 1; skip "vbts-decode on cut-off traces" "no usable /dev/kvm"; exit 0
fi
timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" -q --buffer-size 240 --trace "$TMP/full.vbts" "$STUBS/branches64.bin" \
    >/dev/null 2>"$TMP/vbts.err" </dev/null
for f in text json; do decode "full-$f" --format $f "$TMP/full.vbts"; done
nchunks=$(chunks "$TMP/full.vbts" 2>/dev/null | wc -l)
if [ "$(cat "$TMP/full-text.rc")" = 0 ] && [ ! -s "$TMP/full-text.err" ] && [ "$nchunks" -ge 3 ] &&
   [ "$(grep -c -- ' -- stop ' "$TMP/full-text.out")" = 1 ]; then
    ok "a complete trace ($nchunks chunks, $(wc -l <"$TMP/full-text.out") records) decodes with status 0, nothing on stderr"
else
    # Everything below cuts this trace: without it, one failure says why.
    not_ok "a complete trace of several chunks decodes"; diag "decode status $(cat "$TMP/full-text.rc"), $nchunks chunks"
    diag_file "$TMP/vbts.err"; diag_file "$TMP/full-text.err"
    plan "$TAP_N"; exit 1
fi

# Cut where SIGKILL leaves a file: at a chunk boundary, here before the last
# chunk (the one with the stop marker).
read -r last_off _ <<<"$(chunks "$TMP/full.vbts" | tail -n 1)"
head -c "$last_off" "$TMP/full.vbts" >"$TMP/cut.vbts"
kept=$(chunks "$TMP/cut.vbts" | awk '{ n += $3 } END { print n }')
for f in text json; do
    decode "cut-$f" --format $f "$TMP/cut.vbts"
    head -n "$kept" "$TMP/full-$f.out" >"$TMP/cut-$f.exp"
    incomplete "cut-$f" "$TMP/cut.vbts" "$TMP/cut-$f.exp" "cut at the last chunk boundary ($f)"
done

# Only the stop marker gone (the last chunk one record shorter): the output
# is the full decode without its stop line.
python3 - "$TMP/full.vbts" "$TMP/nostop.vbts" "$last_off" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
o = int(sys.argv[3])
count = struct.unpack_from("<I", d, o + 8)[0]
struct.pack_into("<I", d, o + 8, count - 1)
open(sys.argv[2], "wb").write(d[:-24])
PY
for f in text json; do
    decode "nostop-$f" --format $f "$TMP/nostop.vbts"
    grep -v -e ' -- stop ' -e '"kind":"stop"' "$TMP/full-$f.out" >"$TMP/nostop-$f.exp"
    incomplete "nostop-$f" "$TMP/nostop.vbts" "$TMP/nostop-$f.exp" "stop marker removed ($f)"
done

# A header alone: a monitor killed before it wrote its first chunk.
head -c 32 "$TMP/full.vbts" >"$TMP/header.vbts"
decode header "$TMP/header.vbts"
: >"$TMP/empty.exp"
incomplete header "$TMP/header.vbts" "$TMP/empty.exp" "header only"
# The same through a pipe: FILE is "-".
head -c "$last_off" "$TMP/full.vbts" | "$VBTS_DECODE" - >"$TMP/pipe.out" 2>"$TMP/pipe.err"
rc=$?
if [ $rc = 1 ] && [ "$(cat "$TMP/pipe.err")" = "vbts-decode: -: trace incomplete: no stop marker" ] &&
   cmp -s "$TMP/pipe.out" "$TMP/cut-text.exp"; then ok "cut-off trace on stdin: 'vbts-decode: -: trace incomplete: no stop marker', status 1"
else not_ok "cut-off trace on stdin"; diag "status $rc"; diag_file "$TMP/pipe.err"; fi

# Several vCPUs: each one with records needs its stop; one without any
# record (a window that closed before it entered) needs none.
python3 - "$TMP" <<'PY'
import struct, sys
def rec(fr, to, fl): return struct.pack("<QQQ", fr, to, fl)
start = rec(0, 1 << 60, 1 << 63 | 1 << 48)
stop = rec(0, 1 << 60, 1 << 63 | 2 << 48)
jmp = rec(0x1000, 0x2000, 2 << 8)
def chunk(cpu, seq, recs): return struct.pack("<IHHIIQ", 0x4B484356, cpu, 0, len(recs), 0, seq) + b"".join(recs)
def write(name, chunks):
    hdr = b"VBTS\r\n\x1a\n" + struct.pack("<HHIIIII", 1, 0, 32, 24, 1, 3, 0)
    open(sys.argv[1] + "/" + name, "wb").write(hdr + b"".join(chunks))
write("cpu1-cut.vbts", [chunk(0, 0, [start, jmp]), chunk(1, 0, [start, jmp]), chunk(0, 2, [jmp, stop])])
write("cpu1-none.vbts", [chunk(0, 0, [start, jmp]), chunk(0, 2, [jmp, stop])])
write("cpu0-cut.vbts", [chunk(0, 0, [start, jmp]), chunk(1, 0, [start, jmp, stop])])
PY
for t in cpu1-cut:6 cpu0-cut:5; do
    lines=${t#*:} t=${t%:*}
    decode "$t" "$TMP/$t.vbts"
    if [ "$(cat "$TMP/$t.rc")" = 1 ] && [ "$(wc -l <"$TMP/$t.out")" = "$lines" ] &&
       [ "$(cat "$TMP/$t.err")" = "vbts-decode: $TMP/$t.vbts: trace incomplete: no stop marker" ]; then
        ok "3 vCPUs, ${t%%-*} has records but no stop marker: incomplete, status 1"
    else not_ok "3 vCPUs, ${t%%-*} without stop"; diag "status $(cat "$TMP/$t.rc")"; diag_file "$TMP/$t.err"; fi
done
decode cpu1-none "$TMP/cpu1-none.vbts"
if [ "$(cat "$TMP/cpu1-none.rc")" = 0 ] && [ ! -s "$TMP/cpu1-none.err" ] && [ "$(wc -l <"$TMP/cpu1-none.out")" = 4 ]; then
    ok "3 vCPUs, only vCPU 0 has records, and its stop marker: complete, status 0"
else not_ok "vCPUs without records need no stop marker"; diag "status $(cat "$TMP/cpu1-none.rc")"; diag_file "$TMP/cpu1-none.err"; fi

# --- symbols: long names and bytes that are not printable ASCII -------------
# An ELF file (the only symbol file with names over 4 KiB) whose one symbol
# at 0x100000 is 5,000 bytes: 1,500 quote-backslash pairs, then 2,000 As.
# (The symbols fuzz target's seed, made by fuzz/seeds.py.)
cp "$ROOT/fuzz/corpus/symbols/elf64_long_name" "$TMP/long.elf"
# A System.map whose names hold an escape sequence, BEL, DEL, UTF-8, a C1
# control (CSI, U+009B) and a quote: every such byte must print as '?'.
printf '0000000000100000 t esc\033[2Jred\007\n0000000000100080 t del\177utf\303\251\n0000000000100090 t c1\302\23331m"q\\\n' >"$TMP/ctl.map"
# lines_ok FILE FORMAT: every line <= 1024 bytes of printable ASCII, JSON lines valid
lines_ok() {
    python3 - "$1" "$2" <<'PY'
import json, sys
n = 0
for raw in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    n += 1
    assert len(raw) < 1024, "line %d: %d bytes" % (n, len(raw))
    assert all(0x20 <= c <= 0x7e for c in raw), "line %d: %r" % (n, raw[:80])
    if sys.argv[2] == "json":
        o = json.loads(raw)
        for k in ("from_sym", "to_sym"):
            assert k not in o or len(o[k]) <= 400, "line %d: %s of %d" % (n, k, len(o[k]))
print(n)
PY
}
for f in text json; do
    decode "long-$f" --format $f --symbols "$TMP/long.elf" "$TMP/full.vbts"
    n=$(lines_ok "$TMP/long-$f.out" $f 2>&1)
    # Cut at 400 bytes written: 200 raw pairs in text, 100 escaped ones in JSON.
    if [ $f = text ]; then want=$(python3 -c 'print("\"\\" * 200)'); got=$(sed -n 3p "$TMP/long-$f.out" | awk '{ print $6 }')
    else want=$(python3 -c 'print("\"\\" * 100)'); got=$(sed -n 3p "$TMP/long-$f.out" | python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["from_sym"])'); fi
    if [ "$(cat "$TMP/long-$f.rc")" = 0 ] && [ "$n" = "$(wc -l <"$TMP/full-$f.out")" ] && [ "$got" = "$want" ]; then
        ok "a 5,000-byte symbol name ($f): $n lines under 1024 bytes, the name cut at 400 bytes"
    else not_ok "a 5,000-byte symbol name ($f)"; diag "status $(cat "$TMP/long-$f.rc"), check: $n"; diag "got: ${got:0:80}"; diag_file "$TMP/long-$f.err"; fi
done
for f in text json; do
    decode "ctl-$f" --format $f --symbols "$TMP/ctl.map" "$TMP/full.vbts"
    n=$(lines_ok "$TMP/ctl-$f.out" $f 2>&1)
    c1='c1??31m"q\+0x'
    [ $f = json ] && c1='c1??31m\"q\\+0x'
    if [ "$(cat "$TMP/ctl-$f.rc")" = 0 ] && [ "$n" = "$(wc -l <"$TMP/full-$f.out")" ] &&
       grep -qF 'esc?[2Jred?+0x' "$TMP/ctl-$f.out" && grep -qF 'del?utf??+0x' "$TMP/ctl-$f.out" &&
       grep -qF "$c1" "$TMP/ctl-$f.out"; then
        ok "control characters and non-ASCII bytes in symbol names print as '?' ($f)"
    else not_ok "control characters in symbol names ($f)"; diag "status $(cat "$TMP/ctl-$f.rc"), check: $n"; grep -m 3 -e esc -e del -e c1 "$TMP/ctl-$f.out" | cat -v | diag; fi
done

plan "$TAP_N"
exit $((TAP_FAILED > 0))
