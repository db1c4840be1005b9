#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# window.t: trace windows (--trace-start/--trace-stop/--max-branches with
# symbols), filters (--cpl, --cr3), context markers and --verify-flow, on
# the annotated stubs: the records must be exactly the annotated slice.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"

# Stub symbols in System.map form, from nasm's map.
sysmap() { awk 'f && NF == 3 && $1 ~ /^[0-9A-F]+$/ {print tolower($1), "t", $3} /^Real/ {f = 1}' "$1"; }
expect() { "$ORACLE/bts-expect" --map "$STUBS/$1.map" "guest-stub/$1.asm"; }
records() { "$VBTS_DECODE" --format json "$1" | "$ORACLE/vbts-records" --image "$STUBS/$2.bin"; }
# vbts with options; stderr to $TMP/err, status in $rc
v() { timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null; rc=$?; }
check() { # NAME EXPECTED-FILE ACTUAL-FILE
    if compare_records "$2" "$3" "" ""; then ok "$1"; else not_ok "$1"; fi
}

sysmap "$STUBS/branches64.map" >"$TMP/b64.map"
sysmap "$STUBS/contexts.map" >"$TMP/ctx.map"

# --verify-flow: every stub's every record is reached by straight-line code.
for s in branches32 branches64 far exceptions contexts; do
    n=$(expect $s | wc -l)
    v --verify-flow -q --trace "$TMP/$s.vbts" "$STUBS/$s.bin"
    want="vbts: verify-flow: $n records checked, 0 violations"
    if [ "$(cat "$TMP/err")" = "$want" ]; then ok "$s: --verify-flow: $n records, 0 violations"
    else not_ok "$s: --verify-flow"; diag "got: $(cat "$TMP/err")" "want: $want"; fi
done

# A window from a symbol: untraced until main64 (a hardware breakpoint),
# then exactly 5 records: annotations 4..8 (3 setup records come before).
v -q --symbols "$TMP/b64.map" --trace-start main64 --max-branches 5 --trace "$TMP/w.vbts" "$STUBS/branches64.bin"
expect branches64 | sed -n 4,8p >"$TMP/exp"
records "$TMP/w.vbts" branches64 >"$TMP/act"
check "--trace-start main64 --max-branches 5: exactly annotations 4..8 (status $rc)" "$TMP/exp" "$TMP/act"
last=$("$VBTS_DECODE" "$TMP/w.vbts" | tail -n 1)
case $last in *"-- stop limit "*) ok "window ends with a stop marker, reason limit" ;;
*) not_ok "window ends with a stop marker, reason limit"; diag "last line: $last" ;; esac

# The start trigger both ways: a hardware breakpoint, and the trigger's page
# hidden from the guest (vbts's choice where breakpoints do not fire).
for how in page breakpoint; do
    VBTS_START_TRIGGER=$how v -q --symbols "$TMP/b64.map" --trace-start main64 --max-branches 5 --trace "$TMP/w-$how.vbts" "$STUBS/branches64.bin"
    fires=1
    case $VBTS_HOST in lab/*) [ "${LAB_QEMU:-}" = system ] && fires=0 ;; esac
    case $how:$fires in
    breakpoint:0) # QEMU 7.2's TCG never arms the nested guest's DR7 (docs/host-compat.md)
        want="vbts: VBTS_START_TRIGGER=breakpoint: hardware breakpoints do not fire in this host's guests"
        if [ $rc = 125 ] && [ "$(cat "$TMP/err")" = "$want" ]; then ok "VBTS_START_TRIGGER=breakpoint: refused, says why (status 125)"
        else not_ok "VBTS_START_TRIGGER=breakpoint: refused"; diag "status $rc: $(cat "$TMP/err")"; fi ;;
    *)
        expect branches64 | sed -n 4,8p >"$TMP/exp"
        records "$TMP/w-$how.vbts" branches64 >"$TMP/act"
        check "VBTS_START_TRIGGER=$how: exactly annotations 4..8 (status $rc)" "$TMP/exp" "$TMP/act" ;;
    esac
done

# Start and stop triggers: from main64 up to the call into f_add1.
v -q --symbols "$TMP/b64.map" --trace-start main64 --trace-stop f_add1 --trace "$TMP/w2.vbts" "$STUBS/branches64.bin"
stop_at=$(expect branches64 | awk -v t="$(awk '$3 == "f_add1" {print $1}' "$TMP/b64.map" | sed 's/^0*//')" '{n++} $2 == "0x" t {print n; exit}')
expect branches64 | sed -n "4,${stop_at}p" >"$TMP/exp"
records "$TMP/w2.vbts" branches64 >"$TMP/act"
check "--trace-start main64 --trace-stop f_add1: annotations 4..$stop_at" "$TMP/exp" "$TMP/act"

