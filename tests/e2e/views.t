#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# views.t: vbts-decode's views of a whole trace (--format calls, folded,
# chrome, drcov, lcov) on the exceptions stub, whose handlers nest in
# main64 and call a helper, and on the C stub with its DWARF
# (guest-stub/c/calls.c, whose lines say how often they run): each view as
# its tool reads it, and exactly what the stub did.
. "$(dirname "$0")/tap.sh"
plan 14

if ! have_vbts || ! have_decode || [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    for i in $(seq 14); do skip "views $i" "monitor, decoder or /dev/kvm missing"; done
    exit 0
fi
stub_symbols "$STUBS/exceptions.map" "$TMP/ex.map"
timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" -q --trace "$TMP/ex.vbts" "$STUBS/exceptions.bin" \
    >/dev/null 2>"$TMP/vbts.err" </dev/null
st=$?
# view NAME FORMAT [ARGS...]: stdout, stderr and status in $TMP/NAME.{out,err,rc}
view() {
    local name=$1 fmt=$2
    shift 2
    "$VBTS_DECODE" --format "$fmt" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
    echo $? >"$TMP/$name.rc"
}
clean() { [ "$(cat "$TMP/$1.rc")" = 0 ] && [ ! -s "$TMP/$1.err" ]; }

# 1: the call history: the stub's own structure, each handler one level
# into main64, count_fault one further.
view calls calls --symbols "$TMP/ex.map" "$TMP/ex.vbts"
cat >"$TMP/calls.want" <<'EOC'
# 0 ctx-arrive cr3=0x0
0	1	mb_to_main32
0	2	main32
# 0 ctx-depart cr3=0x0
# 0 ctx-arrive cr3=0x103000
0	3	lm_to_64
0	4	lm_entry64
0	5	lm_to_main64
0	6	main64
0	7	  ud_handler [exception]
0	8	    count_fault
0	9	  ud_handler [exception]
0	10	main64
0	11	  pf_handler [exception]
0	12	main64
0	13	  pf_handler [exception]
0	14	main64
0	15	  gp_handler [exception]
0	16	main64
0	17	  de_handler [exception]
0	18	main64
# 0 stop guest-exit
EOC
if [ "$st" = 1 ] && clean calls && cmp -s "$TMP/calls.want" "$TMP/calls.out"; then
    ok "calls: the exceptions stub's history, handlers nested in main64, numbered and indented as gdb's /c"
else
    fail "calls (vbts status $st)"; diff "$TMP/calls.want" "$TMP/calls.out" | diag; diag_file "$TMP/calls.err"
fi

# 2: folded stacks: branches counted where they ran, handlers above main64.
view folded folded --symbols "$TMP/ex.map" "$TMP/ex.vbts"
cat >"$TMP/folded.want" <<'EOC'
mb_to_main32 1
lm_to_64 1
lm_to_main64 1
main64 5
main64;ud_handler 2
main64;ud_handler;count_fault 1
main64;pf_handler 3
main64;gp_handler 1
main64;de_handler 1
EOC
if clean folded && cmp -s "$TMP/folded.want" "$TMP/folded.out"; then
    ok "folded: one line per stack, the 16 branches counted where they ran"
else
    fail "folded"; diff "$TMP/folded.want" "$TMP/folded.out" | diag; diag_file "$TMP/folded.err"
fi

# 3: folded as flamegraph.pl reads it: "frame;frame COUNT", frames without
# ';' or spaces, and the counts add up to the trace's branches.
nbr=$("$VBTS_DECODE" --format json "$TMP/ex.vbts" | grep -c '"from"')
if awk -v want="$nbr" '!/^[^; ]+(;[^; ]+)* [1-9][0-9]*$/ { bad = 1 } { sum += $NF }
                        END { exit bad || sum != want }' "$TMP/folded.out"; then
    ok "folded: every line is 'frames COUNT', the counts add up to the $nbr branches"
else
    fail "folded lines"; diag_file "$TMP/folded.out"
fi

# 4: chrome: one JSON object as the Trace Event Format has it; every E
# closes the newest open B of its vCPU; times do not go back; the B
# events are the calls view's functions in order.
view chrome chrome --symbols "$TMP/ex.map" "$TMP/ex.vbts"
grep -v '^#' "$TMP/calls.out" | sed 's/^[0-9]*\t[0-9]*\t *//; s/ \[.*\]$//' >"$TMP/calls.names"
if clean chrome && chrome_check "$TMP/chrome.out" >"$TMP/chrome.names" 2>"$TMP/chrome.py.err" &&
   awk 'NR == FNR { want[++n] = $0; next } { got[++m] = $0 }
        END { # the calls view repeats a caller when it resumes; chrome has one B per frame
              j = 1; for (i = 1; i <= m; i++) { while (j <= n && want[j] != got[i]) j++; if (j > n) exit 1; j++ } }' \
       "$TMP/calls.names" "$TMP/chrome.names"; then
    ok "chrome: valid JSON, B/E nest per vCPU and all close, times do not go back, frames as in calls"
else
    fail "chrome"; diag_file "$TMP/chrome.py.err"; diag_file "$TMP/chrome.err"
fi

# 5: drcov 2 as Lighthouse's parser reads it: the header, the module table
# (the symbol file, based at its first symbol), then as many 8-byte blocks
# as it says; the blocks cover every branch and only the stub's code.
view drcov drcov --symbols "$TMP/ex.map" "$TMP/ex.vbts"
cat >"$TMP/drcov.py" <<'PY'
import json, re, struct, subprocess, sys
d = open(sys.argv[1], "rb").read()
lines = d.split(b"\n", 5)
assert lines[0] == b"DRCOV VERSION: 2" and lines[1] == b"DRCOV FLAVOR: drcov", lines[:2]
m = re.fullmatch(rb"Module Table: version 2, count (\d+)", lines[2]); assert m, lines[2]
assert lines[3] == b"Columns: id, base, end, entry, checksum, timestamp, path"
rest = lines[4] + b"\n" + lines[5]
mods = []
for i in range(int(m.group(1))):
    row, rest = rest.split(b"\n", 1)
    f = [x.strip() for x in row.split(b",", 6)]
    assert int(f[0]) == i
    mods.append((int(f[1], 16), int(f[2], 16), f[6].decode()))
row, rest = rest.split(b"\n", 1)
n = int(re.fullmatch(rb"BB Table: (\d+) bbs", row).group(1))
assert len(rest) == 8 * n, (len(rest), n)
assert mods == [(0x100000, mods[0][1], "ex.map")], mods
covered = set()
for i in range(n):
    start, size, mod = struct.unpack_from("<IHH", rest, 8 * i)
    assert mod == 0 and size > 0
    a = mods[0][0] + start
    assert a + size <= mods[0][1], hex(a)
    covered.update(range(a, a + size))
text = [int(l.split()[0], 16) for l in open(sys.argv[2])]
assert min(covered) >= min(text) and max(covered) < 0x101000, (hex(min(covered)), hex(max(covered)))
for l in open(sys.argv[3]):
    r = json.loads(l)
    if "from" in r:
        assert int(r["from"], 16) in covered, r
print(n)
PY
"$VBTS_DECODE" --format json "$TMP/ex.vbts" >"$TMP/ex.json"
if clean drcov && nbb=$(python3 "$TMP/drcov.py" "$TMP/drcov.out" "$TMP/ex.map" "$TMP/ex.json" 2>"$TMP/drcov.py.err"); then
    ok "drcov: version 2 header, module ex.map at 0x100000, $nbb blocks that cover every branch's address"
else
    fail "drcov"; diag_file "$TMP/drcov.py.err"; diag_file "$TMP/drcov.err"
fi

# 6: the stack views need branch kinds: a trace without them (as copied
# from BTS hardware: the header's flag cleared) is refused in one line.
python3 - "$TMP/ex.vbts" "$TMP/nokind.vbts" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", d, 20, struct.unpack_from("<I", d, 20)[0] & ~1)
open(sys.argv[2], "wb").write(d)
PY
view nokind calls "$TMP/nokind.vbts"
view nokind_drcov drcov "$TMP/nokind.vbts"
if [ "$(cat "$TMP/nokind.rc")" = 1 ] && [ ! -s "$TMP/nokind.out" ] &&
   [ "$(cat "$TMP/nokind.err")" = "vbts-decode: $TMP/nokind.vbts: --format calls needs branch kinds, and this trace has none (as from BTS hardware)" ] &&
   clean nokind_drcov; then
    ok "calls without branch kinds: one line, status 1; drcov needs none"
else
    fail "calls without kinds (status $(cat "$TMP/nokind.rc"))"; diag_file "$TMP/nokind.err"
fi

# 7: a cut-off trace: the view of what was read, then the usual line, status 1.
head -c $(( $(stat -c %s "$TMP/ex.vbts") - 24 )) "$TMP/ex.vbts" >"$TMP/cut.vbts"
view cut chrome "$TMP/cut.vbts"
if [ "$(cat "$TMP/cut.rc")" = 1 ] && chrome_check "$TMP/cut.out" >/dev/null 2>&1 &&
   [ "$(cat "$TMP/cut.err")" = "vbts-decode: $TMP/cut.vbts: truncated record at byte offset $(( $(stat -c %s "$TMP/ex.vbts") - 24 ))" ]; then
    ok "a cut-off trace: chrome JSON still valid with every frame closed, then the reader's error, status 1"
else
    fail "cut-off trace (status $(cat "$TMP/cut.rc"))"; diag_file "$TMP/cut.err"
fi

# 8: drcov is binary: not onto a terminal.
python3 - "$VBTS_DECODE" "$TMP/ex.vbts" >"$TMP/tty.out" 2>&1 <<'PY'
import os, pty, subprocess, sys
m, s = pty.openpty()
r = subprocess.run([sys.argv[1], "--format", "drcov", sys.argv[2]], stdout=s, stderr=subprocess.PIPE)
os.close(s)
print(r.returncode, r.stderr.decode().strip())
PY
if [ "$(cat "$TMP/tty.out")" = "2 vbts-decode: --format drcov writes binary data: redirect standard output to a file (see --help)" ]; then
    ok "drcov onto a terminal: refused, status 2"
else
    fail "drcov onto a terminal"; diag_file "$TMP/tty.out"
fi

# 9: an unknown format names the known ones.
view unknown flame "$TMP/ex.vbts"
if [ "$(cat "$TMP/unknown.rc")" = 2 ] && [ "$(cat "$TMP/unknown.err")" = "vbts-decode: unknown format 'flame', expected text, json, calls, folded, chrome, drcov or lcov (see --help)" ]; then
    ok "an unknown format: one line naming the known ones, status 2"
else
    fail "unknown format"; diag_file "$TMP/unknown.err"
fi

# 10-13: the C stub, an ELF with DWARF: symbols from the ELF itself.
CELF=$STUBS/c/calls.elf
CSRC=$ROOT/guest-stub/c/calls.c
timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" -q --trace "$TMP/c.vbts" "$CELF" >/dev/null 2>"$TMP/cvbts.err" </dev/null
cst=$?
view ccalls calls --symbols "$CELF" "$TMP/c.vbts"
cat >"$TMP/ccalls.want" <<'EOC'
# 0 ctx-arrive cr3=0x0
0	1	_start
0	2	  main
0	3	    leaf
0	4	  main
0	5	    twice
0	6	      leaf
0	7	    twice
0	8	      leaf
0	9	    twice
0	10	  main
0	11	    leaf
0	12	  main
0	13	_start
# 0 stop guest-exit
EOC
if [ "$cst" = 1 ] && clean ccalls && cmp -s "$TMP/ccalls.want" "$TMP/ccalls.out"; then
    ok "calls, C stub with its ELF symbols: main, leaf, twice through a pointer and its two leafs, leaf"
else
    fail "calls, C stub (vbts status $cst)"; diff "$TMP/ccalls.want" "$TMP/ccalls.out" | diag
    diag_file "$TMP/cvbts.err"; diag_file "$TMP/ccalls.err"
fi

# 11: lcov: one record for calls.c: a function for each "@called N" with
# that count, a DA line for every line with code with exactly the count its
# "@ran N" says; the totals agree.  The path is the source's own.
view lcov lcov --symbols "$CELF" "$TMP/c.vbts"
awk '{ if (match($0, /@ran [0-9]+/)) print "DA:" NR "," substr($0, RSTART + 5, RLENGTH - 5) }' "$CSRC" >"$TMP/lcov.da"
awk '{ if (match($0, /@called [0-9]+/) && match($0, /[A-Za-z_]+\((unsigned|void)/)) { n = substr($0, RSTART, RLENGTH);
       sub(/\(.*/, "", n);
       match($0, /@called [0-9]+/); print NR, n, substr($0, RSTART + 8, RLENGTH - 8) } }' "$CSRC" >"$TMP/lcov.fn"
