# SPDX-License-Identifier: MIT
# tap.sh: TAP helpers and common setup for the tests/e2e/*.t scripts (bash).
# Sourced, not run: prove only runs *.t files.
#
# Environment (paths relative to the directory the test was started from):
#   VBTS         the monitor            (default: build/vbts of this repo)
#   VBTS_DECODE  the decoder            (default: build/vbts-decode)
#   STUBS        built guest stubs      (default: build/guest-stub)
#   QEMU         qemu-system-x86_64     (default: from PATH)
#   VBTS_TIMEOUT seconds for one vbts run (default 120)
#   VBTS_HOST    the KVM the tests run on, named in every TAP line (default:
#                this machine's module, kvm_pvm, kvm_intel or kvm_amd; the
#                lab's runs set lab/kvm_amd)

set -u

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$E2E_DIR/../.." && pwd)
ORACLE=$ROOT/tests/oracle

# A path from the environment is relative to where the test was started;
# a default one is relative to the repository.
_abs() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
VBTS=$(_abs "${VBTS:-$ROOT/build/vbts}")
VBTS_DECODE=$(_abs "${VBTS_DECODE:-$ROOT/build/vbts-decode}")
STUBS=$(_abs "${STUBS:-$ROOT/build/guest-stub}")
QEMU=${QEMU:-qemu-system-x86_64}
VBTS_TIMEOUT=${VBTS_TIMEOUT:-120}
export QEMU

