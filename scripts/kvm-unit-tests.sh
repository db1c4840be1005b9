#!/bin/bash
# SPDX-License-Identifier: MIT
# kvm-unit-tests under vbts: each x86 test untraced, then traced with each
# engine (--verify-flow, a window of the first N branches, then on
# untraced), and whether the traced runs printed the same PASS/FAIL/SKIP
# lines (docs/kvm-unit-tests.md).  Not part of `make test`: the suite is
# the user's own build.
#
#   scripts/kvm-unit-tests.sh [options] KUT_DIR [TEST...]
#
#   KUT_DIR          a kvm-unit-tests tree, configured and built for x86_64
#                    (./configure && make): x86/NAME.flat, x86/unittests.cfg
#   TEST...          sections of x86/unittests.cfg (default: the list below)
#   --lab            run it all in the stock-KVM lab (scripts/lab.sh run)
#   --vbts PATH      the monitor (default: build/vbts of this tree)
#   --engines LIST   traced runs, e.g. "step branch" (default), "" for none
#   --max-branches N the traced window (default 300000)
#   --timeout S      seconds a run may take (default 600)
#   --out DIR        keep each run's output and stderr there (not with --lab)
#
# Per test: smp from unittests.cfg is --cpus (1 if it has none), its
# extra_params' -append the command line; the environment kvm-unit-tests'
# own runner hands over as a module (--initrd) is written the same way
# (the kernel's version, the errata it has fixed).  qemu_params (CPU
# models) have no meaning here: the guest sees the host's CPU as KVM
# gives it.  Prints, per test, the untraced verdict lines and status, then
# one line per engine: "same" (the same lines and exit status: sieve and
# realmode report by their status alone), the differences, or the clear
# stop.  A test whose two untraced runs differ in numbers only (values it
# draws at random, as xsave does) is compared with its numbers masked; one
# whose untraced run the timeout kills is not traced.
# Exit status: 0 when every traced run printed the untraced lines or
# stopped clearly (status 125, one line), 1 otherwise.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTS_DEFAULT="debug syscall idt_test eventinj realmode emulator xsave smptest sieve umip msr setjmp"

usage() { sed -n '4,33p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

lab=0 vbts=$ROOT/build/vbts engines="step branch" maxb=300000 tmo=600 out=""
args=("$@")
while [ $# -gt 0 ]; do
    case $1 in
    --lab) lab=1 ;;
    --vbts) vbts=$2; shift ;;
    --engines) engines=$2; shift ;;
    --max-branches) maxb=$2; shift ;;
    --timeout) tmo=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage 0 ;;
    -*) echo "kvm-unit-tests.sh: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
    shift