nda=$(wc -l <"$TMP/lcov.da")
nhit=$(grep -vc ',0$' "$TMP/lcov.da")
nfn=$(wc -l <"$TMP/lcov.fn")
{
    echo "TN:"
    echo "SF:$(cd "$(dirname "$CSRC")" && pwd -P)/calls.c"
    awk '{ print "FN:" $1 "," $2 }' "$TMP/lcov.fn"
    awk '{ print "FNDA:" $3 "," $2 }' "$TMP/lcov.fn"
    echo "FNF:$nfn"
    echo "FNH:$(awk '$3 > 0' "$TMP/lcov.fn" | wc -l)"
    cat "$TMP/lcov.da"
    echo "LF:$nda"
    echo "LH:$nhit"
    echo "end_of_record"
} >"$TMP/lcov.want"
if clean lcov && [ "$nfn" = 4 ] && cmp -s "$TMP/lcov.want" "$TMP/lcov.out"; then
    ok "lcov: calls.c's $nfn functions called as often as @called says, its $nda lines with code run as often as @ran says ($nhit ran)"
else
    fail "lcov"; diff "$TMP/lcov.want" "$TMP/lcov.out" | diag; diag_file "$TMP/lcov.err"
fi

# 12: genhtml (Debian's lcov) renders it: the page counts the same lines.
if ! command -v genhtml >/dev/null 2>&1; then
    fail "genhtml not found (Debian: lcov; tests/deps.sh installs it)"
