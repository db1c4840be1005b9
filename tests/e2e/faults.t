#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# faults.t: faults under load.  A trace file that fills its disk (alone and
# while a socket streams), SIGTERM while block mode holds the guest, and
# clients killed mid-HELLO, mid-DRAIN and mid-STREAM.  For each: no crash,
# one clear line and the documented status, block mode loses nothing, every
# lost record is marked.  (Four vCPUs against eight clients is a unit test:
# tests/unit/export/test_sink.c, where the producers can be four threads.)
. "$(dirname "$0")/tap.sh"

plan 6
if ! have_vbts || ! have_decode; then
    for i in $(seq 6); do skip "fault test $i" "monitor or decoder not built"; done
    exit 0
fi

loop_image "$TMP/spin.bin" 100000000
loop_image "$TMP/g.bin" 30000            # 89,999 branches

S=$TMP/s.sock
wait_sock() { for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }
branches() { "$VBTS_DECODE" --format json "$1" | grep -v '"kind":"\(start\|stop\|lost\|ctx\)' ; }

cat >"$TMP/raw.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
d = b""
while True:
    b = s.recv(65536)
    if not b: break
    d += b
open(sys.argv[2], "wb").write(d)
PY

# A disk that fills: a 64 KiB tmpfs in a private mount namespace (the
# trace's first chunk, 98 KiB, does not fit).  The file is checked inside.
# Where no mount namespace can be made, a 64 KiB file-size limit stands in
# (the same write error path, EFBIG instead of ENOSPC).
if unshare -m true 2>/dev/null; then NS="unshare -m"
elif unshare -rm true 2>/dev/null; then NS="unshare -rm"
else NS=""; fi
FULL_MSG=${NS:+No space left on device}
FULL_MSG=${FULL_MSG:-File too large}
full_disk() {   # full_disk TAG VBTS-ARGS...: status in $TMP/TAG.st, stderr in $TMP/TAG.err
    local tag=$1; shift
    # shellcheck disable=SC2016
    local body='
        d=$1; shift
        if [ -n "$NS" ]; then mount -t tmpfs -o size=64k vbts "$d" || exit 99; fi
        t0=$(date +%s)
        (trap "" XFSZ; [ -n "$NS" ] || ulimit -f 64; exec timeout -k 5 60 "$@") >/dev/null 2>"$d.err" </dev/null
        echo $? $(( $(date +%s) - t0 )) >"$d.st"
        "$0" "$d/t.vbts" >/dev/null 2>"$d.dec"; echo $? >>"$d.st"
    '
    # shellcheck disable=SC2086
    NS="$NS" $NS sh -c "$body" "$VBTS_DECODE" "$TMP/$tag" "$@"
}
mkdir -p "$TMP/disk1" "$TMP/disk2"
diag "full disk: ${NS:-a file-size limit (no mount namespace here)}"
# 1: alone.  The guest would run for minutes: the run ends at once.
full_disk disk1 "$VBTS" -q --trace "$TMP/disk1/t.vbts" "$TMP/spin.bin"
read -r st secs dst <<<"$(tr '\n' ' ' <"$TMP/disk1.st")"
want="vbts: writing trace $TMP/disk1/t.vbts: $FULL_MSG (the trace is incomplete)"
if [ "$st" = 125 ] && [ "$(cat "$TMP/disk1.err")" = "$want" ] && [ "$secs" -lt 30 ] && [ "$dst" = 1 ]; then
    ok "a full disk ends the run: status 125, one line, ${secs}s; the cut file does not decode as whole"
else
    not_ok "full disk (status $st, ${secs}s, decode $dst)"; diag_file "$TMP/disk1.err"; diag_file "$TMP/disk1.dec"
fi
# 2: with a socket client: it gets a whole trace (stop marker), nothing lost.
rm -f "$S"
full_disk disk2 "$VBTS" -q --trace "$TMP/disk2/t.vbts" --trace "unix:$S" "$TMP/spin.bin" &
FD=$!
wait_sock "$S" && python3 "$TMP/raw.py" "$S" "$TMP/d2.sock"
wait "$FD"
read -r st secs dst <<<"$(tr '\n' ' ' <"$TMP/disk2.st")"
want="vbts: writing trace $TMP/disk2/t.vbts: $FULL_MSG (the trace is incomplete)"
"$VBTS_DECODE" --format json "$TMP/d2.sock" >"$TMP/d2.json" 2>"$TMP/d2.derr"; sdec=$?
last=$(tail -n 1 "$TMP/d2.json")
n=$(grep -vc '"kind":"\(start\|stop\|ctx\)' "$TMP/d2.json")
if [ "$st" = 125 ] && [ "$(cat "$TMP/disk2.err")" = "$want" ] && [ "$secs" -lt 30 ] &&
   [ $sdec = 1 ] && grep -q "trace incomplete: vCPU 0 stopped where the monitor failed (stop error)" "$TMP/d2.derr" &&
   [[ $last == *'"kind":"stop"'* ]] && ! grep -q '"kind":"lost"' "$TMP/d2.json" &&
   [ "$n" -ge 4000 ] && [[ $last == *'"reason":"error"'* ]]; then
    ok "a full disk while a socket streams: status 125, one line; the client's trace is whole ($n branches, no loss), and ends early (stop error)"
