#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stubs.t: every guest stub (guest-stub/*.asm), three ways.
#   (a) its @bts annotations == the branches QEMU (TCG) derives, record by
#       record, and QEMU's exit status == the stub's @exit status;
#   (b) `vbts --trace T STUB.bin` exits with the stub's debug-exit status;
#   (c) `vbts-decode --format json T`, markers dropped, records within the
#       stub's load range == the annotations, in order.
# (b) and (c) are skipped while the monitor or decoder is not built.
. "$(dirname "$0")/tap.sh"

cd "$ROOT"
stubs=()
for f in guest-stub/*.asm; do stubs+=("$(basename "$f" .asm)"); done
plan $((3 * ${#stubs[@]}))

# A stub's image and map: from $STUBS when up to date, else built here.
stub_files() {
    local name=$1 bin=$STUBS/$1.bin map=$STUBS/$1.map
    local newest
    newest=$(ls -t "guest-stub/$name.asm" guest-stub/include/*.inc "$bin" "$map" 2>/dev/null | head -n 1)
    if [ -f "$bin" ] && [ -f "$map" ] && [ "$newest" = "$bin" -o "$newest" = "$map" ]; then
        BIN=$bin MAP=$map
        return 0
    fi
    BIN=$TMP/$name.bin MAP=$TMP/$name.map
    diag "$name: $bin missing or older than its sources: building it in a temporary directory"
    nasm -f bin -Iguest-stub/include/ -DMAPFILE="\"$MAP\"" -o "$BIN" "guest-stub/$name.asm" 2>&1 | diag
    [ -f "$BIN" ] && [ -f "$MAP" ]
}

for name in "${stubs[@]}"; do
    asm=guest-stub/$name.asm
    if ! stub_files "$name"; then
        not_ok "$name: annotations == QEMU (the stub does not build)"
        not_ok "$name: vbts exit status (the stub does not build)"
        not_ok "$name: vbts trace == annotations (the stub does not build)"
        continue
    fi
    exp=$TMP/$name.expected
    if ! "$ORACLE/bts-expect" --map "$MAP" "$asm" >"$exp" 2>"$exp.err" ||
       ! status=$("$ORACLE/bts-expect" --exit-status "$asm" 2>>"$exp.err"); then
        diag_file "$exp.err"
        not_ok "$name: annotations == QEMU (bad annotations)"
        not_ok "$name: vbts exit status (bad annotations)"
        not_ok "$name: vbts trace == annotations (bad annotations)"
        continue
    fi
    nrec=$(wc -l <"$exp")

    # (a) annotations against QEMU: no KVM in it, so this machine's run
    # checks it for both hosts (under TCG it costs the lab a minute).
    if [ "${VBTS_HOST#lab/}" != "$VBTS_HOST" ]; then
        skip "$name: annotations == QEMU" "no KVM in this check: this machine's run makes it"
    elif ! have_qemu; then
        skip "$name: annotations == QEMU" "$QEMU not found"
    else
        qemu=$TMP/$name.qemu
        if ! "$ORACLE/qemu-branches" --expect-status "$status" "$BIN" >"$qemu" 2>"$qemu.err"; then
            diag_file "$qemu.err"
            not_ok "$name: annotations == QEMU (qemu-branches failed)"
        elif compare_records "$exp" "$qemu" "$MAP" "$asm"; then
            ok "$name: annotations == QEMU ($nrec records, exit status $status)"
        else
            not_ok "$name: annotations == QEMU"
        fi
    fi

    # (b) vbts's exit status, (c) its trace
    if ! have_vbts; then
        skip "$name: vbts exit status $status" "no monitor at $VBTS"
        skip "$name: vbts trace == annotations" "no monitor at $VBTS"
        continue
    fi
    # Exceptions no foresight sees are caught at their handlers by
    # breakpoints; where a stock KVM host fires none (QEMU 7.2's nested SVM,
    # LAB_QEMU=system) the trace stops there instead, which exact.t checks.
    case $name:$VBTS_HOST:${LAB_QEMU:-} in
    unforeseen*:lab/*:system)
        skip "$name: vbts exit status $status" "this host's guests fire no breakpoints: a clear stop (exact.t)"
        skip "$name: vbts trace == annotations" "this host's guests fire no breakpoints: a clear stop (exact.t)"
        continue ;;
    tfsysret:kvm_pvm:*)
        # User mode is stepped through the guest's TF itself there: the guest's own TF stops the trace.
        run_vbts "$BIN" "$TMP/$name.vbts" "$TMP/$name.run"
        at=0x$(awk '$NF == "main64.sr" { print tolower($1); exit }' "$MAP" | sed 's/^0*//')
        line="vbts: trace stopped at $at on vCPU 0: the guest's own single-step or breakpoints in user mode, where this host (kvm_pvm) is stepped through the guest's TF itself"
        if [ "$VBTS_STATUS" = 125 ] && grep -qxF "$line" "$TMP/$name.run.err" &&
           [ "$(grep -c 'trace stopped' "$TMP/$name.run.err")" = 1 ]; then
            ok "$name: a clear stop at the SYSRET (status 125)"
        else
            diag_file "$TMP/$name.run.err"
            not_ok "$name: a clear stop at the SYSRET (status $VBTS_STATUS; want 125: $line)"
        fi
        skip "$name: vbts trace == annotations" "a clear stop on this host"
        continue ;;
    esac
    trace=$TMP/$name.vbts
    run_vbts "$BIN" "$trace" "$TMP/$name.run"
    if [ "$VBTS_STATUS" = "$status" ]; then
        ok "$name: vbts exit status $status"
    else
        diag "vbts exited with status $VBTS_STATUS, expected $status; its stderr:"
        diag_file "$TMP/$name.run.err"
        not_ok "$name: vbts exit status $status"
    fi
    if ! have_decode; then
        skip "$name: vbts trace == annotations" "no decoder at $VBTS_DECODE"
    elif [ ! -s "$trace" ]; then
        diag "vbts wrote no trace to $trace"
        not_ok "$name: vbts trace == annotations"
    elif decode_records "$trace" "$BIN" "$TMP/$name.got" &&
         compare_records "$exp" "$TMP/$name.got" "$MAP" "$asm"; then
        ok "$name: vbts trace == annotations ($nrec records)"
    else
        not_ok "$name: vbts trace == annotations"
    fi
done
[ "$TAP_FAILED" = 0 ]
