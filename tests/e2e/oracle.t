#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# oracle.t: the test oracles themselves (tests/oracle/), on made-up input:
# no QEMU, KVM or nasm needed.
#   qemu-branches --from-log: derivation rules on a synthetic QEMU log;
#   bts-expect: the annotation syntax on a synthetic stub and map.
. "$(dirname "$0")/tap.sh"

plan 18

# --- qemu-branches -------------------------------------------------------------
t() { printf 'Trace 0: 0x7f0000001000 [0000000000000000/%016x/0000c0b0/ff000201] \n' "$1"; }
{
    echo "SMM: enter"                                      # BIOS noise, not filtered
    echo "Servicing hardware INT=0x08"
    echo "IN: "
    echo "0x00100000:  eb 02                    jmp      0x100004"
    echo ""
    t 0x100000
    echo "----------------"
    echo "IN: "
    echo "0x00100004:  48 bc 30 20 10 00 00 00  movabsq  \$0x102030, %rsp"
    echo "0x0010000c:  00 00"                              # 10-byte insn
    echo ""
    t 0x100004
    echo "IN: "
    echo "0x0010000e:  75 10                    jne      0x100020"
    echo ""
    t 0x10000e                                             # not taken
    echo "IN: "
    echo "0x00100010:  f3 a4                    rep movsb (%rsi), %es:(%rdi)"
    echo ""
    t 0x100010; t 0x100010; t 0x100010                     # rep iterations
    echo "IN: "
    echo "0x00100012:  0f 0b                    ud2      "
    echo ""
    t 0x100012
    echo "check_exception old: 0xffffffff new 0x6"
    echo "     0: v=06 e=0000 i=0 cpl=0 IP=0018:0000000000100012 pc=0000000000100012 SP=0010:0000000000102030 env->regs[R_EAX]=0000000000000000"
    echo "RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000000 RDX=0000000000000000"
    echo "IN: "
    echo "0x00100040:  48 cf                    iretq    "
    echo ""
    t 0x100040
    echo "IN: "
    echo "0x00100014:  e2 fe                    loop     0x100014"
    echo ""
    t 0x100014; t 0x100014; t 0x100014                     # 2 taken, 1 not
    echo "IN: "
    echo "0x00100016:  e8 00 00 10 00           callq    0x200016"
    echo ""
    t 0x100016                                             # leaves the range
    echo "IN: "
    echo "0x00100200:  e6 f4                    outb     %al, \$0xf4"
    echo ""
    t 0x100200
} >"$TMP/ok.log"
cat >"$TMP/ok.want" <<'EOW'
0x100000 0x100004
0x100012 0x100040
0x100040 0x100014
0x100014 0x100014
0x100014 0x100014
EOW
if "$ORACLE/qemu-branches" --from-log "$TMP/ok.log" --range 0x100000+0x1000 x >"$TMP/ok.got" 2>"$TMP/ok.err" &&
   compare_records "$TMP/ok.want" "$TMP/ok.got" "" ""; then
    ok "qemu-branches: jmp, jcc not taken, long insn, rep, exception, iretq, loop, range"
else
    diag_file "$TMP/ok.err"
    not_ok "qemu-branches: jmp, jcc not taken, long insn, rep, exception, iretq, loop, range"
fi

{
    echo "IN: "
    echo "0x00100000:  90                       nop      "
    echo ""
    t 0x100000
    echo "IN: "
    echo "0x00100008:  90                       nop      "
    echo ""
    t 0x100008
} >"$TMP/bad.log"
if "$ORACLE/qemu-branches" --from-log "$TMP/bad.log" --range 0x100000+0x1000 x >/dev/null 2>"$TMP/bad.err"; then
    not_ok "qemu-branches: an unexplained transfer is an error"
elif grep -q "unexplained transfer 0x100000 -> 0x100008" "$TMP/bad.err"; then
    ok "qemu-branches: an unexplained transfer is an error"
else
    diag_file "$TMP/bad.err"
    not_ok "qemu-branches: an unexplained transfer is an error"
fi

