#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# socket.t: --trace unix:PATH / tcp:HOST:PORT, the overflow modes, the
# control protocol (docs/protocol.md) and vbts-ctl.  The guests are made
# here with nasm, so they are not in the repository.
. "$(dirname "$0")/tap.sh"

CTL=$(dirname "$VBTS_DECODE")/vbts-ctl
plan 28

if ! have_vbts || ! have_decode || [ ! -x "$CTL" ]; then
    for i in $(seq 28); do skip "socket test $i" "monitor, decoder or vbts-ctl not built"; done
    exit 0
fi

loop_image "$TMP/g.bin" 1000        # 3002 records: start, ctx-arrive, 2999 branches, stop
loop_image "$TMP/spin.bin" 100000000

S=$TMP/s.sock
wait_sock() { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }
# vbts in the background: BG_PID; its stderr in $TMP/bg.err
# (A socket file left by an earlier step would let wait_sock return before
# the new monitor replaces it: gone first.)
bg() { rm -f "$S"; timeout -k 5 60 "$VBTS" "$@" >"$TMP/bg.out" 2>"$TMP/bg.err" </dev/null & BG_PID=$!; }
bg_wait() { wait "$BG_PID"; BG_STATUS=$?; }
json() { "$VBTS_DECODE" --format json "$1"; }
nrec() { json "$1" | grep -c .; }

# A raw client: connect, send nothing, read until EOF (the plain stream).
cat >"$TMP/raw.py" <<'PY'
import socket, sys, time
addr, out = sys.argv[1], sys.argv[2]
delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0
chunk = int(sys.argv[4]) if len(sys.argv) > 4 else 65536
if addr.startswith("unix:"):
    s = socket.socket(socket.AF_UNIX); s.connect(addr[5:])
else:
    h, p = addr[4:].rsplit(":", 1); s = socket.create_connection((h, int(p)))
d = b""
while True:
    if delay: time.sleep(delay)
    b = s.recv(chunk)
    if not b: break
    d += b
open(out, "wb").write(d)
PY

# 1-2: one run, a file and a socket: the same bytes; the guest's status.
bg --trace "$TMP/a.vbts" --trace "unix:$S" "$TMP/g.bin"
wait_sock "$S"
python3 "$TMP/raw.py" "unix:$S" "$TMP/a.sock"
bg_wait
if cmp -s "$TMP/a.vbts" "$TMP/a.sock" && [ "$(nrec "$TMP/a.vbts")" = 3002 ]; then
    ok "file and unix socket of one run are byte-identical (3002 records)"
else
    not_ok "file and unix socket of one run are byte-identical"; diag_file "$TMP/bg.err"
fi
mode=$(stat -c %a "$S" 2>/dev/null)
if [ "$BG_STATUS" = 1 ] && [ ! -e "$S" ]; then
    ok "guest status 1 kept; socket file removed at exit"
else
    not_ok "guest status 1 kept; socket file removed at exit (status $BG_STATUS)"
fi

# 3: the socket file is private (0600).
bg --trace "unix:$S" --overflow drop --linger 5 "$TMP/g.bin"
wait_sock "$S"
mode=$(stat -c %a "$S")
"$VBTS_DECODE" "unix:$S" >/dev/null
bg_wait
[ "$mode" = 600 ] && ok "unix socket is created with mode 0600" || not_ok "socket mode $mode, want 600"

# 4: the acceptance command: vbts-decode unix:S == the file run (times aside).
"$VBTS" --trace "$TMP/f.vbts" "$TMP/g.bin" >/dev/null 2>&1
bg --trace "unix:$S" --overflow block "$TMP/g.bin"
wait_sock "$S"
"$VBTS_DECODE" --format json "unix:$S" >"$TMP/s.json"
dst=$?
bg_wait
strip() { sed -E 's/"time_ns":[0-9]+/"time_ns":T/' "$1"; }
json "$TMP/f.vbts" >"$TMP/f.json"
if [ $dst = 0 ] && [ "$BG_STATUS" = 1 ] && diff <(strip "$TMP/f.json") <(strip "$TMP/s.json") >/dev/null; then
    ok "vbts-decode --format json unix:S prints the file run's records (block)"