# A window that closes on a record the engine writes while it settles an
# event (an exception or interrupt delivered in software, before the next
# step is armed) leaves the vCPU untraced: not single-stepped with
# interrupts held for good, which hung the guest (issue 30: a 2-vCPU Linux
# guest in idle with its timer interrupt pending).  Every close at an
# exception or IRET of exceptions.bin, under each engine this host runs:
# the guest runs to its own end, and the window is the first N annotations.
for e in step branch; do
    v --engine "$e" -q --force --trace "$TMP/e.vbts" "$STUBS/exceptions.bin"
    if [ $rc = 125 ]; then skip "--engine $e: windows closing at an event" "$(head -n 1 "$TMP/err")"; continue; fi
    bad_n=""
    for n in 4 5 7 8 10 11 12 13 14 15 16; do
        VBTS_TIMEOUT=30 v --engine "$e" -q --force --max-branches "$n" --trace "$TMP/e$n.vbts" "$STUBS/exceptions.bin"
        expect exceptions | sed -n "1,${n}p" >"$TMP/exp"
        records "$TMP/e$n.vbts" exceptions >"$TMP/act"
        if [ $rc != 1 ] || ! cmp -s "$TMP/exp" "$TMP/act"; then bad_n="$bad_n $n(status $rc)"; fi
    done
    if [ -z "$bad_n" ]; then
        ok "--engine $e --max-branches N closing at each exception and IRET: the guest runs on untraced to its end, the first N records"
    else not_ok "--engine $e: windows closing at an event"; diag "failed for N =$bad_n"; fi
done

# The monitor's TF stays out of the guest's exception frames: a #UD handler
# reads the RFLAGS image the CPU pushed and exits with its TF bit (status
# 3 if set, 1 if not).  kvm_pvm pushed the TF that KVM sets where a step is
# armed (the branch engine arms one after each stretch), and with the
# window closed at the exception the handler's IRET put it back: a #DB
# with no handler, a triple fault.  Closing at the exception, at its IRET,
# and not at all, under each engine.
cat >"$TMP/tfframe.asm" <<'ASM'
%include "multiboot.inc"
%include "longmode.inc"
%include "idt64.inc"
section .text
bits 64
default rel
main64:
        IDT64_SET VEC_DE, ud_handler    ; code enough for a stretch that ends at the ud2
        IDT64_SET VEC_UD, ud_handler
        IDT64_SET VEC_GP, ud_handler
        IDT64_SET VEC_PF, ud_handler
        IDT64_LOAD
        mov qword [seen], 0
        ud2
        mov al, [seen]
        out 0xf4, al
ud_handler:
        push rax
        mov rax, [rsp + 24]
        shr rax, 8
        and al, 1
        mov [seen], al
        add qword [rsp + 8], 2
        pop rax
        iretq