# Code rewritten between two runs (QEMU translates it again): each run is
# read as the bytes it ran, a jmp to the next instruction that becomes a
# nop, and a nop that becomes one.
{
    for run in 1 2; do
        echo "IN: "
        if [ $run = 1 ]; then
            echo "0x00100000:  eb 00                    jmp      0x100002"
        else
            echo "0x00100000:  66 90                    nop      "
        fi
        echo ""
        t 0x100000
        echo "IN: "
        if [ $run = 1 ]; then
            echo "0x00100002:  66 90                    nop      "
        else
            echo "0x00100002:  eb 00                    jmp      0x100004"
        fi
        echo ""
        t 0x100002
        [ $run = 2 ] && break
        echo "IN: "
        echo "0x00100004:  eb fa                    jmp      0x100000"
        echo ""
        t 0x100004
    done
    echo "IN: "
    echo "0x00100004:  e6 f4                    outb     %al, \$0xf4"
    echo ""
    t 0x100004
} >"$TMP/smc.log"
cat >"$TMP/smc.want" <<'EOW'
0x100000 0x100002
0x100004 0x100000
0x100002 0x100004
EOW
if "$ORACLE/qemu-branches" --from-log "$TMP/smc.log" --range 0x100000+0x1000 x >"$TMP/smc.got" 2>"$TMP/smc.err" &&
   compare_records "$TMP/smc.want" "$TMP/smc.got" "" ""; then
    ok "qemu-branches: code rewritten between runs is read as it ran"
else
    diag_file "$TMP/smc.err"
    not_ok "qemu-branches: code rewritten between runs is read as it ran"
fi

# A hardware interrupt and an NMI (QEMU logs no "Servicing" line for it),
# each after the instruction it interrupts, and an `int 2`: -v names them.
{
    echo "IN: "
    echo "0x00100000:  90                       nop      "
    echo ""
    t 0x100000
    echo "Servicing hardware INT=0x30"
    echo "     1: v=30 e=0000 i=0 cpl=0 IP=0018:0000000000100001 pc=0000000000100001 SP=0010:0000000000102030 env->regs[R_EAX]=0000000000000000"
    echo "IN: "
    echo "0x00100040:  48 cf                    iretq    "
    echo ""
    t 0x100040
    echo "IN: "
    echo "0x00100001:  90                       nop      "
    echo ""
    t 0x100001
    echo "     2: v=02 e=0000 i=0 cpl=0 IP=0018:0000000000100002 pc=0000000000100002 SP=0010:0000000000102030 env->regs[R_EAX]=0000000000000000"
    t 0x100040
    echo "IN: "
    echo "0x00100002:  cd 02                    int      \$2"
    echo ""
    t 0x100002
    echo "     3: v=02 e=0000 i=1 cpl=0 IP=0018:0000000000100002 pc=0000000000100002 SP=0010:0000000000102030 env->regs[R_EAX]=0000000000000000"
    t 0x100040
    echo "IN: "
    echo "0x00100004:  e6 f4                    outb     %al, \$0xf4"
    echo ""
    t 0x100004
} >"$TMP/irq.log"
if "$ORACLE/qemu-branches" -v --from-log "$TMP/irq.log" --range 0x100000+0x1000 x >"$TMP/irq.got" 2>"$TMP/irq.err" &&
   [ "$(awk '{print $1, $2, $3, $4}' "$TMP/irq.got" | tr '\n' ';')" = \
     "0x100001 0x100040 interrupt v=0x30;0x100040 0x100001 iretq iretq;0x100002 0x100040 interrupt v=0x2;0x100040 0x100002 iretq iretq;0x100002 0x100040 int v=0x2;0x100040 0x100004 iretq iretq;" ]; then
    ok "qemu-branches: a hardware interrupt and an NMI are interrupts, int 2 is not"
else
    diag_file "$TMP/irq.got"; diag_file "$TMP/irq.err"
    not_ok "qemu-branches: a hardware interrupt and an NMI are interrupts, int 2 is not"
fi

# --- bts-expect ----------------------------------------------------------------
mkdir -p "$TMP/s/include"
cat >"$TMP/s/include/inc.inc" <<'EOA'
entry:
        nop
ent_jmp:
        jmp main                ; @bts -> main
EOA
cat >"$TMP/s/stub.asm" <<'EOA'
%include "inc.inc"
%macro M 0
%%x:    nop
%endmacro
main:
.a:     jmp .b                  ; @bts -> .b
.b:     call f                  ; @bts -> f
        ; @bts f.r -> .c
.c:     M
; @repeat 2
        ; @bts .l -> .c x2
        ; @bts .l2 -> .c+1  (a comment)
; @end
.l:     jnz .c
.l2:    jnz .c+1
        ; @bts 0x10 -> main-0x10
; @exit 0x21
f:      nop
.r:     ret
EOA
cat >"$TMP/s/stub.map" <<'EOA'

- NASM Map file ---------------------------------------------------------------

-- Symbols --------------------------------------------------------------------

---- No Section ---------------------------------------------------------------

Value     Name
00000010  SOMETHING


---- Section .text ------------------------------------------------------------

Real              Virtual           Name
          100000            100000  entry
          100001            100001  ent_jmp
          100003            100003  main
          100003            100003  main.a
          100005            100005  main.b
          10000A            10000A  main.c
          10000A            10000A  ..@1.x
          10000B            10000B  main.l
          10000D            10000D  main.l2
          100010            100010  f
          100011            100011  f.r