else
    not_ok "vbts-decode unix:S == file (decode $dst, vbts $BG_STATUS)"
    diff <(strip "$TMP/f.json") <(strip "$TMP/s.json") | head | diag
fi

# 5-6: TCP: loopback by default; vbts-ctl stream gives the file's bytes.
bg --trace "$TMP/t.vbts" --trace tcp:0,control "$TMP/g.bin"
for _ in $(seq 100); do grep -q 'listening on tcp:' "$TMP/bg.err" && break; sleep 0.05; done
taddr=$(sed -n 's/^vbts: listening on \(tcp:.*\)$/\1/p' "$TMP/bg.err")
"$CTL" "$taddr" stream >"$TMP/t.sock"
bg_wait
case $taddr in tcp:127.0.0.1:[0-9]*) ok "tcp:PORT listens on loopback ($taddr)" ;;
*) not_ok "tcp:PORT listens on loopback (got '$taddr')" ;; esac
cmp -s "$TMP/t.vbts" "$TMP/t.sock" && ok "tcp stream == file, byte for byte" ||
    not_ok "tcp stream == file"

# 7-8: block mode, a 200-record buffer, a reader that takes 2000 bytes per 5 ms.
bg -q --trace "$TMP/b.vbts" --trace "unix:$S" --buffer-size 4800 "$TMP/g.bin"
wait_sock "$S"
python3 "$TMP/raw.py" "unix:$S" "$TMP/b.sock" 0.005 2000
bg_wait
json "$TMP/b.sock" >"$TMP/b.json"
seqs_ok=$(awk -F'"seq":' '{ split($2, a, ","); if (a[1] != NR - 1) bad = 1 } END { print bad ? "no" : "yes" }' "$TMP/b.json")
if cmp -s "$TMP/b.vbts" "$TMP/b.sock" && [ "$(grep -c . "$TMP/b.json")" = 3002 ] && [ "$seqs_ok" = yes ]; then
    ok "block, slow reader: 3002 records, seq 0..3001 without a gap, bytes == file"
else
    not_ok "block, slow reader (seqs_ok=$seqs_ok, $(grep -c . "$TMP/b.json") records)"
fi
grep -q '"kind":"lost"' "$TMP/b.json" && not_ok "block mode lost records" || ok "block mode: no lost marker"

# 9-11: drop mode, a 100-record buffer, the client comes after the guest ended.
bg --trace "$TMP/d.vbts" --trace "unix:$S" --overflow drop --buffer-size 2400 --linger 10 "$TMP/g.bin"
wait_sock "$S"
for _ in $(seq 100); do "$CTL" "unix:$S" status 2>/dev/null | grep -q '^state ended' && break; sleep 0.05; done
"$VBTS_DECODE" --format json "unix:$S" >"$TMP/d.json"
bg_wait
kept=$(grep -vc '"kind":"lost"' "$TMP/d.json")
lost=$(sed -n 's/.*"kind":"lost","lost":\([0-9]*\).*/\1/p' "$TMP/d.json" | paste -sd+ | bc)
if [ "$kept" = 101 ] && [ "$lost" = 2901 ] && [ $((kept + lost)) = "$(nrec "$TMP/d.vbts")" ]; then
    ok "drop: 100 records kept, the stop marker kept + lost 2901 = the file's 3002"
else
    not_ok "drop: kept $kept + lost $lost != $(nrec "$TMP/d.vbts")"
fi
if [ "$(tail -n 2 "$TMP/d.json" | head -n 1)" = '{"cpu":0,"seq":100,"kind":"lost","lost":2901}' ] &&
   tail -n 1 "$TMP/d.json" | grep -q '^{"cpu":0,"seq":101,"kind":"stop","reason":"guest-exit"'; then
    ok "drop: the lost marker sits at the gap (after the 100 oldest), the stop marker after it"
else
    not_ok "drop: lost marker position"; tail -n 2 "$TMP/d.json" | diag
