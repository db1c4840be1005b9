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

TAP_N=0
TAP_FAILED=0

plan()   { echo "1..$1"; }
ok()     { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - $*"; }
skip()   { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
# diag: stdin (or the arguments) as TAP diagnostics, on stderr so that
# prove shows them without -v.
diag() {
    if [ $# -gt 0 ]; then printf '%s\n' "$*"; else cat; fi | sed 's/^/# /' >&2
}
# diag_file FILE [LINES]: the last lines of a file as diagnostics.
diag_file() { [ -s "$1" ] && tail -n "${2:-15}" "$1" | diag; return 0; }

have_qemu() { command -v "$QEMU" >/dev/null 2>&1; }
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