EOA
cat >"$TMP/s.want" <<'EOW'
0x100001 0x100003
0x100003 0x100005
0x100005 0x100010
0x100011 0x10000a
0x10000b 0x10000a
0x10000b 0x10000a
0x10000d 0x10000b
0x10000b 0x10000a
0x10000b 0x10000a
0x10000d 0x10000b
0x10 0xffff3
EOW
if "$ORACLE/bts-expect" --map "$TMP/s/stub.map" "$TMP/s/stub.asm" >"$TMP/s.got" 2>"$TMP/s.err" &&
   compare_records "$TMP/s.want" "$TMP/s.got" "" ""; then
    ok "bts-expect: includes, local labels, label lines, xN, @repeat, offsets"
else
    diag_file "$TMP/s.err"
    not_ok "bts-expect: includes, local labels, label lines, xN, @repeat, offsets"
fi
if [ "$("$ORACLE/bts-expect" --exit-status "$TMP/s/stub.asm" 2>&1)" = 67 ]; then
    ok "bts-expect: @exit 0x21 gives exit status 67"
else
    not_ok "bts-expect: @exit 0x21 gives exit status 67"
fi

# expect_error NAME PATTERN: the stub $TMP/e.asm is rejected with PATTERN.
expect_error() {
    if "$ORACLE/bts-expect" --map "$TMP/s/stub.map" -I "$TMP/s/include" "$TMP/e.asm" >/dev/null 2>"$TMP/e.err"; then
        not_ok "bts-expect rejects $1 (it did not)"
    elif grep -q "$2" "$TMP/e.err"; then
        ok "bts-expect rejects $1"
    else
        diag_file "$TMP/e.err"
        not_ok "bts-expect rejects $1 (wrong message)"
    fi
}
printf 'main:\n        nop\n        jmp main   ; @bts -> main\n' >"$TMP/e.asm"
expect_error "'-> TO' on an unlabelled line" "needs a label"
printf 'main:  jmp .nowhere   ; @bts -> .nowhere\n' >"$TMP/e.asm"
expect_error "an unknown symbol" "unknown symbol 'main.nowhere'"
printf '%%macro M 0\n  jmp x ; @bts -> x\n%%endmacro\n' >"$TMP/e.asm"
expect_error "an annotation in a macro" "inside a macro"
printf '; @repeat 2\nmain: jmp main ; @bts -> main\n' >"$TMP/e.asm"
expect_error "@repeat without @end" "@repeat without @end"

# pair-check: an interrupt is left by an IRET back to where it came in.
pc() { printf '%s\n' "$@" >"$TMP/pc.json"; "$ORACLE/pair-check" "$TMP/pc.json" >"$TMP/pc.out" 2>&1; }
r() { printf '{"cpu":0,"seq":%d,"from":"%s","to":"%s","kind":"%s"%s}' "$1" "$2" "$3" "$4" "${5:-}"; }
if pc "$(r 0 0x100 0x900 interrupt)" "$(r 1 0x900 0x910 exception)" "$(r 2 0x918 0x904 iret)" "$(r 3 0x904 0x906 iret)" \
      "$(r 3 0x904 0x100 iret)" "$(r 4 0x104 0x200 jmp)" "$(r 5 0x300 0x100 iret)" &&
   grep -qx "pair-check: vCPU 0: 2 events entered, 1 interrupts left by an IRET to their entry, 0 across a context switch, 0 returned elsewhere by the kernel, 1 IRETs with nothing pending, 0 broken" "$TMP/pc.out"; then
    ok "pair-check: nested events, their IRETs, a serializing IRET, an IRET with nothing pending"
else diag_file "$TMP/pc.out"; not_ok "pair-check: nested events, their IRETs, a serializing IRET, an IRET with nothing pending"; fi
if ! pc "$(r 0 0x100 0x900 interrupt)" "$(r 1 0x904 0x300 iret)" &&
   grep -q "the interrupt entered at 0x100 is left by the IRET at 0x904 to 0x300" "$TMP/pc.out"; then
    ok "pair-check: an IRET elsewhere than the interrupt's entry is broken (status 1)"
else diag_file "$TMP/pc.out"; not_ok "pair-check: an IRET elsewhere than the interrupt's entry is broken"; fi
if pc "$(r 0 0x100 0x900 interrupt)" '{"cpu":0,"seq":1,"kind":"ctx-depart","cr3":"0x1000","t_ns":5}' \
      "$(r 2 0x904 0x300 iret)" "$(r 3 0x300 0x800 call ',"from_sym":"a+0x0","to_sym":"__switch_to_asm+0x0"')" &&
   grep -q "1 across a context switch, 0 returned elsewhere by the kernel, 0 IRETs with nothing pending, 0 broken" "$TMP/pc.out"; then
    ok "pair-check: a context switch leaves the entries before it unchecked"