fi
grep -qx "vbts: unix:$S: 2901 records dropped (--overflow drop)" "$TMP/bg.err" &&
    ok "drop: the monitor reports the 2901 dropped records" ||
    { not_ok "drop: dropped count on stderr"; diag_file "$TMP/bg.err"; }

# 12: drop mode with a slow live reader: every gap is a lost marker at its place.
cat >"$TMP/align.py" <<'PY'
import json, sys
f = [json.loads(l) for l in open(sys.argv[1])]
s = [json.loads(l) for l in open(sys.argv[2])]
i = 0; lost = 0; kept = 0; markers = 0
for r in s:
    if r["kind"] == "lost":
        i += r["lost"]; lost += r["lost"]; markers += 1; continue
    a = dict(r); b = dict(f[i]); a.pop("seq"); b.pop("seq")
    if a != b:
        sys.exit("record %d differs from the file's %d" % (kept, i))
    i += 1; kept += 1
if i != len(f):
    sys.exit("kept %d + lost %d = %d, file has %d" % (kept, lost, i, len(f)))
print(markers)
PY
bg -q --trace "$TMP/e.vbts" --trace "unix:$S" --overflow drop --buffer-size 2400 --linger 10 "$TMP/g.bin"
wait_sock "$S"
python3 "$TMP/raw.py" "unix:$S" "$TMP/e.sock" 0.01 1200
bg_wait
json "$TMP/e.sock" >"$TMP/e.json"
json "$TMP/e.vbts" >"$TMP/e.file.json"
if markers=$(python3 "$TMP/align.py" "$TMP/e.file.json" "$TMP/e.json" 2>"$TMP/align.err") && [ "$markers" -ge 1 ]; then
    ok "drop, slow live reader: records + lost = file, $markers lost marker(s) exactly at the gaps"
else
    not_ok "drop, slow live reader"; diag_file "$TMP/align.err"
fi

# 13-16: wrap mode, 10 records: DRAIN is the newest 10; GET; exit right after.
bg --trace "$TMP/w.vbts" --trace "unix:$S" --overflow wrap --buffer-size 240 --linger 30 "$TMP/g.bin"
wait_sock "$S"
for _ in $(seq 100); do "$CTL" "unix:$S" status 2>/dev/null | grep -q '^state ended' && break; sleep 0.05; done
json "$TMP/w.vbts" >"$TMP/w.json"
g0=$("$CTL" -f json "unix:$S" get 0)
g9=$("$CTL" -f json "unix:$S" get 9)
"$CTL" "unix:$S" get 10 >"$TMP/g10.out" 2>"$TMP/g10.err"
g10=$?
size=$("$CTL" "unix:$S" size)
t0=$(date +%s.%N)
"$CTL" "unix:$S" drain -o "$TMP/w.drain" 2>"$TMP/drain.err"
bg_wait
t1=$(date +%s.%N)
if [ "$(json "$TMP/w.drain")" = "$(tail -n 10 "$TMP/w.json")" ] &&
   [ "$(cat "$TMP/drain.err")" = "vbts-ctl: drained 10 records" ] && [ "$size" = 10 ]; then
    ok "wrap: DRAIN returns exactly the newest 10 records, seq included"
else
    not_ok "wrap: DRAIN == newest 10 (size $size)"; diag_file "$TMP/drain.err"
fi
want9=$(tail -n 10 "$TMP/w.json" | head -n 1)
if [ "$g9" = "$want9" ] && case $g0 in '{"cpu":0,"seq":3001,"kind":"stop"'*) true ;; *) false ;; esac; then
    ok "wrap: GET 0 is the newest record (stop), GET 9 the 10th newest"
else
    not_ok "wrap: GET"; diag "get 0: $g0" "get 9: $g9" "want: $want9"
fi
if [ $g10 = 1 ] && [ "$(cat "$TMP/g10.err")" = "vbts-ctl: unix:$S: index 10 out of range: vCPU 0's buffer holds 10 records" ]; then
    ok "wrap: GET 10 is refused with a clear message, status 1"
