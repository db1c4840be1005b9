#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# smp-hangs.sh: count how often a 2-vCPU Linux guest fails to live on after
# a traced window (linux.t's smp case), on this machine's KVM or, through
# scripts/lab.sh, in the stock-KVM lab.
#
#   scripts/smp-hangs.sh [-n RUNS] [--mode traced|instant|untraced]
#                        [--engine step|branch] [--start SYMBOL] [--branches N]
#                        [--timeout SECONDS] [--keep DIR]
#   scripts/lab.sh run scripts/smp-hangs.sh -n 100        (the lab)
#
# traced:   a window of 50,000 branches (--branches) from sched_init_smp
#           (--start), --verify-flow (the default), then on untraced to the
#           initramfs's marker;
# instant:  the same window ended after its first branch;
# untraced: no window, the control.
# A run passes when the guest prints "VBTS-LINUX-OK cpus=2 online=0-1" and
# powers off with status 0.  A run still going after --timeout seconds
# (default 240, 900 where CPL0 is emulated) is a hang: SIGTERM ends it, and
# vbts's lines on where each vCPU stood and what it waited with (its LAPIC,
# events, debug state) are printed with the console's last line.  Ends
# with "runs N, passed N, hangs N, failed N"; exit 1 if any did not pass.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
VBTS=${VBTS:-$ROOT/$BUILD/vbts}
GUEST=${LINUX_GUEST:-$ROOT/build/linux}
runs=10 mode=traced engine="" timeout="" keep="" start=sched_init_smp branches=50000

usage() { sed -n '7,10p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case $1 in
    -n) runs=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --engine) engine=$2; shift 2 ;;
    --start) start=$2; shift 2 ;;
    --branches) branches=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "smp-hangs: unknown argument '$1'" >&2; usage ;;
    esac
done
case $runs$branches in '' | *[!0-9]*) echo "smp-hangs: -n and --branches take a number" >&2; exit 2 ;; esac
case $mode in traced | instant | untraced) ;; *) echo "smp-hangs: --mode traced, instant or untraced" >&2; exit 2 ;; esac
[ -x "$VBTS" ] || { echo "smp-hangs: $VBTS not built (make)" >&2; exit 2; }
"$ROOT/scripts/linux-guest.sh" "$GUEST" >/dev/null && "$ROOT/scripts/linux-symbols.sh" "$GUEST" >/dev/null ||
    { echo "smp-hangs: the Linux guest or its symbols could not be prepared" >&2; exit 2; }
if [ -z "$timeout" ]; then
    # Where CPL0 code is emulated (kvm_pvm) a boot takes minutes.
    if [ -d /sys/module/kvm_pvm ]; then timeout=900; else timeout=240; fi
fi
host=$(for m in kvm_intel kvm_amd kvm_pvm; do [ -d /sys/module/$m ] && echo $m; done | head -n 1)

. "$ROOT/scripts/linux-cmdline"      # linux.t's kernel command line
args=(--cpus 2 --memory 256M --initrd "$GUEST/initramfs.cpio" --append "$LINUX_APPEND nokaslr"
      --symbols "$GUEST/System.map")
[ -n "$engine" ] && args+=(--engine "$engine")
dir=${keep:-$(mktemp -d "${TMPDIR:-/tmp}/smp-hangs.XXXXXX")}
mkdir -p "$dir"
[ -n "$keep" ] || trap 'rm -rf "$dir"' EXIT

passed=0 hangs=0 failed=0
for i in $(seq 1 "$runs"); do
    extra=()
    case $mode in
    traced) extra=(--trace-start "$start" --max-branches "$branches" --verify-flow --trace "$dir/t.vbts" --force) ;;
    instant) extra=(--trace-start "$start" --max-branches 1 --trace "$dir/t.vbts" --force) ;;
    esac
    t0=$SECONDS
    timeout -s TERM -k 30 "$timeout" "$VBTS" "${args[@]}" "${extra[@]}" "$GUEST/bzImage" \
        >"$dir/$i.out" 2>"$dir/$i.err" </dev/null
    st=$? secs=$((SECONDS - t0))
    if [ $st = 0 ] && tr -d '\r' <"$dir/$i.out" | grep -q "VBTS-LINUX-OK cpus=2 online=0-1"; then
        passed=$((passed + 1))
        echo "run $i: passed (${secs}s)"
        continue
    fi
    if [ $st = 124 ] || [ $st = 143 ]; then
        hangs=$((hangs + 1))
        echo "run $i: HANG after ${secs}s (status $st)"
    else
        failed=$((failed + 1))
        echo "run $i: FAILED with status $st after ${secs}s"
    fi
    grep -E '^vbts: (where the guest stood|vCPU [0-9]+:|verify-flow|trace )' "$dir/$i.err" | sed 's/^/    /'
    grep -v -E '^vbts: (where the guest stood|vCPU [0-9]+:|verify-flow|trace )' "$dir/$i.err" | tail -n 3 | sed 's/^/    err: /'
    tr -d '\r' <"$dir/$i.out" | grep -a . | tail -n 3 | sed 's/^/    console: /'
done
echo "smp-hangs: host ${host:-unknown}, mode $mode${engine:+, engine $engine}, window from $start, timeout ${timeout}s"
echo "runs $runs, passed $passed, hangs $hangs, failed $failed"
[ $passed = "$runs" ]