TMP=$(mktemp -d "${TMPDIR:-/tmp}/vbts-e2e.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

if [ -z "${VBTS_HOST:-}" ]; then
    for m in kvm_pvm kvm_intel kvm_amd; do
        [ -d "/sys/module/$m" ] && VBTS_HOST=$m && break
    done
    VBTS_HOST=${VBTS_HOST:-no-kvm}
fi
export VBTS_HOST

TAP_N=0
TAP_FAILED=0

plan()   { echo "1..$1"; }
ok()     { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - [$VBTS_HOST] $*"; }
not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - [$VBTS_HOST] $*"; }
skip()   { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - [$VBTS_HOST] $1 # SKIP $2"; }
# diag: stdin (or the arguments) as TAP diagnostics, on stderr so that
# prove shows them without -v.
diag() {
    if [ $# -gt 0 ]; then printf '%s\n' "$*"; else cat; fi | sed 's/^/# /' >&2
}
# diag_file FILE [LINES]: the last lines of a file as diagnostics.
diag_file() { [ -s "$1" ] && tail -n "${2:-15}" "$1" | diag; return 0; }

have_qemu() { command -v "$QEMU" >/dev/null 2>&1; }
# wait_bounded PID SECONDS: wait for a background PID, killed (-9) if it
# outlives SECONDS, so that a monitor that does not end cannot hang the
# suite; its status (137 when killed).
wait_bounded() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$1" 2>/dev/null && kill -9 "$1" 2>/dev/null
    wait "$1"
}
have_vbts() { [ -x "$VBTS" ]; }
have_decode() { [ -x "$VBTS_DECODE" ]; }

# compare_records EXPECTED ACTUAL MAP STUB_ASM: 0 if the two 'from to' lists
# are equal; otherwise a unified diff with symbolic names as diagnostics.
compare_records() {
    local exp=$1 act=$2 map=$3 asm=$4
    if cmp -s "$exp" "$act"; then return 0; fi
    local ne na
    ne=$(wc -l <"$exp"); na=$(wc -l <"$act")
    diag "records differ: expected $ne, got $na (- expected, + actual):"
    if [ -n "$map" ] && [ -n "$asm" ]; then
        "$ORACLE/bts-expect" --map "$map" --symbolize "$asm" <"$exp" >"$exp.sym" 2>/dev/null || cp "$exp" "$exp.sym"
        "$ORACLE/bts-expect" --map "$map" --symbolize "$asm" <"$act" >"$act.sym" 2>/dev/null || cp "$act" "$act.sym"
    else
        cp "$exp" "$exp.sym"; cp "$act" "$act.sym"
    fi
    diff -u "$exp.sym" "$act.sym" | tail -n +3 | head -n 60 | diag
    return 1
}

# run_vbts IMAGE TRACE OUTPREFIX: runs the monitor with a time limit; sets
# VBTS_STATUS.  Its stdout/stderr go to OUTPREFIX.out/.err.
run_vbts() {
    local image=$1 trace=$2 out=$3
    VBTS_STATUS=0
    timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --trace "$trace" "$image" \
        >"$out.out" 2>"$out.err" </dev/null || VBTS_STATUS=$?
    if [ "$VBTS_STATUS" = 124 ]; then
        echo "(vbts killed after ${VBTS_TIMEOUT}s)" >>"$out.err"
    fi
}

# decode_records TRACE IMAGE OUT: decoded branch records within the image's
# range into OUT; 0 on success.
decode_records() {
    local trace=$1 image=$2 out=$3
    if ! "$VBTS_DECODE" --format json "$trace" >"$out.json" 2>"$out.decode-err"; then
        diag "vbts-decode --format json failed:"
        diag_file "$out.decode-err"
        return 1
    fi
    "$ORACLE/vbts-records" --image "$image" "$out.json" >"$out" 2>"$out.records-err"
    local st=$?
    diag_file "$out.records-err"
    return $st
}

# --- Linux guests (linux.t, linux_trace.t) ----------------------------------
# Debian's kernel and a busybox initramfs from `make linux-guest`
# (scripts/linux-guest.sh), its symbols from the -dbg package
# (scripts/linux-symbols.sh); both are fetched when missing.
#   VBTS_LINUX=0         skip everything that needs the kernel
#   VBTS_LINUX_TIMEOUT   seconds one Linux run may take (default 600; in the
#                        lab, where a run takes seconds, VBTS_LINUX_TIMEOUT_LAB
#                        or 240: make check's sanitized builds take longer)
LINUX_GUEST=${LINUX_GUEST:-$ROOT/build/linux}
case $VBTS_HOST in
lab/*) LINUX_TIMEOUT=${VBTS_LINUX_TIMEOUT:-${VBTS_LINUX_TIMEOUT_LAB:-240}} ;;
*) LINUX_TIMEOUT=${VBTS_LINUX_TIMEOUT:-600} ;;
esac
# The kernel command line of test boots (scripts/linux-cmdline says why each option).
. "$ROOT/scripts/linux-cmdline"

# linux_guest_or_skip WHAT [symbols]: the guest (and its symbols) ready, or
# the whole test skipped (VBTS_LINUX=0, no /dev/kvm) or failed (the guest
# could not be fetched) with a line saying why; sets LINUX_MAP and LINUX_INITRD.
linux_guest_or_skip() {
    local what=$1 syms=${2:-}
    if [ "${VBTS_LINUX:-1}" = 0 ]; then
        plan 1; skip "$what" "VBTS_LINUX=0"; exit 0
    fi
    if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
        plan 1; skip "$what" "no usable /dev/kvm"; exit 0
    fi
    if ! "$ROOT/scripts/linux-guest.sh" "$LINUX_GUEST" >"$TMP/guest.log" 2>&1; then
        plan 1; not_ok "$what: the Linux guest (scripts/linux-guest.sh)"; diag_file "$TMP/guest.log"; exit 1
    fi
    if [ "$syms" = symbols ] && ! "$ROOT/scripts/linux-symbols.sh" "$LINUX_GUEST" >"$TMP/sym.log" 2>&1; then
        plan 1; not_ok "$what: the kernel's symbols (scripts/linux-symbols.sh)"; diag_file "$TMP/sym.log"; exit 1
    fi
    LINUX_MAP=$LINUX_GUEST/System.map
    LINUX_INITRD=$LINUX_GUEST/initramfs.cpio
}

# linux_run NAME CPUS [vbts args...]: the monitor on Debian's kernel with
# CPUS vCPUs and 256 MiB, in the background, bounded by LINUX_TIMEOUT;
# output in $TMP/NAME.{out,err}.  linux_wait NAME then sets rc and secs.
#
# In the lab the runs go one after another: it has one vCPU (two are not
# reliable under QEMU's multi-threaded TCG, docs/host-compat.md), and a
# boot there takes seconds anyway.
linux_run() {
    local name=$1 cpus=$2
    shift 2
    (
        t0=$SECONDS st=0
        timeout -k 5 "$LINUX_TIMEOUT" "$VBTS" --cpus "$cpus" --memory 256M "$@" "$LINUX_GUEST/bzImage" \
            >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || st=$?
        [ "$st" = 124 ] && echo "(killed after ${LINUX_TIMEOUT}s)" >>"$TMP/$name.err"
        echo "$st $((SECONDS - t0))" >"$TMP/$name.rc"
    ) &
    case $VBTS_HOST in lab/*) wait $! ;; esac
}
linux_wait() {
    while [ ! -s "$TMP/$1.rc" ]; do sleep 1; done
    read -r rc secs <"$TMP/$1.rc"
}

# check_linux_window NAME CPUS SYMBOL RC: the checks on a Linux run that
# traced 50,000 branches from SYMBOL into $TMP/NAME.vbts with --verify-flow
# (stderr in $TMP/NAME.err, status RC): it decodes with the kernel's
# symbols, has exactly 50000 branch records, 0 flow violations, starts
# inside SYMBOL, and every vCPU has a context arrival and a stop marker.
check_linux_window() {
    local name=$1 cpus=$2 sym=$3 rc=$4 drc=0
    "$VBTS_DECODE" --format json --symbols "$LINUX_MAP" "$TMP/$name.vbts" >"$TMP/$name.json" 2>"$TMP/$name.derr" || drc=$?
    if [ "$rc" = 0 ] && [ $drc = 0 ]; then ok "$name: window traced, the trace decodes with symbols"
    else not_ok "$name: window traced and decodes"; diag "status $rc, decode $drc"; diag_file "$TMP/$name.err"; diag_file "$TMP/$name.derr"; fi
    pair_check "$name" "$TMP/$name.json"
    local n
    n=$(grep -c '"from"' "$TMP/$name.json")
    [ "$n" = 50000 ] && ok "$name: exactly 50000 branch records" || { not_ok "$name: 50000 branch records"; diag "got $n"; }
    if grep -qx "vbts: verify-flow: 50000 records checked, 0 violations" "$TMP/$name.err"; then
        ok "$name: --verify-flow: 50000 records, 0 violations"
    else not_ok "$name: --verify-flow 0 violations"; diag "$(grep verify-flow "$TMP/$name.err")"; fi
    # The vCPU that reached the trigger takes its first branch inside the
    # symbol (--verify-flow checked the straight line from the trigger to
    # it; ftrace may have turned the entry call into a NOP).
    local firsts cpu
    firsts=$(for cpu in $(seq 0 $((cpus - 1))); do grep -m 1 "^{\"cpu\":$cpu,.*\"from\"" "$TMP/$name.json"; done)
    if grep -q "\"from_sym\":\"$sym+0x[0-9a-f]*\"" <<<"$firsts"; then ok "$name: the window starts in $sym, named by symbol"
    else not_ok "$name: the window starts in $sym"; diag "$firsts"; fi
    for cpu in $(seq 0 $((cpus - 1))); do
        if grep -q "^{\"cpu\":$cpu,\"seq\":[0-9]*,\"kind\":\"ctx-arrive\",\"cr3\":\"0x[0-9a-f]*\"" "$TMP/$name.json" &&
           grep -q "^{\"cpu\":$cpu,.*\"kind\":\"stop\",\"reason\":\"limit\"" "$TMP/$name.json"; then
            ok "$name: vCPU $cpu: context arrival marker and stop marker"
        else not_ok "$name: vCPU $cpu: context and stop markers"; fi
    done
}

# pair_check NAME JSON: every interrupt in the window is left by an IRET
# back to where it came in, or by a context switch (tests/oracle/pair-check,
# independent of vbts's code): one TAP line.
pair_check() {
    local name=$1 json=$2
    if "$ORACLE/pair-check" "$json" >"$TMP/$name.pairs" 2>&1; then
        ok "$name: every interrupt left by an IRET to its entry or a context switch ($(sed -n 's/^pair-check: vCPU [0-9]*: //p' "$TMP/$name.pairs" | paste -sd ';' -))"
    else
        not_ok "$name: every interrupt left by an IRET to its entry or a context switch"
        diag_file "$TMP/$name.pairs" 12
    fi
}

# fail NAME [DIAGNOSTIC LINES...]: not ok, with diagnostics
fail() { not_ok "$1"; shift; [ $# -gt 0 ] && diag "$@"; return 0; }

# run NAME EXPECTED_STATUS EXPECTED_STDERR -- ARGS...: one run of $VBTS
# (stdout in $TMP/out, stderr in $TMP/err); the status and the first line
# of stderr must be the expected ones (all of stderr with RUN_STDERR=all).
run() {
    local name=$1 want_rc=$2 want_err=$3 got_err
    shift 4
    "$VBTS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local rc=$?
    if [ "${RUN_STDERR:-first}" = all ]; then got_err=$(cat "$TMP/err"); else got_err=$(head -n 1 "$TMP/err"); fi
    if [ "$rc" = "$want_rc" ] && [ "$got_err" = "$want_err" ]; then
        ok "$name"
    else
        fail "$name" "status: got $rc, want $want_rc" "stderr: got '$got_err'" \
            "        want '$want_err'"
    fi
}

# mb_image OUT CODE [LOAD]: a flat multiboot image (a.out kludge) loaded at
# LOAD (default 1 MiB): the multiboot header, then the 32-bit nasm CODE.
mb_image() {
    local out=$1 load=${3:-0x100000}
    cat >"$TMP/img.asm" <<ASM
bits 32
org $load
hdr: dd 0x1badb002, 0x10000, -(0x1badb002 + 0x10000)
     dd hdr, hdr, 0, 0, start
start:
$2
ASM
    nasm -f bin -o "$out" "$TMP/img.asm"
}

# loop_image OUT LOOPS: call/ret LOOPS times, then debug-exit 0 (status 1):
# 3 * LOOPS - 1 branches between the start and stop markers.
loop_image() {
    mb_image "$1" "    mov ecx, $2
.l: call f
    dec ecx
    jnz .l
    mov al, 0
    out 0xf4, al
f:  ret"
}

# stub_symbols MAP OUT: a nasm map's code labels (not the local ".x" ones)
# as a System.map, for vbts-decode --symbols.
stub_symbols() {
    python3 - "$1" >"$2" <<'PY'
import re, sys
text = False
for line in open(sys.argv[1]):
    if line.startswith("---- Section "):
        text = line.startswith("---- Section .text")
        continue
    f = line.split()
    if text and len(f) == 3 and re.fullmatch(r"[0-9A-Fa-f]+", f[0]) and "." not in f[2]:
        print("%016x t %s" % (int(f[0], 16), f[2]))
PY
}

# chrome_check FILE: FILE is --format chrome output as the Trace Event
# Format has it: every E closes the newest open B of its vCPU, all close,
# times do not go back; prints the B events' names in order (stderr: why not).
chrome_check() {
    python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
assert set(t) == {"displayTimeUnit", "otherData", "traceEvents"}, t.keys()
open_, last, names = {}, {}, []
for e in t["traceEvents"]:
    ph, tid = e["ph"], e["tid"]
    assert e["pid"] == 1
    if ph == "M":
        assert e["name"] == "thread_name" and e["args"]["name"] == "vCPU %d" % tid
        continue
    assert e["ts"] >= last.get(tid, 0), e
    last[tid] = e["ts"]
    if ph == "B":
        open_.setdefault(tid, []).append(e["name"])
        names.append(e["name"])
    elif ph == "E":
        assert open_.get(tid), "E without B: %r" % e
        open_[tid].pop()
    else:
        assert ph == "i" and e["s"] == "t" and e["name"] in ("start", "stop", "lost", "ctx-arrive", "ctx-depart"), e
assert not any(open_.values()), open_
print("\n".join(names))
PY
}