else
    not_ok "wrap: GET 10 ($g10)"; diag_file "$TMP/g10.err"
fi
if [ "$BG_STATUS" = 1 ] && awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }'; then
    ok "wrap: once drained the monitor exits (status 1) without waiting for --linger 30"
else
    not_ok "wrap: exit after drain (status $BG_STATUS, $t0 .. $t1)"
fi

# 17: several clients at once, one leaving mid-record, one sending garbage:
# the others' streams are still the file's bytes.  Wrap mode with room for
# the whole trace: streaming clients do not consume it, so each one gets it
# all whenever it connects (in block mode a client that connects later starts
# at what the earlier ones have not taken yet).
# The linger is long because a client may take seconds to start in the
# lab; CLEAR ends the monitor once they are done.
bg -q --trace "$TMP/m.vbts" --trace "unix:$S" --overflow wrap --linger 45 "$TMP/g.bin"
wait_sock "$S"
python3 - "$S" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.recv(100)          # the header and a part of the first chunk, then away
s.close()
g = socket.socket(socket.AF_UNIX); g.connect(sys.argv[1])
g.sendall(b"GET / HTTP/1.0\r\n\r\n")
g.recv(1000)
g.close()
PY
p0=$!
python3 "$TMP/raw.py" "unix:$S" "$TMP/m1.sock" 0.002 4000 &
p1=$!
"$CTL" "unix:$S" stream >"$TMP/m2.sock" &
p2=$!
"$VBTS_DECODE" --format json "unix:$S" >"$TMP/m3.json" &
p3=$!
wait $p0 $p1 $p2 $p3
"$CTL" "unix:$S" clear >/dev/null
bg_wait
json "$TMP/m.vbts" >"$TMP/m.json"
if cmp -s "$TMP/m.vbts" "$TMP/m1.sock" && cmp -s "$TMP/m.vbts" "$TMP/m2.sock" &&
   cmp -s "$TMP/m.json" "$TMP/m3.json" && [ "$BG_STATUS" = 1 ]; then
    ok "three clients at once, another leaving mid-record and one sending garbage: all get the file's bytes"
else
    not_ok "several clients"
    for f in m1.sock m2.sock; do cmp "$TMP/m.vbts" "$TMP/$f" 2>&1 | diag; done
    cmp "$TMP/m.json" "$TMP/m3.json" 2>&1 | diag
    diag "status $BG_STATUS"; diag_file "$TMP/bg.err"; ls -l "$TMP"/m* | diag
fi

# 18-20: hostile control input (exact replies), over one monitor.
cat >"$TMP/proto.py" <<'PY'
import socket, struct, sys
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(5); return s
def msg(t, p=b"", flags=0):
    return struct.pack("<4sHHI", b"VCTL", t, flags, len(p)) + p
def rd(s, n):
    d = b""
    while len(d) < n:
        b = s.recv(n - len(d))
        if not b: raise EOFError("closed after %d of %d bytes" % (len(d), n))
        d += b
    return d
def reply(s):
    m, t, f, n = struct.unpack("<4sHHI", rd(s, 12))
    assert m == b"VCTL", m
    p = rd(s, n)
    return t, struct.unpack("<I", p[:4])[0], p[4:]
def closed(s):
    try: return s.recv(1) == b""
    except ConnectionResetError: return True