done
[ $# -ge 1 ] || usage
kut=$(cd "$1" 2>/dev/null && pwd) || { echo "kvm-unit-tests.sh: no directory $1" >&2; exit 2; }
shift
tests=${*:-$TESTS_DEFAULT}
[ -f "$kut/x86/unittests.cfg" ] || { echo "kvm-unit-tests.sh: $kut/x86/unittests.cfg not found" >&2; exit 2; }

if [ $lab = 1 ]; then
    # The lab's runs see this machine's files read-only.
    [ -z "$out" ] || { echo "kvm-unit-tests.sh: --out cannot be written from the lab" >&2; exit 2; }
    rest=()
    for a in "${args[@]}"; do [ "$a" = --lab ] || rest+=("$a"); done
    exec "$ROOT/scripts/lab.sh" run "$ROOT/scripts/kvm-unit-tests.sh" "${rest[@]}"
fi
case $vbts in /*) ;; *) vbts=$PWD/$vbts ;; esac
[ -x "$vbts" ] || { echo "kvm-unit-tests.sh: $vbts is not built (make)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/vbts-kut.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -n "$out" ] && mkdir -p "$out"

# KEY of section NAME in unittests.cfg ("" if it has none).
cfg() {
    awk -v s="[$1]" -v k="$2" '
        /^\[/ { in_s = ($0 == s); next }
        in_s && $0 ~ "^" k "[ \t]*=" { sub("^" k "[ \t]*=[ \t]*", ""); print; exit }' "$kut/x86/unittests.cfg"
}

# The environment kvm-unit-tests' runner passes as -initrd: the host kernel's
# version, and ERRATA_<commit>=y for each erratum fixed in a kernel no newer.
env_file() {
    local rel v p s min
    rel=$(uname -r)
    IFS=. read -r v p s <<<"$rel"
    s=${s%%[!0-9]*}
    {
        echo "TARGET=qemu"
        echo "KERNEL_VERSION_STRING=$rel"
        echo "KERNEL_VERSION=$v"
        echo "KERNEL_PATCHLEVEL=$p"
        echo "KERNEL_SUBLEVEL=$s"
        grep -v '^#' "$kut/errata.txt" 2>/dev/null | tr -d '[:blank:]' | cut -d: -f1,2 |
        while IFS=: read -r commit min; do
            [ -n "$commit" ] && [ -n "$min" ] || continue
            [ "$(printf '%s\n%s\n' "$min" "${rel%%-*}" | sort -V | head -n 1)" = "$min" ] &&
                echo "ERRATA_$commit=y"
        done
    } >"$1"
}
env_file "$work/env"

# run NAME TAG [vbts options...]: one run; its verdict lines in $work/NAME.TAG.v,
# status in RUN_ST, seconds in RUN_T, stderr in $work/NAME.TAG.err.
run() {
    local name=$1 tag=$2
    shift 2
    local file smp extra app=()
    file=$(cfg "$name" file)
    smp=$(cfg "$name" smp)
    extra=$(cfg "$name" extra_params)
    if [[ $extra =~ -append\ \'([^\']*)\' ]] || [[ $extra =~ -append\ \"([^\"]*)\" ]] ||
       [[ $extra =~ -append\ ([^ ]+) ]]; then
        app=(--append "${BASH_REMATCH[1]}")
    fi
    local t0 t1
    t0=$(date +%s.%N)
    RUN_ST=0
    timeout -k 10 "$tmo" "$vbts" --cpus "${smp:-1}" --initrd "$work/env" "${app[@]}" "$@" \
        "$kut/x86/$file" >"$work/$name.$tag.out" 2>"$work/$name.$tag.err" </dev/null || RUN_ST=$?
    t1=$(date +%s.%N)
    RUN_T=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    tr -d '\r' <"$work/$name.$tag.out" | grep -E '^(PASS|FAIL|XPASS|XFAIL|SKIP|SUMMARY):' >"$work/$name.$tag.v"
    if [ -n "$out" ]; then
        cp "$work/$name.$tag.out" "$out/$name.$tag.out"
        cp "$work/$name.$tag.err" "$out/$name.$tag.err"
    fi
}

count() { grep -c "^$1:" "$2"; }
mask() { sed -E 's/0x[0-9a-fA-F]+/0x#/g; s/[0-9]+/#/g'; }

bad=0
printf 'vbts %s on %s (%s), kvm-unit-tests %s\n' "$("$vbts" --version | head -n 1)" "$(uname -r)" \
    "$(for m in kvm_pvm kvm_intel kvm_amd; do [ -d /sys/module/$m ] && echo $m && break; done)" \
    "$(git -C "$kut" describe --always 2>/dev/null || echo '?')"
for name in $tests; do
    file=$(cfg "$name" file)
    if [ -z "$file" ] || [ ! -f "$kut/x86/$file" ]; then
        printf '\n== %s: not in unittests.cfg or not built\n' "$name"
        continue
    fi
    run "$name" plain
    base=$work/$name.plain.v
    base_st=$RUN_ST
    base_t=$RUN_T
    # A second untraced run: lines that differ between the two carry numbers
    # the test draws at random (xsave's XGETBV operands); then every run's
    # lines are compared with their numbers masked.
    masked=0
    # An untraced run the timeout killed gives nothing to compare with.
    eng=$engines
    [ "$base_st" = 124 ] && eng=""
    if [ -n "$eng" ]; then
        run "$name" again
        if ! cmp -s "$base" "$work/$name.again.v"; then
            masked=1
            mask <"$base" >"$base.m"
            mask <"$work/$name.again.v" >"$work/$name.again.m"
            cmp -s "$base.m" "$work/$name.again.m" || masked=2
        fi
    fi
    RUN_ST=$base_st RUN_T=$base_t
    summary=$(grep '^SUMMARY:' "$base" || echo "no SUMMARY line")
    printf '\n== %s (--cpus %s): status %s, %ss, %s PASS, %s FAIL, %s SKIP; %s\n' "$name" \
        "$(cfg "$name" smp | grep . || echo 1)" "$RUN_ST" "$RUN_T" "$(count PASS "$base")" \
        "$(count FAIL "$base")" "$(count SKIP "$base")" "$summary"
    grep -v '^SUMMARY:' "$base" | sed 's/^/   /'
    [ "$RUN_ST" = 124 ] && echo "   (untraced: killed after ${tmo}s; not traced, there is nothing to compare with)"
    case $masked in
    1) echo "   (two untraced runs differ in numbers only: the traced lines are compared with numbers masked)" ;;
    2) echo "   (two untraced runs differ beyond numbers: the traced lines are compared with the first)" ;;
    esac
    # Not the debug-exit's (V<<1)|1: what vbts said (a crash, the host's failure).
    [ $((base_st % 2)) = 0 ] && [ "$base_st" != 124 ] &&
        grep '^vbts: ' "$work/$name.plain.err" | head -n 3 | sed 's/^/   untraced: /'
    for e in $eng; do
        run "$name" "$e" --engine "$e" --verify-flow --max-branches "$maxb" --trace "$work/$name.$e.vbts" --force
        flow=$(grep -o 'verify-flow: .*' "$work/$name.$e.err" | head -n 1)
        rm -f "$work/$name.$e.vbts"
        if [ "$RUN_ST" = 125 ]; then
            printf '   %-6s clear stop, %ss: %s\n' "$e" "$RUN_T" "$(grep '^vbts: ' "$work/$name.$e.err" | head -n 1)"
        elif [ "$RUN_ST" = "$base_st" ] && cmp -s "$base" "$work/$name.$e.v"; then
            printf '   %-6s same, status %s, %ss (%s)\n' "$e" "$RUN_ST" "$RUN_T" "$flow"
        elif [ "$RUN_ST" = "$base_st" ] && [ $masked = 1 ] && mask <"$work/$name.$e.v" | cmp -s "$base.m" -; then
            printf '   %-6s same but for the random numbers, status %s, %ss (%s)\n' "$e" "$RUN_ST" "$RUN_T" "$flow"
        else
            bad=1
            printf '   %-6s DIFFERENT, status %s, %ss (%s):\n' "$e" "$RUN_ST" "$RUN_T" "$flow"
            diff "$base" "$work/$name.$e.v" | grep '^[<>]' | sed 's/^/          /' | head -n 20
            grep '^vbts: ' "$work/$name.$e.err" | grep -v 'verify-flow\|engine:\|trace ' | head -n 3 | sed 's/^/          /'
        fi
    done
done
exit $bad
