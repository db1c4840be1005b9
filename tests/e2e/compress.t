#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compress.t: compressed traces (docs/format.md, "Compressed traces").  A
# --trace FILE.zst holds the plain file's bytes as zstd frames; readers
# tell it by its magic, from files, pipes and sockets; a socket client may
# ask for the same frames (HELLO option ZSTD, docs/protocol.md).  zstd(1)
# is the independent judge of the bytes.
. "$(dirname "$0")/tap.sh"

CTL=$(dirname "$VBTS_DECODE")/vbts-ctl
N=17
plan $N

if ! have_vbts || ! have_decode || [ ! -x "$CTL" ] || ! command -v zstd >/dev/null; then
    for i in $(seq $N); do skip "compress test $i" "monitor, decoder, vbts-ctl or zstd(1) missing"; done
    exit 0
fi

# 3 records an iteration, and start, ctx-arrive, stop: the lab (TCG) runs fewer.
ITER=20000
case $VBTS_HOST in lab/*) ITER=5000 ;; esac
RECS=$((3 * ITER + 2))
loop_image "$TMP/g.bin" $ITER
loop_image "$TMP/spin.bin" 100000000
S=$TMP/s.sock
wait_sock() { for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }

# 1-7: one run, three destinations: a plain file, a .zst file, and a
# socket whose client asks for compression (vbts-decode); then a run with
# a plain file and vbts-ctl asking.  (One client per run: a second one
# would start where the buffer is when it comes.)
rm -f "$S"
timeout -k 5 120 "$VBTS" --trace "$TMP/a.vbts" --trace "$TMP/a.vbts.zst" --trace "unix:$S" \
    "$TMP/g.bin" >"$TMP/a.out" 2>"$TMP/a.err" </dev/null &
pid=$!
wait_sock "$S"
"$VBTS_DECODE" --compress "unix:$S" >"$TMP/sock.txt" 2>"$TMP/sock.err"
dst=$?
wait $pid
st=$?
rm -f "$S"
timeout -k 5 120 "$VBTS" --trace "$TMP/c.vbts" --trace "unix:$S" "$TMP/g.bin" >/dev/null 2>"$TMP/c.err" </dev/null &
pid=$!
wait_sock "$S"
"$CTL" "unix:$S" stream --compress -o "$TMP/ctl.zst" 2>"$TMP/ctl.err"
cst=$?
wait $pid
"$VBTS_DECODE" "$TMP/a.vbts" >"$TMP/a.txt" 2>"$TMP/a.derr"
if [ $st = 1 ] && [ "$(grep -c . "$TMP/a.txt")" = $RECS ] && zstd -qdc "$TMP/a.vbts.zst" | cmp -s - "$TMP/a.vbts"; then
    ok "zstd -d of the .zst file is the plain file of the same run, byte for byte ($RECS records, status 1 kept)"
else
    not_ok "zstd -d of the .zst file is the plain file (status $st)"; diag_file "$TMP/a.err"
fi
plain=$(stat -c %s "$TMP/a.vbts") packed=$(stat -c %s "$TMP/a.vbts.zst")
if [ $((packed * 15)) -le "$plain" ]; then
    ok "the loop's trace is $((plain / packed))x smaller as .zst ($plain bytes, $packed compressed)"
else
    not_ok "the loop's .zst is at least 15x smaller ($plain bytes, $packed compressed)"
fi
"$VBTS_DECODE" "$TMP/a.vbts.zst" >"$TMP/z.txt" 2>"$TMP/z.err"
zst=$?
cmp -s "$TMP/z.txt" "$TMP/a.txt" && [ $zst = 0 ] && [ ! -s "$TMP/z.err" ] &&
    ok "vbts-decode FILE.zst prints the plain file's text, status 0" ||
    { not_ok "vbts-decode FILE.zst == plain (status $zst)"; diag_file "$TMP/z.err"; }
"$VBTS_DECODE" --format json - <"$TMP/a.vbts.zst" >"$TMP/z.json" 2>"$TMP/zj.err"
zjs=$?
cat "$TMP/a.vbts.zst" | "$VBTS_DECODE" - >"$TMP/zp.txt" 2>&1
zps=$?
"$VBTS_DECODE" --format json "$TMP/a.vbts" >"$TMP/a.json"
if [ $zjs = 0 ] && [ $zps = 0 ] && cmp -s "$TMP/z.json" "$TMP/a.json" && cmp -s "$TMP/zp.txt" "$TMP/a.txt"; then
    ok "told by its magic, not its name: stdin and a pipe read it (text and JSON)"
else
    not_ok "compressed stdin and pipe (status $zjs, $zps)"; diag_file "$TMP/zj.err"
fi
if [ $dst = 0 ] && cmp -s "$TMP/sock.txt" "$TMP/a.txt"; then
    ok "vbts-decode --compress unix:S prints the file's text"
else
    not_ok "vbts-decode --compress unix:S == file (status $dst)"; diag_file "$TMP/sock.err"
fi
if [ $cst = 0 ] && zstd -qdc "$TMP/ctl.zst" | cmp -s - "$TMP/c.vbts"; then
    ok "vbts-ctl stream --compress: zstd frames whose zstd -d is the file, byte for byte ($(stat -c %s "$TMP/ctl.zst") bytes sent)"
else
    not_ok "vbts-ctl stream --compress == file (status $cst)"; diag_file "$TMP/ctl.err"
fi
[ "$(stat -c %s "$TMP/ctl.zst")" -le $((plain / 15)) ] &&
    ok "the compressed socket stream is at least 15x smaller than the plain one" ||
    not_ok "the compressed socket stream is at least 15x smaller ($(stat -c %s "$TMP/ctl.zst") bytes)"

# 8: cut off inside its last frame, the file decodes to the frame before and
# says so; nothing after the cut is invented.
head -c $((packed - 7)) "$TMP/a.vbts.zst" >"$TMP/cut.zst"
"$VBTS_DECODE" "$TMP/cut.zst" >"$TMP/cut.txt" 2>"$TMP/cut.err"
cut_st=$?
n=$(grep -c . "$TMP/cut.txt")
if [ $cut_st = 1 ] && [ "$(cat "$TMP/cut.err")" = "vbts-decode: $TMP/cut.zst: trace incomplete: no stop marker" ] &&
   [ "$n" -lt $RECS ] && [ "$n" -ge $((RECS - 4096 - 2)) ] && cmp -s "$TMP/cut.txt" <(head -n "$n" "$TMP/a.txt"); then
    ok "a .zst cut inside its last frame: the records before it ($n), then 'trace incomplete', status 1"
else
    not_ok "a cut .zst (status $cut_st, $n records)"; diag_file "$TMP/cut.err"
fi

# 9: a flipped byte inside a frame: zstd's checksum catches it.
cp "$TMP/a.vbts.zst" "$TMP/bad.zst"
printf '\x55' | dd of="$TMP/bad.zst" bs=1 seek=$((packed / 2)) conv=notrunc 2>/dev/null
"$VBTS_DECODE" "$TMP/bad.zst" >"$TMP/bad.txt" 2>"$TMP/bad.err"
bad_st=$?
if [ $bad_st = 1 ] && grep -Eq "^vbts-decode: $TMP/bad.zst: corrupt compressed frame at (byte )?offset [0-9]+" "$TMP/bad.err" &&
   cmp -s "$TMP/bad.txt" <(head -n "$(grep -c . "$TMP/bad.txt")" "$TMP/a.txt"); then
    ok "a corrupt frame: the records before it, then 'corrupt compressed frame', status 1"
else
    not_ok "a corrupt frame (status $bad_st)"; diag_file "$TMP/bad.err"
fi

# 10: a monitor killed while it writes a .zst: whole frames, said incomplete.
# (vbts itself in the background, not under timeout: kill -9 must reach it.)
"$VBTS" --trace "$TMP/k.vbts.zst" "$TMP/spin.bin" >/dev/null 2>"$TMP/k.err" </dev/null &
pid=$!
for _ in $(seq 400); do [ "$(stat -c %s "$TMP/k.vbts.zst" 2>/dev/null || echo 0)" -gt 600 ] && break; sleep 0.05; done
kill -9 $pid
wait_bounded $pid 10 2>/dev/null
"$VBTS_DECODE" "$TMP/k.vbts.zst" >"$TMP/k.txt" 2>"$TMP/k.derr"
k_st=$?
if [ $k_st = 1 ] && [ "$(cat "$TMP/k.derr")" = "vbts-decode: $TMP/k.vbts.zst: trace incomplete: no stop marker" ] &&
   [ "$(grep -c . "$TMP/k.txt")" -gt 4096 ]; then
    ok "a monitor killed (-9) while writing .zst: $(grep -c . "$TMP/k.txt") records in whole frames, then 'trace incomplete'"
else
    not_ok "killed while writing .zst (status $k_st, $(grep -c . "$TMP/k.txt") records)"; diag_file "$TMP/k.derr"
fi

# 11-13: --compress where it does not belong: usage errors, nothing touched.
"$VBTS_DECODE" --compress "$TMP/a.vbts" >/dev/null 2>"$TMP/u1.err"
[ $? = 2 ] && grep -q "^vbts-decode: --compress is for a monitor's socket (unix:PATH or tcp:HOST:PORT), not '$TMP/a.vbts'" "$TMP/u1.err" &&
    ok "vbts-decode --compress FILE: usage error, status 2" ||
    { not_ok "vbts-decode --compress FILE"; diag_file "$TMP/u1.err"; }
"$CTL" "unix:$TMP/none" status --compress >/dev/null 2>"$TMP/u2.err"
[ $? = 2 ] && [ "$(cat "$TMP/u2.err")" = "vbts-ctl: status: --compress is for stream (see --help)" ] &&
    ok "vbts-ctl status --compress: usage error, status 2" ||
    { not_ok "vbts-ctl status --compress"; diag_file "$TMP/u2.err"; }
"$VBTS_DECODE" --help | grep -q -- '--compress' && "$CTL" --help | grep -q -- 'stream \[-o FILE\] \[--compress\]' &&
    "$VBTS" --help | grep -q 'named \*.zst is written zstd-compressed' &&
    ok "--help of vbts, vbts-decode and vbts-ctl name compression" ||
    not_ok "--help names compression"

# 14: a .zst name that cannot be written: said at once, status 125.
"$VBTS" --trace "$TMP/no/such/dir/t.vbts.zst" "$TMP/g.bin" >/dev/null 2>"$TMP/nw.err" </dev/null
nw=$?
[ $nw = 125 ] && grep -q "t.vbts.zst" "$TMP/nw.err" && [ "$(grep -c . "$TMP/nw.err")" = 1 ] &&
    ok "an unwritable .zst path: one line, status 125" ||
    { not_ok "unwritable .zst (status $nw)"; diag_file "$TMP/nw.err"; }

# 15: a client that does not ask gets the plain stream, as cat and socat expect.
rm -f "$S"
timeout -k 5 60 "$VBTS" --trace "$TMP/p.vbts" --trace "unix:$S" "$TMP/g.bin" >/dev/null 2>&1 </dev/null &
pid=$!
wait_sock "$S"
"$CTL" "unix:$S" stream -o "$TMP/p.sock"
wait $pid
cmp -s "$TMP/p.sock" "$TMP/p.vbts" && ok "without --compress the stream is the plain file's bytes" ||
    not_ok "without --compress the stream is plain"

# 16-17: the tracer does not wait for the compressor: a .zst run and a plain
# run of the same guest trace the same records (the bench measures speed).
"$VBTS" -q --trace "$TMP/r.vbts.zst" "$TMP/g.bin" >/dev/null 2>"$TMP/r.err" </dev/null
rst=$?
"$VBTS_DECODE" "$TMP/r.vbts.zst" | sed -E 's/ t=\+[0-9]+ns//; /-- (start|stop)/d' >"$TMP/r.txt"
sed -E 's/ t=\+[0-9]+ns//; /-- (start|stop)/d' "$TMP/a.txt" >"$TMP/a.norm"
[ $rst = 1 ] && cmp -s "$TMP/r.txt" "$TMP/a.norm" && ok "a .zst-only run: the same branches as the plain run" ||
    { not_ok "a .zst-only run (status $rst)"; diag_file "$TMP/r.err"; }
[ ! -s "$TMP/r.err" ] && ok "a .zst-only run with -q: nothing on stderr" ||
    { not_ok "a .zst-only run: stderr"; diag_file "$TMP/r.err"; }

exit $((TAP_FAILED > 0))
