#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# exact.t: a trace is exact, or it stops with status 125 and one line.
#
# The unforeseen stubs raise exceptions that no instruction's bytes and
# operands foretell (segment loads, lock prefixes, mov cs, a gate not
# present), and their handlers drop the frame and jump on.  Under each
# engine, with hosts' exceptions caught at their handlers as usual, they
# are exact (stubs.t checks the default engine against QEMU).  With
# VBTS_EXCEPTION_WATCH=0 vbts runs as on a host whose breakpoints do not
# fire: where the host steps with RFLAGS.TF (stock KVM) the first such
# exception that vbts does not foresee escapes the steps, and the check of
# every exit (vmm/trace/exitcheck.h) must end the trace there (or, all
# foreseen, the trace is exact; never the stub's status with fewer
# records): status 125, one line
# naming both addresses (where the trace stops, where the vCPU was
# found), a `desync` stop marker, vbts-decode saying the
# trace is incomplete, and every record before it one of the stub's, in
# order.  kvm_pvm steps handlers itself: exact there all the same.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
have_vbts && have_decode || { plan 1; skip "exactness" "vbts is not built"; exit 0; }

case $VBTS_HOST in
kvm_pvm) tf=0 ;;
*) tf=1 ;;
esac
# QEMU 7.2's nested SVM fires no breakpoint (LAB_QEMU=system): there
# exceptions are only foreseen, whatever VBTS_EXCEPTION_WATCH says.
fires=1
case $VBTS_HOST in lab/*) [ "${LAB_QEMU:-}" = system ] && fires=0 ;; esac
[ $fires = 1 ] && engines="step branch" || engines=step

for name in unforeseen32 unforeseen64; do
    bin=$STUBS/$name.bin map=$STUBS/$name.map
    "$ORACLE/bts-expect" --map "$map" "guest-stub/$name.asm" >"$TMP/$name.exp"
    status=$("$ORACLE/bts-expect" --exit-status "guest-stub/$name.asm")
    n=$(wc -l <"$TMP/$name.exp")
    for e in $engines; do
        for w in 1 0; do
            what="$name, --engine $e$([ $w = 0 ] && echo ', VBTS_EXCEPTION_WATCH=0')"
            st=0
            VBTS_EXCEPTION_WATCH=$w timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --engine "$e" --force \
                --trace "$TMP/t.vbts" "$bin" >/dev/null 2>"$TMP/err" </dev/null || st=$?
            dst=0
            "$VBTS_DECODE" --format json "$TMP/t.vbts" >"$TMP/t.json" 2>"$TMP/derr" || dst=$?
            "$ORACLE/vbts-records" --image "$bin" "$TMP/t.json" >"$TMP/t.rec" 2>/dev/null
            got=$(wc -l <"$TMP/t.rec")
            if { [ $w = 1 ] && [ $fires = 1 ]; } || [ $tf = 0 ]; then
                if [ $st = "$status" ] && [ $dst = 0 ] && cmp -s "$TMP/$name.exp" "$TMP/t.rec"; then
                    ok "$what: exact, $n records, status $st"
                else
                    not_ok "$what: exact"
                    diag "status $st (want $status), decode $dst"; diag_file "$TMP/err"
                    compare_records "$TMP/$name.exp" "$TMP/t.rec" "$map" "guest-stub/$name.asm"
                fi
                continue
            fi
            lines=$(grep -v '^vbts: \(engine: \|trace /\)' "$TMP/err")
            # What vbts foresees (segment loads and far branches through bad
            # selectors, x86/fault.c) never escapes: such a run is exact.
            if [ $st = "$status" ] && [ $dst = 0 ] && cmp -s "$TMP/$name.exp" "$TMP/t.rec"; then
                ok "$what: exact, $n records, every exception foreseen"
            elif [ $st = 125 ] && [ "$(wc -l <<<"$lines")" = 1 ] &&
               { [[ $lines =~ ^vbts:\ trace\ stopped\ at\ 0x[0-9a-f]+:\ an\ exception\ came\ there\ .*\(the\ vCPU\ is\ at\ 0x[0-9a-f]+\ now\) ]] ||
                 [[ $lines =~ ^vbts:\ trace\ lost\ step\ synchronisation:\ the\ instruction\ at\ 0x[0-9a-f]+\ was\ followed\ by\ 0x[0-9a-f]+,\ which\ it\ cannot\ reach$ ]] ||
                 [[ $lines =~ ^vbts:\ vCPU\ 0\ cannot\ take\ vector\ [0-9]+\ at\ 0x[0-9a-f]+:\  ]]; } &&
               grep -q '"kind":"stop","reason":"\(desync\|error\)"' "$TMP/t.json" && [ $dst = 1 ] &&
               grep -q "trace incomplete: vCPU 0 stopped where the monitor \(lost its step synchronisation\|failed\)" "$TMP/derr" &&
               [ "$got" -lt "$n" ] && cmp -s "$TMP/t.rec" <(head -n "$got" "$TMP/$name.exp"); then
                ok "$what: status 125, one line, a stop (desync, or an event vbts cannot deliver), $got of $n records, each the stub's"
            else
                not_ok "$what: status 125, one line, a desync stop, the records a prefix"
                diag "status $st, decode $dst, $got of $n records"; diag "$lines"; diag_file "$TMP/derr"
            fi
        done
    done
done
plan "$TAP_N"
exit $((TAP_FAILED > 0))