hello = msg(1, struct.pack("<HHI", 1, 0, 0))
out = []
# garbage first: error reply, then the server closes
s = conn(); s.sendall(b"garbage!garbage!"); t, st, txt = reply(s)
out.append("garbage: %#x %d %s closed=%s" % (t, st, txt.decode(), closed(s)))
# a huge length: refused before reading it, then closed
s = conn(); s.sendall(hello); reply(s); s.sendall(struct.pack("<4sHHI", b"VCTL", 2, 0, 0xffffffff))
t, st, txt = reply(s); out.append("huge: %#x %d %s closed=%s" % (t, st, txt.decode(), closed(s)))
# a command before HELLO
s = conn(); s.sendall(msg(2)); t, st, txt = reply(s)
out.append("no hello: %#x %d %s closed=%s" % (t, st, txt.decode(), closed(s)))
# wrong version
s = conn(); s.sendall(msg(1, struct.pack("<HHI", 2, 0, 0))); t, st, txt = reply(s)
out.append("version: %#x %d %s closed=%s" % (t, st, txt.decode(), closed(s)))
# an option this monitor does not know (1.1 knows bit 0, ZSTD)
s = conn(); s.sendall(msg(1, struct.pack("<HHI", 1, 1, 2))); t, st, txt = reply(s)
out.append("option: %#x %d %s closed=%s" % (t, st, txt.decode(), closed(s)))
# errors that keep the connection usable, one after the other, then STATUS
s = conn(); s.sendall(hello); reply(s)
for name, m in [("type", msg(77)), ("length", msg(4, b"\0" * 3)), ("field", msg(4, struct.pack("<HHI", 0, 1, 0))),
                ("cpu", msg(4, struct.pack("<HHI", 5, 0, 0))), ("flags", msg(2, flags=1)),
                ("limit", msg(3, struct.pack("<IIIIQ", 1, 0, 0, 0, 1 << 50))), ("hello again", hello)]:
    s.sendall(m); t, st, txt = reply(s); out.append("%s: %#x %d %s" % (name, t, st, txt.decode()))
s.sendall(msg(4, struct.pack("<HHI", 0, 0, 0))); t, st, p = reply(s)
out.append("size after errors: %#x %d %d" % (t, st, struct.unpack("<Q", p)[0]))
# a request cut in the middle, then gone
s = conn(); s.sendall(hello + msg(4, struct.pack("<HHI", 0, 0, 0))[:7]); s.close()
print("\n".join(out))
PY
bg -q --trace "unix:$S" --overflow wrap --buffer-size 240 --linger 30 "$TMP/g.bin"
wait_sock "$S"
python3 "$TMP/proto.py" "$S" >"$TMP/proto.out" 2>&1
cat >"$TMP/proto.want" <<'EOF'
garbage: 0x8000 1 bad message magic (not a vbts control client) closed=True
huge: 0x8002 2 request payload too long closed=True
no hello: 0x8002 6 HELLO must come first, and only once closed=True
version: 0x8001 5 unsupported protocol version 2.0 (this monitor speaks 1.1) closed=True
option: 0x8001 7 invalid field value closed=True
type: 0x8000 3 unknown request type
length: 0x8004 4 wrong payload length for the request
field: 0x8004 7 invalid field value
cpu: 0x8004 8 no vCPU 5 (the guest has 1)
flags: 0x8002 14 nonzero header flags
limit: 0x8003 10 buffer size 1125899906842624: beyond the buffer limit (one record, 24 bytes, to LIMIT bytes per vCPU: the buffer limit)
hello again: 0x8001 6 HELLO must come first, and only once
size after errors: 0x8004 0 10
EOF
sed -i -E 's/to [0-9]+ bytes per vCPU/to LIMIT bytes per vCPU/' "$TMP/proto.out"
if diff "$TMP/proto.want" "$TMP/proto.out" >"$TMP/proto.diff"; then
    ok "malformed requests: exact error replies; fatal ones close, the others keep the connection"
else
    not_ok "malformed requests"; diag_file "$TMP/proto.diff" 30
fi
st=$("$CTL" "unix:$S" status | head -n 2 | paste -sd' ')
[ "$st" = "state ended overflow wrap" ] && ok "the monitor still serves after hostile clients" ||
    not_ok "status after hostile clients: $st"
"$CTL" "unix:$S" clear >"$TMP/clear.out"
bg_wait
[ "$(cat "$TMP/clear.out")" = 10 ] && [ "$BG_STATUS" = 1 ] &&
    ok "CLEAR empties the buffer (10 records) and the monitor exits" ||
    not_ok "clear: $(cat "$TMP/clear.out"), status $BG_STATUS"

