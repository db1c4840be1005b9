#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# selfdebug.t: a guest that debugs itself (docs/engine.md, "The guest's own
# debugging").  stubs.t checks guest-stub/selfdebug.asm against QEMU; here,
# under both engines:
#   - ICEBP (guest-stub/selfcheck/icebp.asm), which QEMU's TCG cannot judge
#     (it raises #UD): vbts's records == the annotations, the guest's own
#     count right (status 1);
#   - the guest's own single-step across HLT, not modelled: status 125,
#     the one line, a stop marker of reason `unsupported`, and every record
#     before it the stub's;
#   - a window that closes while the guest's TF and breakpoints are on:
#     the guest runs on with them, as the CPU runs it (status 1 wherever
#     the window ends).  Not on kvm_pvm, whose emulator fires none of the
#     guest's data breakpoints untraced (selfdebug.bin fails its own check
#     there without vbts);
#   - a window that opens at --trace-start after the guest armed its own
#     breakpoints: where the trigger waited in the debug registers (KVM
#     then loads the monitor's DR7, not the guest's), a clear stop; with
#     VBTS_START_TRIGGER=page, which leaves them to the guest, status 1.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
have_vbts && have_decode || { plan 1; skip "the guest's own debugging" "vbts is not built"; exit 0; }
command -v nasm >/dev/null || { plan 1; skip "the guest's own debugging" "no nasm"; exit 0; }

fires=1
case $VBTS_HOST in lab/*) [ "${LAB_QEMU:-}" = system ] && fires=0 ;; esac
[ $fires = 1 ] && engines="step branch" || engines=step
windows="4 10 20 30"
plan $((2 * 2 + 4 + 4 + 2))

# build NAME: guest-stub/selfcheck/NAME.asm into $TMP, its expected records in $TMP/NAME.exp.
build() {
    local name=$1 asm=guest-stub/selfcheck/$1.asm
    nasm -f bin -Iguest-stub/include/ -DMAPFILE="\"$TMP/$name.map\"" -o "$TMP/$name.bin" "$asm" &&
        "$ORACLE/bts-expect" -I guest-stub/include --map "$TMP/$name.map" "$asm" >"$TMP/$name.exp"
}

build icebp || diag "icebp.asm does not build"
build tfhlt || diag "tfhlt.asm does not build"
for e in step branch; do
    if [[ " $engines " != *" $e "* ]]; then
        skip "icebp, --engine $e: records and status" "no breakpoints fire here"
        skip "TF across HLT, --engine $e: a clear stop" "no breakpoints fire here"
        continue
    fi
    out=$TMP/icebp-$e
    timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --engine "$e" --trace "$out.vbts" "$TMP/icebp.bin" \
        >"$out.out" 2>"$out.err" </dev/null
    st=$?
    if [ $st = 1 ] && decode_records "$out.vbts" "$TMP/icebp.bin" "$out.got" &&
       compare_records "$TMP/icebp.exp" "$out.got" "$TMP/icebp.map" guest-stub/selfcheck/icebp.asm; then
        ok "icebp, --engine $e: records and status"
    else
        not_ok "icebp, --engine $e: records and status (status $st)"
        diag_file "$out.err"
    fi

    out=$TMP/tfsc-$e
    timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --engine "$e" --trace "$out.vbts" "$TMP/tfhlt.bin" \
        >"$out.out" 2>"$out.err" </dev/null
    st=$?
    line="vbts: trace stopped at 0x$(awk '$NF == "stop" { print tolower($1); exit }' "$TMP/tfhlt.map" |
        sed 's/^0*//') on vCPU 0: the guest's own single-step across HLT is not modelled"
    "$VBTS_DECODE" "$out.vbts" >"$out.dec" 2>/dev/null
    # vbts-decode says the trace is incomplete (status 1) after every record.
    "$VBTS_DECODE" --format json "$out.vbts" >"$out.json" 2>"$out.derr"
    dst=$?
    if [ $st = 125 ] && [ "$(grep -c 'trace stopped' "$out.err")" = 1 ] && grep -qxF "$line" "$out.err" &&
       grep -q -- '-- stop unsupported' "$out.dec" && [ $dst = 1 ] && grep -q 'trace incomplete' "$out.derr" &&
       "$ORACLE/vbts-records" --image "$TMP/tfhlt.bin" "$out.json" >"$out.got" &&
       compare_records "$TMP/tfhlt.exp" "$out.got" "$TMP/tfhlt.map" guest-stub/selfcheck/tfhlt.asm; then
        ok "TF across HLT, --engine $e: a clear stop"
    else
        not_ok "TF across HLT, --engine $e: a clear stop (status $st; want: $line)"
        diag_file "$out.err"
    fi
done

# The window closes at record N; the guest's TF and DR0-3 are the CPU's from
# there.  Under the default engine, and where the step engine closes it.
for e in "" step; do
    for n in $windows; do
        what="selfdebug${e:+, --engine $e}, window of $n records: the guest runs on with its own debugging"
        if [ "$VBTS_HOST" = kvm_pvm ]; then
            skip "$what" "kvm_pvm fires no data breakpoint of the guest's untraced"
            continue
        fi
        out=$TMP/win-$e$n
        timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" ${e:+--engine $e} --max-branches "$n" --trace "$out.vbts" \
            "$STUBS/selfdebug.bin" >"$out.out" 2>"$out.err" </dev/null
        st=$?
        if [ $st = 1 ]; then
            ok "$what"
        else
            not_ok "$what (status $st)"
            diag_file "$out.err"
        fi
    done
done

# --trace-start at w1, after the guest armed DR1 for writes.
w1=0x$(awk '$NF == "w1" { print tolower($1); exit }' "$STUBS/selfdebug.map" | sed 's/^0*//')
out=$TMP/start-bp
if [ $fires = 0 ]; then
    skip "--trace-start in the debug registers after the guest armed its own: a clear stop" "no breakpoints fire here"
else
    VBTS_START_TRIGGER=breakpoint timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --trace-start "$w1" --trace "$out.vbts" \
        "$STUBS/selfdebug.bin" >"$out.out" 2>"$out.err" </dev/null
    st=$?
    line="vbts: trace stopped at $w1 on vCPU 0: the guest armed breakpoints of its own while --trace-start waited in the debug registers, where KVM did not fire them (VBTS_START_TRIGGER=page leaves them to the guest)"
    if [ $st = 125 ] && grep -qxF "$line" "$out.err" && [ "$(grep -c 'trace stopped' "$out.err")" = 1 ]; then
        ok "--trace-start in the debug registers after the guest armed its own: a clear stop"
    else
        not_ok "--trace-start in the debug registers after the guest armed its own: a clear stop (status $st)"
        diag_file "$out.err"
    fi
fi
out=$TMP/start-page
VBTS_START_TRIGGER=page timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --trace-start "$w1" --trace "$out.vbts" \
    "$STUBS/selfdebug.bin" >"$out.out" 2>"$out.err" </dev/null
st=$?
if [ $st = 1 ]; then
    ok "--trace-start by the trigger's page after the guest armed its own breakpoints: status 1"
else
    not_ok "--trace-start by the trigger's page after the guest armed its own breakpoints: status 1 (status $st)"
    diag_file "$out.err"
fi
exit $((TAP_FAILED > 0))