else diag_file "$TMP/pc.out"; not_ok "pair-check: a context switch leaves the entries before it unchecked"; fi
if pc "$(r 0 0x100 0x900 interrupt ',"from_sym":"srso_safe_ret+0x5"')" \
      "$(r 1 0x910 0x980 call ',"from_sym":"h+0x10","to_sym":"handle_interrupted_saferet+0x0"')" \
      "$(r 2 0x990 0x914 ret)" "$(r 3 0x904 0x300 iret)" &&
   grep -q "0 across a context switch, 1 returned elsewhere by the kernel, 0 IRETs with nothing pending, 0 broken" "$TMP/pc.out"; then
    ok "pair-check: an interrupt whose handler calls the kernel's frame fixup may return elsewhere"
else diag_file "$TMP/pc.out"; not_ok "pair-check: an interrupt whose handler calls the kernel's frame fixup may return elsewhere"; fi

# check-layout measures what it claims: functions however their signature
# starts (an enum, a struct pointer, over two lines), in vmm/ and decoder/.
mkdir -p "$TMP/lay/vmm/core" "$TMP/lay/decoder/cli"
{ echo 'enum r long_one(int a,'; echo '                int b)'; echo '{'; for i in $(seq 82); do echo '    a++;'; done; echo '    return 0;'; echo '}'
  echo 'static int short_one(void)'; echo '{'; echo '    return 1;'; echo '}'; } >"$TMP/lay/vmm/core/x.c"
{ echo 'struct s *main(void)'; echo '{'; for i in $(seq 85); do echo '    f();'; done; echo '}'; } >"$TMP/lay/decoder/cli/y.c"
if ! "$ROOT/scripts/check-layout" --root "$TMP/lay" >"$TMP/lay.out" 2>&1 &&
   grep -qx "check-layout: vmm/core/x.c:1: long_one() is 87 lines (at most 80)" "$TMP/lay.out" &&
   grep -qx "check-layout: decoder/cli/y.c:1: main() is 88 lines (at most 80)" "$TMP/lay.out" &&
   ! grep -q short_one "$TMP/lay.out"; then
    ok "check-layout: a long function is found whatever its signature, in vmm/ and decoder/"
else diag_file "$TMP/lay.out"; not_ok "check-layout: a long function is found whatever its signature, in vmm/ and decoder/"; fi

# --- the generated programs (tests/gen/) ---------------------------------------
# fuzz-trace's verdicts on made-up results: exact, clear stops, and every
# kind of mismatch (a record missing, more, changed; a wrong record before
# a stop; a stop in two lines; another status); for programs whose
# interrupts come when they please, the interrupts taken out and each of
# vbts's checked (where it comes from, where its handler returns, its
# handler's path, its kind, the NMIs' count).
if "$ROOT/tests/gen/fuzz-trace" selftest >"$TMP/ft.out" 2>&1 && grep -qx "selftest: 26 of 26 cases right" "$TMP/ft.out"; then
    ok "fuzz-trace: exact, clear stops and mismatches told apart, and the block blamed"
else diag_file "$TMP/ft.out"; not_ok "fuzz-trace: exact, clear stops and mismatches told apart, and the block blamed"; fi
# A seed is a program: the same one each time; --keep leaves each kept block as it was.
g=$ROOT/tests/gen/gen-prog
if [ "$("$g" 4242 | md5sum)" = "$("$g" 4242 | md5sum)" ] && [ "$("$g" 4242 | md5sum)" != "$("$g" 4243 | md5sum)" ]; then
    ok "gen-prog: a seed gives one program, another seed another"
else not_ok "gen-prog: a seed gives one program, another seed another"; fi
"$g" --blocks 6 4242 >"$TMP/all.asm"; "$g" --blocks 6 --keep 2,4 4242 >"$TMP/keep.asm"
blk() { sed -n "/^blk$2:/,/^blk$2_end:/p" "$1"; }
if grep -q '^blk2:' "$TMP/keep.asm" && ! grep -q '^blk1:' "$TMP/keep.asm" &&
   [ "$(blk "$TMP/all.asm" 4)" = "$(blk "$TMP/keep.asm" 4)" ] && [ -n "$(blk "$TMP/all.asm" 4)" ]; then
    ok "gen-prog: --keep leaves out the other blocks and keeps each kept one as it was"
else not_ok "gen-prog: --keep leaves out the other blocks and keeps each kept one as it was"; fi