# 21: wrap mode, a client that streams but never reads does not stall the guest.
bg --trace "unix:$S" --overflow wrap --buffer-size 2400 --linger 1 "$TMP/g.bin"
wait_sock "$S"
python3 -c "
import socket, sys, time, struct
s = socket.socket(socket.AF_UNIX); s.connect('$S')
s.sendall(struct.pack('<4sHHIHHI', b'VCTL', 1, 0, 8, 1, 0, 0) + struct.pack('<4sHHIII', b'VCTL', 8, 0, 8, 0, 0))
time.sleep(3)
" &
py=$!
bg_wait
kill $py 2>/dev/null; wait $py 2>/dev/null
if [ "$BG_STATUS" = 1 ] && grep -q '^vbts: trace unix:.*: 2999 branches' "$TMP/bg.err"; then
    ok "wrap: a client that never reads does not stall the guest"
else
    not_ok "wrap: non-reading client (status $BG_STATUS)"; diag_file "$TMP/bg.err"
fi

# 22-23: block mode, nobody reads: the guest waits; a notification says the
# buffer is full; CONFIG --overflow drop lets it finish.
bg --trace "$TMP/n.vbts" --trace "unix:$S" --buffer-size 240 "$TMP/g.bin"
wait_sock "$S"
note=$(timeout 10 "$CTL" "unix:$S" watch -n 1)
if [ "$note" = "full cpu 0 records 10 capacity 10 overflow block" ]; then
    ok "block: a full buffer is notified (watch)"
else
    not_ok "block: notification '$note'"
fi
cfg=$("$CTL" "unix:$S" config --overflow drop --ctx-markers off | head -n 1)
for _ in $(seq 100); do "$CTL" "unix:$S" status 2>/dev/null | grep -q '^state ended' && break; sleep 0.05; done
"$CTL" "unix:$S" drain -o "$TMP/n.drain" 2>/dev/null
bg_wait
nl=$(json "$TMP/n.drain" | grep -c '"kind":"lost"')
if [ "$cfg" = "overflow drop" ] && [ "$BG_STATUS" = 1 ] && [ "$(nrec "$TMP/n.vbts")" = 3002 ] && [ "$nl" = 1 ]; then
    ok "block: CONFIG --overflow drop releases the waiting guest; the file keeps all 3002 records"
else
    not_ok "config releases the guest (cfg '$cfg', status $BG_STATUS, lost markers $nl)"; diag_file "$TMP/bg.err"
fi

# 24: option errors.
"$VBTS" --trace "unix:$S" --buffer-size 2M --buffer-limit 1M "$TMP/g.bin" >/dev/null 2>"$TMP/o.err"
r1=$?
"$VBTS" --trace "unix:$S" --overflow sometimes "$TMP/g.bin" >/dev/null 2>"$TMP/o2.err"
r2=$?
touch "$TMP/plain"
"$VBTS" --trace "unix:$TMP/plain" "$TMP/g.bin" >/dev/null 2>"$TMP/o3.err"
r3=$?
if [ $r1 = 125 ] && [ "$(head -n 1 "$TMP/o.err")" = "vbts: --buffer-size: 1 vCPU buffer of 2097152 bytes exceeds the buffer limit of 1048576 bytes (--buffer-limit)" ] &&
   [ $r2 = 125 ] && [ "$(head -n 1 "$TMP/o2.err")" = "vbts: --overflow: 'sometimes' is not wrap, block or drop" ] &&
   [ $r3 = 125 ] && [ "$(head -n 1 "$TMP/o3.err")" = "vbts: --trace unix:$TMP/plain: $TMP/plain exists and is not a socket" ]; then
    ok "option errors: status 125 and one clear line each"
else
    not_ok "option errors ($r1 $r2 $r3)"; cat "$TMP/o.err" "$TMP/o2.err" "$TMP/o3.err" | diag
fi

# 25-28: a tcp: listener without ",control": its clients watch.
"$VBTS" --trace tcp:0 "$TMP/g.bin" >/dev/null 2>"$TMP/w.err"
r=$?
want="vbts: --trace tcp:0: its clients can only watch, so nothing would empty the buffer in block mode (use tcp:PORT,control, a unix: socket or --overflow wrap)"
if [ $r = 125 ] && [ "$(cat "$TMP/w.err")" = "$want" ]; then
    ok "watch-only tcp alone in block mode: status 125, one line"