else
    not_ok "full disk with a socket (status $st, ${secs}s, client decode $sdec, $n records)"
    diag_file "$TMP/disk2.err"; diag_file "$TMP/d2.derr"; diag "last: $last"
fi

# 3-4: SIGTERM while block mode holds the guest (nobody reads, 200-record
# buffer): status 143, the unread records counted; the file has every
# record the guest made, and its stop marker.
rm -f "$S"
timeout -k 5 120 "$VBTS" -q --trace "$TMP/t3.vbts" --trace "unix:$S" --buffer-size 4800 "$TMP/spin.bin" \
    >/dev/null 2>"$TMP/t3.err" </dev/null &
P=$!
wait_sock "$S"
sleep 1
kill -TERM $P
wait $P; st=$?
"$VBTS_DECODE" --format json "$TMP/t3.vbts" >"$TMP/t3.json" 2>"$TMP/t3.derr"; dst=$?
unread=$(sed -n 's/.*: \([0-9]*\) records were never read by a client (interrupted)$/\1/p' "$TMP/t3.err")
if [ $st = 143 ] && grep -qx 'vbts: interrupted by signal 15' "$TMP/t3.err" && [ -n "$unread" ] && [ "$unread" -gt 0 ] && [ $dst = 0 ]; then
    ok "SIGTERM during block-mode backpressure: status 143, $unread unread records said"
else
    not_ok "SIGTERM in block mode (status $st, decode $dst, unread '$unread')"; diag_file "$TMP/t3.err"; diag_file "$TMP/t3.derr"
fi
if tail -n 1 "$TMP/t3.json" | grep -q '"kind":"stop"' && ! grep -q '"kind":"lost"' "$TMP/t3.json"; then
    ok "SIGTERM in block mode: the file ends with its stop marker, nothing lost"
else
    not_ok "SIGTERM in block mode: file"; diag "$(tail -n 2 "$TMP/t3.json")"
fi

# 5-6: clients killed mid-HELLO, mid-DRAIN and mid-STREAM, then one that
# streams to the end: the monitor goes on; the file is whole; the last
# client's branches are exactly the end of the file's.
cat >"$TMP/killed.py" <<'PY'
import os, signal, socket, struct, sys
how, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX); s.connect(path)
hello = b"VCTL" + struct.pack("<HHI", 1, 0, 8) + struct.pack("<HHI", 1, 0, 0)
if how == "hello":
    s.sendall(hello[:10])
elif how == "drain":
    s.sendall(hello)
    s.recv(28)
    s.sendall(b"VCTL" + struct.pack("<HHI", 7, 0, 8) + struct.pack("<HHI", 0xffff, 0, 0))
    s.recv(100)
else:
    got = 0
    while got < 5000:
        got += len(s.recv(5000 - got))
os.kill(os.getpid(), signal.SIGKILL)
PY
rm -f "$S"
timeout -k 5 300 "$VBTS" -q --trace "$TMP/t5.vbts" --trace "unix:$S" --buffer-size 4800 "$TMP/g.bin" \
    >/dev/null 2>"$TMP/t5.err" </dev/null &
P=$!
wait_sock "$S"
for how in hello drain stream; do (python3 "$TMP/killed.py" $how "$S"; true) 2>/dev/null; done
python3 "$TMP/raw.py" "$S" "$TMP/t5.sock"
wait $P; st=$?
"$VBTS_DECODE" --format json "$TMP/t5.vbts" >"$TMP/t5.json"; dst=$?
nf=$(branches "$TMP/t5.vbts" | wc -l)
branches "$TMP/t5.sock" >"$TMP/t5.sb"; ns=$(wc -l <"$TMP/t5.sb")
if [ $st = 1 ] && [ $dst = 0 ] && [ "$nf" = 89999 ] && [ ! -s "$TMP/t5.err" ]; then
    ok "clients killed mid-HELLO, mid-DRAIN, mid-STREAM: the guest ends (status 1), the file is whole"
else
    not_ok "killed clients (status $st, decode $dst, $nf branches)"; diag_file "$TMP/t5.err"
fi
if [ "$ns" -gt 0 ] && branches "$TMP/t5.vbts" | tail -n "$ns" | cmp -s - "$TMP/t5.sb" &&
   tail -n 1 <("$VBTS_DECODE" --format json "$TMP/t5.sock") | grep -q '"kind":"stop"'; then
    ok "the client after them gets the rest of the trace, in order, to its stop marker ($ns branches)"
else
    not_ok "the last client's stream ($ns branches)"
fi

exit $((TAP_FAILED > 0))