seen:   dq 0
ASM
nasm -f bin -Iguest-stub/include/ -o "$TMP/tfframe.bin" "$TMP/tfframe.asm"
for e in step branch; do
    got=""
    for n in 3 4 5 100; do
        VBTS_TIMEOUT=30 v --engine "$e" -q --force --max-branches "$n" --trace "$TMP/tf.vbts" "$TMP/tfframe.bin"
        got="$got $n:$rc"
    done
    case $got in
    *:125*) skip "--engine $e: the guest's frames" "$(head -n 1 "$TMP/err")" ;;
    " 3:1 4:1 5:1 100:1") ok "--engine $e: no TF of the monitor's in the guest's exception frame, window closing before, at and after the exception" ;;
    *) not_ok "--engine $e: no TF of the monitor's in the guest's exception frame"; diag "N:status$got (3: the handler saw TF)" ;;
    esac
done

# A start address no vCPU reaches: no records at all, the guest runs to its end.
# A header alone is what a monitor killed before its first chunk leaves too:
# vbts-decode calls it incomplete (docs/format.md, "Complete traces").
v -q --trace-start 0x3000000 --trace "$TMP/w3.vbts" "$STUBS/branches64.bin"
dec=$("$VBTS_DECODE" "$TMP/w3.vbts" 2>"$TMP/w3.err")
drc=$?
if [ $rc = 1 ] && [ -z "$dec" ] && [ $drc = 1 ] &&
   [ "$(cat "$TMP/w3.err")" = "vbts-decode: $TMP/w3.vbts: trace incomplete: no stop marker" ]; then
    ok "unreached start trigger: empty trace, guest ran to its end; vbts-decode: incomplete, status 1"
else not_ok "unreached start trigger"; diag "status $rc, decode $drc; $(head -n 3 <<<"$dec")"; diag_file "$TMP/w3.err"; fi

# --cpl: the stubs run at CPL0 only.
v -q --cpl user --trace "$TMP/u.vbts" "$STUBS/branches64.bin"
records "$TMP/u.vbts" branches64 >"$TMP/act"
if [ $rc = 1 ] && [ ! -s "$TMP/act" ]; then ok "--cpl user: no CPL0 branch recorded"; else not_ok "--cpl user"; fi
v -q --cpl kernel --trace "$TMP/k.vbts" "$STUBS/branches64.bin"
expect branches64 >"$TMP/exp"
records "$TMP/k.vbts" branches64 >"$TMP/act"
check "--cpl kernel: every CPL0 branch" "$TMP/exp" "$TMP/act"

# Context markers: the stub switches CR3 from pml4 to pml4_b and back.
a=0x$(awk '$3 == "pml4" {print $1}' "$TMP/ctx.map" | sed 's/^0*//')
b=0x$(awk '$3 == "pml4_b" {print $1}' "$TMP/ctx.map" | sed 's/^0*//')
v -q --trace "$TMP/c.vbts" "$STUBS/contexts.bin"
"$VBTS_DECODE" --format json "$TMP/c.vbts" | grep '"ctx-' | sed -E 's/.*"kind":"([a-z-]+)","cr3":"([0-9a-fx]+)".*/\1 \2/' >"$TMP/act"
printf '%s\n' "ctx-arrive 0x0" "ctx-depart 0x0" "ctx-arrive $a" "ctx-depart $a" "ctx-arrive $b" \
    "ctx-depart $b" "ctx-arrive $a" >"$TMP/exp"
check "context markers at every CR3 switch, in order" "$TMP/exp" "$TMP/act"

# --cr3: only the branches taken in context B (annotations 4..6).
v -q --cr3 "$b" --trace "$TMP/cb.vbts" "$STUBS/contexts.bin"
expect contexts | sed -n 4,6p >"$TMP/exp"
records "$TMP/cb.vbts" contexts >"$TMP/act"
check "--cr3 $b: only context B's branches" "$TMP/exp" "$TMP/act"

