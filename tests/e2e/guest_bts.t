#!/bin/bash
# Guest-programmed BTS (IA32_DEBUGCTL / IA32_DS_AREA virtualised): each stub
# in guest-stub/bts/ checks its own DS buffer and exits 1 on success.  Each
# runs without and with vbts's own --trace, which must not disturb it.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
DEC=$VBTS_DECODE
T=$TMP
# fail NAME [DIAGNOSTIC LINES...]: not ok, with diagnostics

for stub in ds_wrap bts_pmi bts_cpl bts_bad; do
    for mode in plain traced; do
        args=()
        [ $mode = traced ] && args=(-q --trace "$T/$stub.vbts")
        "$VBTS" "${args[@]}" "$STUBS/bts/$stub.bin" >"$T/out" 2>"$T/err"
        rc=$?
        if [ $rc = 1 ]; then
            ok "$stub ($mode): the guest's own checks pass"
        else
            fail "$stub ($mode): the guest's own checks pass" \
                "status $rc: debug-exit code 0x$(printf %x $(((rc - 1) / 2)))" "$(cat "$T/err")"
        fi
    done
done

# The CPL3 half: on kvm_pvm user mode is stepped through the guest's #DB
# handler, and `int 0x80` delivered by the monitor (docs/engine.md).
"$VBTS" "$STUBS/bts/bts_user.bin" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc = 1 ]; then
    ok "bts_user: CPL3 branches stored, CPL0 ones not"
else
    fail "bts_user: CPL3 branches stored, CPL0 ones not" "status $rc" "$(cat "$T/err")"
fi

# Without a #DB gate, kvm_pvm cannot step user mode: vbts stops at the
# privilege change and says exactly that.  Other hosts need no gate.
nasm -f bin -Iguest-stub/include/ -Iguest-stub/bts/ -DNO_DB_GATE -DMAPFILE="\"$T/nodb.map\"" \
    -o "$T/nodb.bin" guest-stub/bts/bts_user.asm
"$VBTS" "$T/nodb.bin" >"$T/out" 2>"$T/err"
rc=$?
err=$(cat "$T/err")
case $VBTS_HOST in
kvm_pvm)
    at=$(awk '$3 == "iret_to_user" {print tolower($1); exit}' "$T/nodb.map")
    want="vbts: cannot trace CPL3 code on this host (kvm_pvm steps user mode only through a 64-bit guest's #DB handler, entered by IRETQ or SYSRET); trace ends before 0x$at"
    if [ $rc = 125 ] && [ "$err" = "$want" ]; then ok "bts_user without a #DB gate: stopped at the iretq, said why (status 125)"
    else fail "bts_user without a #DB gate: stopped at the iretq, said why" "status $rc" "$err" "want: $want"; fi ;;
*)
    if [ $rc = 1 ]; then ok "bts_user without a #DB gate: CPL3 branches stored (status 1)"
    else fail "bts_user without a #DB gate: CPL3 branches stored" "status $rc" "$err"; fi ;;
esac

# The monitor keeps running and says once what the bad DS areas did.
"$VBTS" "$STUBS/bts/bts_bad.bin" >"$T/out" 2>"$T/err"
want="vbts: vCPU 0: guest DS area or BTS buffer at 0x40001000 is not mapped: injected #PF, guest BTS off
vbts: vCPU 0: guest DS area or BTS buffer at 0x3ff00000 is not guest RAM: records dropped, guest BTS off"
if [ "$(cat "$T/err")" = "$want" ]; then
    ok "bad DS areas: one log line each"
else
    fail "bad DS areas: one log line each" "got: $(cat "$T/err")"
fi

# vbts's trace sees everything, the guest buffer only what DEBUGCTL selects:
# bts_pmi's PMI delivery is an interrupt record in vbts's trace too.
"$DEC" --format json "$T/bts_pmi.vbts" >"$T/pmi.json" 2>&1
if grep -q '"kind":"interrupt"' "$T/pmi.json"; then
    ok "bts_pmi: vbts's trace records the PMI delivery"
else
    fail "bts_pmi: vbts's trace records the PMI delivery" "$(tail -n 3 "$T/pmi.json")"
fi

# Without virtualisation the MSRs are KVM's: the guest sees BTS unusable.
"$VBTS" --no-guest-bts "$STUBS/bts/ds_wrap.bin" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc != 1 ]; then
    ok "--no-guest-bts: the guest's BTS checks fail (status $rc)"
else
    fail "--no-guest-bts: the guest's BTS checks fail" "status 1"
fi

plan "$TAP_N"
exit $((TAP_FAILED > 0))