elif genhtml -q -o "$TMP/html" "$TMP/lcov.out" >"$TMP/genhtml.err" 2>&1 &&
     grep -q "headerCovTableEntry\">$nhit<" "$TMP/html/index.html" &&
     grep -q "headerCovTableEntry\">$nda<" "$TMP/html/index.html" &&
     grep -q "headerCovTableEntry\">$nfn<" "$TMP/html/index.html"; then
    ok "genhtml renders the lcov file: $nhit of $nda lines and the $nfn functions on its index page"
else
    fail "genhtml"; diag_file "$TMP/genhtml.err"
fi

# 13: lcov needs DWARF: without --symbols a usage error; a System.map or
# an ELF without debug information, one line each, status 1.
view lnosym lcov "$TMP/c.vbts"
view lmap lcov --symbols "$TMP/ex.map" "$TMP/ex.vbts"
objcopy --strip-debug "$CELF" "$TMP/stripped.elf"
view lstrip lcov --symbols "$TMP/stripped.elf" "$TMP/c.vbts"
if [ "$(cat "$TMP/lnosym.rc")" = 2 ] &&
   [ "$(cat "$TMP/lnosym.err")" = "vbts-decode: --format lcov needs --symbols ELF, an ELF file with DWARF (built with -g) (see --help)" ] &&
   [ "$(cat "$TMP/lmap.rc")" = 1 ] &&
   [ "$(cat "$TMP/lmap.err")" = "vbts-decode: $TMP/ex.map: no DWARF debug information (--format lcov needs an ELF built with -g)" ] &&
   [ "$(cat "$TMP/lstrip.rc")" = 1 ] &&
   [ "$(cat "$TMP/lstrip.err")" = "vbts-decode: $TMP/stripped.elf: no DWARF debug information (--format lcov needs an ELF built with -g)" ]; then
    ok "lcov without DWARF: without --symbols status 2, a System.map or a stripped ELF status 1, one line each"
else
    fail "lcov without DWARF"; diag_file "$TMP/lnosym.err"; diag_file "$TMP/lmap.err"; diag_file "$TMP/lstrip.err"
fi

# 14: a full disk: one line, status 1, for a stack view and for lcov.
if [ -w /dev/full ]; then
    "$VBTS_DECODE" --format folded --symbols "$TMP/ex.map" "$TMP/ex.vbts" >/dev/full 2>"$TMP/full1.err"; f1=$?
    "$VBTS_DECODE" --format lcov --symbols "$CELF" "$TMP/c.vbts" >/dev/full 2>"$TMP/full2.err"; f2=$?
    if [ $f1 = 1 ] && [ $f2 = 1 ] && [ "$(cat "$TMP/full1.err")" = "vbts-decode: write error: No space left on device" ] &&
       cmp -s "$TMP/full1.err" "$TMP/full2.err"; then
        ok "a view onto a full disk: 'vbts-decode: write error: No space left on device', status 1"
    else
        fail "a view onto a full disk (status $f1, $f2)"; diag_file "$TMP/full1.err"; diag_file "$TMP/full2.err"
    fi
else
    fail "a view onto a full disk: /dev/full is not writable here"
fi