# vbts-decode --symbols, text and JSON.
line=$("$VBTS_DECODE" --symbols "$TMP/b64.map" "$TMP/w.vbts" | sed -n 3p)
want="  0  0x0000000000100088 -> 0x000000000010008c  jmp  main64+0x0 -> main64.jmp8_t+0x0"
[ "$line" = "$want" ] && ok "vbts-decode --symbols: func+0xoff in text" || { not_ok "vbts-decode --symbols (text)"; diag "got:  $line" "want: $want"; }
line=$("$VBTS_DECODE" --format json --symbols "$TMP/b64.map" "$TMP/w.vbts" | sed -n 3p)
want='{"cpu":0,"seq":2,"from":"0x100088","to":"0x10008c","kind":"jmp","from_sym":"main64+0x0","to_sym":"main64.jmp8_t+0x0"}'
[ "$line" = "$want" ] && ok "vbts-decode --symbols: from_sym/to_sym in JSON" || { not_ok "vbts-decode --symbols (json)"; diag "got:  $line" "want: $want"; }

# A name that JSON must escape (371 quotes), on every line of a 2,100-record
# trace: each line is valid JSON with the name cut, not a line that outgrows
# the decoder's buffer (it did: a global-buffer-overflow, SIGSEGV released).
{ printf '0000000000100000 t '; printf '"%.0s' $(seq 371); printf 'abc\n'; } >"$TMP/q.map"
nasm -f bin -Iguest-stub/include/ -DLOOPS=700 -DPAD=0 -o "$TMP/loop.bin" bench/loop.asm
v -q --trace "$TMP/q.vbts" "$TMP/loop.bin"
"$VBTS_DECODE" --format json --symbols "$TMP/q.map" "$TMP/q.vbts" >"$TMP/q.json" 2>"$TMP/q.err"
drc=$?
got=$(python3 -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    o = json.loads(l)
    for k in ("from_sym", "to_sym"):
        if k in o:
            assert o[k].strip("\"") in ("", "abc") or o[k] == "\"" * len(o[k]), o[k][:40]
            assert len(o[k]) <= 400, len(o[k])
    n += "from" in o
print(n)' "$TMP/q.json" 2>&1)
want=$("$VBTS_DECODE" "$TMP/q.vbts" | grep -vc -- ' -- ')
long=$(awk 'length($0) > 1000' "$TMP/q.json" | wc -l)
if [ $drc = 0 ] && [ "$got" = "$want" ] && [ "$want" -ge 2100 ] && [ "$long" = 0 ]; then
    ok "vbts-decode --format json: a name needing escapes, on $want records: every line valid JSON and under 1000 bytes"
else
    not_ok "vbts-decode --format json: escaped names"; diag "decode status $drc, records $want, check: $got, lines over 1000 bytes: $long"; diag_file "$TMP/q.err"
fi

# Bad window options: exact message, status 125.
bad() { # WANT-MESSAGE ARGS...
    local want=$1; shift
    v "$@"
    if [ $rc = 125 ] && [ "$(head -n 1 "$TMP/err")" = "$want" ]; then ok "rejected: $want"
    else not_ok "rejected: $want"; diag "status $rc: $(head -n 1 "$TMP/err")"; fi
}
bad "vbts: --trace-start: 'main64' is not an address and no --symbols file was given" \
    --trace "$TMP/x.vbts" --trace-start main64 "$STUBS/branches64.bin"
bad "vbts: --trace-start: symbol 'no_such' not found in $TMP/b64.map" \
    --trace "$TMP/x.vbts" --symbols "$TMP/b64.map" --trace-start no_such "$STUBS/branches64.bin"
bad "vbts: --symbols: $TMP/none.map: No such file or directory" \
    --trace "$TMP/x.vbts" --symbols "$TMP/none.map" "$STUBS/branches64.bin"
bad "vbts: --max-branches: '0' is not a positive number" --max-branches 0 "$STUBS/branches64.bin"
bad "vbts: --cpl: 'ring1' is not kernel, user or all" --cpl ring1 "$STUBS/branches64.bin"
bad "vbts: --trace-start, --trace-stop, --max-branches, --cpl, --cr3, --verify-flow and --stop-after-trace need --trace" \
    --max-branches 5 "$STUBS/branches64.bin"
bad "vbts: --cr3: 'pid1' is not a number or start" \
    --trace "$TMP/x.vbts" --cr3 pid1 "$STUBS/branches64.bin"
bad "vbts: --cr3 start needs --trace-start" \
    --trace "$TMP/x.vbts" --cr3 start "$STUBS/branches64.bin"
VBTS_START_TRIGGER=dr0 v -q --trace "$TMP/x.vbts" --symbols "$TMP/b64.map" --trace-start main64 "$STUBS/branches64.bin"
want="vbts: VBTS_START_TRIGGER=dr0: expected page or breakpoint"
if [ $rc = 125 ] && [ "$(cat "$TMP/err")" = "$want" ]; then ok "rejected: $want"
else not_ok "rejected: $want"; diag "status $rc: $(cat "$TMP/err")"; fi
bad "vbts: --stop-after-trace needs --trace-stop or --max-branches" \
    --trace "$TMP/x.vbts" --stop-after-trace "$STUBS/branches64.bin"

# --stop-after-trace: the run ends, status 0, when the window closes.
v -q --max-branches 4 --stop-after-trace --trace "$TMP/s.vbts" "$STUBS/branches64.bin"
expect branches64 | sed -n 1,4p >"$TMP/exp"
records "$TMP/s.vbts" branches64 >"$TMP/act"
if [ $rc = 0 ] && compare_records "$TMP/exp" "$TMP/act" "" ""; then ok "--stop-after-trace: status 0 after exactly 4 records"
else not_ok "--stop-after-trace"; diag "status $rc"; fi

# A trigger no vCPU reaches: the run ends as it would, and stderr says why
# the trace holds a header alone.
v -q --trace "$TMP/never.vbts" --trace-start 0x300000 "$STUBS/branches64.bin"
want="vbts: the trace window never opened: no vCPU reached it (--trace-start 0x300000)"
if [ $rc = 1 ] && [ "$(cat "$TMP/err")" = "$want" ]; then ok "a trigger never reached: status 1, said on stderr"
else not_ok "a trigger never reached: said on stderr"; diag "status $rc: $(cat "$TMP/err")" "want: $want"; fi

# A trigger in user mode: user.bin's user_entry, entered by iretq.
sysmap "$STUBS/user.map" >"$TMP/user.map"
ua=$(awk '$3 == "user_entry" {print $1}' "$TMP/user.map" | sed 's/^0*//')
v -q --symbols "$TMP/user.map" --trace-start user_entry --trace "$TMP/user.vbts" "$STUBS/user.bin"
case $VBTS_HOST in
kvm_pvm)
    # No breakpoint fires in user mode there.  Untraced, the stub's syscall
    # does not reach its kernel either (docs/host-compat.md): a triple fault.
    want="vbts: the trace window never opened: it is in a user-mode page, where kvm_pvm fires no breakpoints (--trace-start 0x$ua)"
    if [ $rc = 2 ] && [ "$(tail -n 1 "$TMP/err")" = "$want" ] && [ "$("$VBTS_DECODE" "$TMP/user.vbts" 2>/dev/null | grep -vc '^#')" = 0 ]; then
        ok "--trace-start in user mode: no window on kvm_pvm, and stderr says why"
    else not_ok "--trace-start in user mode: stderr says why"; diag "status $rc: $(cat "$TMP/err")" "want: $want"; fi ;;
*)
    expect user | awk -v t="0x$ua" 'p {print} $2 == t {p = 1}' >"$TMP/exp"
    records "$TMP/user.vbts" user >"$TMP/act"
    check "--trace-start user_entry (user mode): exactly the $(wc -l <"$TMP/exp") annotations after the iretq into it (status $rc)" "$TMP/exp" "$TMP/act" ;;
esac

plan "$TAP_N"
exit $((TAP_FAILED > 0))