else
    not_ok "watch-only tcp alone in block mode (status $r)"; diag_file "$TMP/w.err"
fi
# A watcher's CONFIG, CLEAR and DRAIN are refused; the unix client may.
bg --trace "unix:$S" --trace tcp:0 --overflow wrap --buffer-size 2400 "$TMP/spin.bin"
wait_sock "$S"
for _ in $(seq 100); do grep -q 'listening on tcp:' "$TMP/bg.err" && break; sleep 0.05; done
taddr=$(sed -n 's/^vbts: listening on \(tcp:.*\) (clients watch only)$/\1/p' "$TMP/bg.err")
: >"$TMP/w.out"
for cmd in clear drain "config --overflow drop"; do
    # shellcheck disable=SC2086
    "$CTL" "$taddr" $cmd >/dev/null 2>>"$TMP/w.out"; echo "status $?" >>"$TMP/w.out"
done
"$CTL" "unix:$S" clear >/dev/null 2>"$TMP/w2.out"; ustat=$?
kill -TERM "$BG_PID"; bg_wait
werr="vbts-ctl: $taddr: this connection may only watch (the listener has no ',control')"
printf '%s\nstatus 1\n' "$werr" "$werr" "$werr" >"$TMP/w.want"
if cmp -s "$TMP/w.out" "$TMP/w.want" && [ $ustat = 0 ]; then
    ok "watcher: CLEAR, DRAIN, CONFIG refused (E_WATCH), each with one line and status 1; unix CLEAR works"
else
    not_ok "watcher refusals (unix clear status $ustat)"; diag_file "$TMP/w.out"; diag_file "$TMP/w2.out"; diag_file "$TMP/bg.err"
fi
# A watcher that never reads does not hold the guest in block mode; one
# that reads gets the file's bytes (it keeps up: nobody consumes faster).
# (3.6 MB of trace: more than the socket buffers hold for a watcher whose
# receive buffer is 4 KiB.)
loop_image "$TMP/g50k.bin" 50000
cat >"$TMP/stall.py" <<'PY'
import socket, sys, time
h, p = sys.argv[1][4:].rsplit(":", 1)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((h, int(p))); time.sleep(60)
PY
bg --trace "$TMP/ww.vbts" --trace "unix:$S" --trace tcp:0 "$TMP/g50k.bin"
wait_sock "$S"
for _ in $(seq 100); do grep -q 'listening on tcp:' "$TMP/bg.err" && break; sleep 0.05; done
taddr=$(sed -n 's/^vbts: listening on \(tcp:.*\) (clients watch only)$/\1/p' "$TMP/bg.err")
python3 "$TMP/stall.py" "$taddr" & STALL=$!
sleep 0.5
python3 "$TMP/raw.py" "unix:$S" "$TMP/u.out"
t0=$(date +%s); bg_wait; t1=$(date +%s)
kill "$STALL" 2>/dev/null; wait "$STALL" 2>/dev/null
if [ "$BG_STATUS" = 1 ] && cmp -s "$TMP/ww.vbts" "$TMP/u.out" && [ $((t1 - t0)) -lt 30 ]; then
    ok "block mode: a watcher that never reads does not hold the guest; the unix client gets the file"
else
    not_ok "watcher holds the guest? (status $BG_STATUS, $((t1 - t0)) s, addr '$taddr')"; diag_file "$TMP/bg.err"
fi
"$CTL" tcp:5000,verbose status >/dev/null 2>"$TMP/w3.err"; r=$?
if [ $r = 2 ] && [ "$(cat "$TMP/w3.err")" = "vbts-ctl: tcp:5000,verbose: unknown option 'verbose' (tcp:[HOST:]PORT[,control]) (see --help)" ]; then
    ok "tcp:PORT,OPTION: only control is known"
else
    not_ok "unknown tcp option (status $r)"; diag_file "$TMP/w3.err"
fi

exit $((TAP_FAILED > 0))
