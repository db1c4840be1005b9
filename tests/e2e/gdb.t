#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gdb.t: Debian's gdb on a traced guest through `vbts -S --gdb`
# (docs/gdb.md): `record btrace bts` served from vbts's own records,
# function-call-history, reverse-stepi and record goto; breakpoints,
# watchpoints, registers and memory; Ctrl-C; --trace beside gdb; and
# Linux from start_kernel.  Each C stub's history is what its source says
# (@gdb-break, @gdb-next, @gdb-history: guest-stub/README.md).
. "$(dirname "$0")/tap.sh"
NSTUB=$(grep -l '^ \* @gdb-break ' "$ROOT"/guest-stub/c/*.c "$ROOT"/guest-stub/c64/*.c | wc -l)
plan $((17 + 4 * NSTUB))

if ! have_vbts || ! command -v gdb >/dev/null || [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    for i in $(seq $((17 + 4 * NSTUB))); do skip "gdb $i" "monitor, gdb or /dev/kvm missing"; done
    exit 0
fi
CELF=$STUBS/c/calls.elf

# session NAME GUEST [vbts args...] < gdb commands: vbts -S --gdb on a free
# port in the background, then gdb -batch with the commands (PORT replaced);
# gdb's output in $TMP/NAME.gdb, vbts's in $TMP/NAME.{out,err,rc}.
session() {
    local name=$1 guest=$2 elf=$3
    shift 3
    cat >"$TMP/$name.in"
    ( timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" -S --gdb 127.0.0.1:0 "$@" "$guest" \
          >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
      echo $? >"$TMP/$name.rc" ) &
    local pid=$! port=
    for _ in $(seq 200); do
        port=$(sed -n 's/^vbts: gdb: .* on tcp:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/$name.err" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.05
    done
    sed "s/PORT/$port/" "$TMP/$name.in" >"$TMP/$name.cmd"
    timeout -k 5 "$VBTS_TIMEOUT" gdb -batch -nx -x "$TMP/$name.cmd" ${elf:+"$elf"} >"$TMP/$name.gdb" 2>&1 </dev/null
    wait "$pid"
}
# between NAME FROM TO: gdb's lines between two `echo` markers
between() { sed -n "/^$2\$/,/^$3\$/p" "$TMP/$1.gdb" | sed '1d;$d'; }

# 4 tests per C stub that says what gdb must show (guest-stub/README.md:
# @gdb-break FUNCTION, @gdb-next N, @gdb-history lines): stopped at the
# function, `record btrace bts`, N nexts; the function-call-history;
# reverse-stepi one instruction back and stepi forward again in the
# replay; record goto begin back at the breakpoint; the exit code.  c64/
# holds 64-bit kernels that enter in 32-bit mode, with their ELF64.
# history_script NAME BRK NEXTS: gdb's commands for that session.
history_script() {
    cat <<EOG
set pagination off
set record function-call-history-size unlimited
target remote 127.0.0.1:PORT
hbreak $2
continue
set \$start = \$pc
record btrace bts
next ${3:-1}
set \$end = \$pc
echo ==history==\n
record function-call-history /c
echo ==end==\n
reverse-stepi
print \$pc != \$end
stepi
print \$pc == \$end
record goto begin
print \$pc == \$start
record stop
continue
EOG
}
for src in "$ROOT"/guest-stub/c/*.c "$ROOT"/guest-stub/c64/*.c; do
    name=$(basename "$src" .c)
    dir=$(basename "$(dirname "$src")")
    brk=$(sed -n 's/^ \* @gdb-break \([A-Za-z_0-9]*\)$/\1/p' "$src")
    [ -n "$brk" ] || continue
    nexts=$(sed -n 's/^ \* @gdb-next \([0-9]*\)$/\1/p' "$src")
    sed -n 's/^ \* @gdb-history \(.*\)$/\1/p' "$src" | awk '{ printf "%d\t%s\n", NR, $0 }' >"$TMP/$name.want"
    history_script "$name" "$brk" "$nexts" | session "$name" "$STUBS/$dir/$name.elf" "$STUBS/$dir/$name.elf"
    if [ -s "$TMP/$name.want" ] && ! grep -q "warning: .*architecture\|Truncated register" "$TMP/$name.gdb" &&
       between "$name" ==history== ==end== | cmp -s - "$TMP/$name.want"; then
        ok "$name: function-call-history /c after record btrace bts at $brk and ${nexts:-1} nexts: the $(wc -l <"$TMP/$name.want") lines the source gives"
    else
        fail "$name: function-call-history /c"; between "$name" ==history== ==end== | diff "$TMP/$name.want" - | diag
        diag_file "$TMP/$name.gdb"; diag_file "$TMP/$name.err"
    fi
    if grep -q '^\$1 = 1$' "$TMP/$name.gdb" && grep -q '^\$2 = 1$' "$TMP/$name.gdb"; then
        ok "$name: reverse-stepi goes one instruction back, stepi in the replay returns"
    else
        fail "$name: reverse-stepi"; diag_file "$TMP/$name.gdb"
    fi
    if grep -q '^\$3 = 1$' "$TMP/$name.gdb"; then
        ok "$name: record goto begin: back where recording began ($brk's breakpoint)"
    else
        fail "$name: record goto begin"; diag_file "$TMP/$name.gdb"
    fi
    code=$(sed -n 's/.*exited with code \([0-7]*\)\]$/\1/p' "$TMP/$name.gdb")
    if [ -n "$code" ] && [ "$((8#$code))" = "$(cat "$TMP/$name.rc")" ]; then
        ok "$name: continue to the end: gdb hears the status vbts exits with ($(cat "$TMP/$name.rc"))"
    else
        fail "$name: exit (vbts status $(cat "$TMP/$name.rc"), gdb's code '$code')"; diag_file "$TMP/$name.gdb"
    fi
done

# calls.c again, its breakpoints checked by steps through the hidden page
# (VBTS_GDB_BREAKPOINTS=0), as on a host whose guests fire none (QEMU 7.2's
# nested SVM): the same history.
brk=$(sed -n 's/^ \* @gdb-break \([A-Za-z_0-9]*\)$/\1/p' "$ROOT/guest-stub/c/calls.c")
nexts=$(sed -n 's/^ \* @gdb-next \([0-9]*\)$/\1/p' "$ROOT/guest-stub/c/calls.c")
( export VBTS_GDB_BREAKPOINTS=0
  session stepped "$CELF" "$CELF" <<EOG
set pagination off
set record function-call-history-size unlimited
target remote 127.0.0.1:PORT
hbreak $brk
continue
record btrace bts
next ${nexts:-1}
echo ==history==\n
record function-call-history /c
echo ==end==\n
record stop
continue
EOG
)
if between stepped ==history== ==end== | cmp -s - "$TMP/calls.want" &&
   grep -q "fire no hardware breakpoints: gdb's breakpoints and watchpoints are checked at every step" "$TMP/stepped.err"; then
    ok "calls, breakpoints checked by steps (VBTS_GDB_BREAKPOINTS=0, the hidden page): the same function-call-history"
else
    fail "calls, breakpoints checked by steps: function-call-history"; between stepped ==history== ==end== | diff "$TMP/calls.want" - | diag
    diag_file "$TMP/stepped.gdb"; diag_file "$TMP/stepped.err"
fi

# The rest on calls.c.  Breakpoints (Z1, Z0), a write watchpoint (Z2), registers and
# memory written by gdb, and kill.
session points "$CELF" "$CELF" <<'EOG'
set pagination off
target remote 127.0.0.1:PORT
hbreak main
continue
next
watch -location s
continue
delete
break leaf
continue
continue
print x
set var x = 40
print x
set var $ecx = 0x1234
print/x $ecx
print/x *(unsigned char *)leaf
kill
EOG
if grep -q '^Hardware watchpoint 2: -location s$' "$TMP/points.gdb" && grep -q '^Old value = 0$' "$TMP/points.gdb" && grep -q '^New value = 1$' "$TMP/points.gdb"; then
    ok "watch -location s (a write watchpoint, Z2): stops when s goes from 0 to 1 (leaf(0) returned 1)"
else
    fail "watch -location s"; diag_file "$TMP/points.gdb" 30
fi
# leaf(0) ran before the watchpoint fired; the next is twice's leaf(1).
# Memory: leaf's first byte, push %ebp.
if grep -q '^Breakpoint 3, leaf (x=1) at' "$TMP/points.gdb" && grep -q '^\$2 = 40$' "$TMP/points.gdb" &&
   grep -q '^\$3 = 0x1234$' "$TMP/points.gdb" && grep -q '^\$4 = 0x55$' "$TMP/points.gdb"; then
    ok "break leaf (Z0) stops in twice's first leaf; memory and registers read and written"
else
    fail "break, memory, registers"; diag_file "$TMP/points.gdb" 30
fi
# x87 registers written and read by gdb: the guest's fnstcw reads the
# control word gdb set before it touched the x87 unit, and after its
# fninit gdb shows the initial state.  Both go through KVM's XSAVE image
# (x86/fpu.h): KVM_SET_FPU's control word was never loaded there (on
# either host), and KVM_GET_FPU showed the state from before the fninit.
mb_image "$TMP/fpu.bin" "nop
fnstcw [cw]
fld1
fninit
brk:    nop             ; 0x10002b
movzx eax, word [cw]
shr eax, 8
out 0xf4, al
hlt
cw:     dw 0"
session fpu "$TMP/fpu.bin" "" <<'EOG'
set pagination off
target remote 127.0.0.1:PORT
set $fctrl = 0x27f
hbreak *0x10002b
continue
print/x $fstat
print/x $fctrl
continue
EOG
if grep -q '^\$1 = 0x0$' "$TMP/fpu.gdb" && grep -q '^\$2 = 0x37f$' "$TMP/fpu.gdb" &&
   grep -q 'exited with code 05\]$' "$TMP/fpu.gdb"; then
    ok "x87 registers: the guest reads the control word gdb set (0x27f: status 5), gdb reads its fninit"
else
    fail "x87 registers set and read by gdb"; diag_file "$TMP/fpu.gdb" 30; diag_file "$TMP/fpu.err"
fi
if [ "$(cat "$TMP/points.rc")" = 137 ] && grep -qx 'vbts: killed by gdb' "$TMP/points.err"; then
    ok "kill: vbts ends with 137 and says gdb killed it"
else
    fail "kill (status $(cat "$TMP/points.rc"))"; diag_file "$TMP/points.err"
fi

# Ctrl-C (0x03) stops a guest that runs on: a long loop, spoken to raw.
loop_image "$TMP/loop.bin" 0x7fffffff
( timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --gdb 127.0.0.1:0 "$TMP/loop.bin" >"$TMP/loop.out" 2>"$TMP/loop.err" </dev/null
  echo $? >"$TMP/loop.rc" ) &
lpid=$!
for _ in $(seq 200); do
    port=$(sed -n 's/^vbts: gdb: .* on tcp:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/loop.err" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.05
done
python3 - "$port" >"$TMP/loop.py" 2>&1 <<'EOP'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
def pkt(d):
    s.sendall(b"$%s#%02x" % (d, sum(d) & 0xff))
def reply():
    buf = b""
    while True:
        buf += s.recv(4096)
        i = buf.find(b"$")
        j = buf.find(b"#", i + 1)
        if i >= 0 and j >= 0 and len(buf) >= j + 3:
            s.sendall(b"+")
            return buf[i + 1:j]
print("attach", (reply() if pkt(b"?") is None else b"").decode())
pkt(b"vCont;c")
time.sleep(1)
s.sendall(b"\x03")
print("stop", reply().decode())
pkt(b"k")
EOP
wait "$lpid"
if grep -q '^attach T02thread:1;$' "$TMP/loop.py" && grep -q '^stop T02thread:1;$' "$TMP/loop.py" &&
   [ "$(cat "$TMP/loop.rc")" = 137 ]; then
    ok "attach stops a running guest (T02); vCont;c, then Ctrl-C stops it again (T02)"
else
    fail "Ctrl-C (vbts status $(cat "$TMP/loop.rc"))"; diag_file "$TMP/loop.py"; diag_file "$TMP/loop.err"
fi

# The 64-bit kernel from its first instruction, in 32-bit mode, with its
# ELF64: record, stepi across the switch to long mode (the far jmp is the
# 17th instruction) and into main, the history, back one instruction,
# back to the beginning.
session cross "$STUBS/c64/long.elf" "$STUBS/c64/long.elf" <<'EOG'
set pagination off
target remote 127.0.0.1:PORT
record btrace bts
stepi 17
info symbol $pc
stepi 5
info symbol $pc
echo ==history==\n
record function-call-history /c
echo ==end==\n
reverse-stepi
info symbol $pc
record goto begin
print $pc == _start32
record stop
kill
EOG
if ! grep -q "warning: .*architecture\|Truncated register" "$TMP/cross.gdb" &&
   grep -q "^start64 in section .text$" "$TMP/cross.gdb" && grep -q "^main in section .text$" "$TMP/cross.gdb" &&
   grep -q "^start64 + [0-9]* in section .text$" "$TMP/cross.gdb" &&
   [ "$(between cross ==history== ==end== | tr '\t' ' ' | tr '\n' ';')" = "1 _start32;2 start64;" ] &&
   grep -q '^\$1 = 1$' "$TMP/cross.gdb"; then
    ok "long (ELF64, entered in 32-bit mode): from the first instruction, stepi 17 across the switch to long mode to start64, 5 more into main; history _start32, start64; reverse-stepi; record goto begin at _start32"
else
    fail "long from its first instruction"; diag_file "$TMP/cross.gdb" 25; diag_file "$TMP/cross.err"
fi

# Connections come and go.  (1) A connection that closes without a
# session (a port probe) leaves a -S guest waiting: the next gdb's session
# is whole.  (2) A second gdb while one is attached is refused, in a reply
# gdb prints, and the first goes on undisturbed.  (3) detach leaves the
# guest running; a later target remote attaches again and stops it.
LELF=$STUBS/c64/long.elf
start_vbts() {     # NAME VBTS-ARGS...: vbts -S --gdb in the background, $port set
    local name=$1
    shift
    ( timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" --gdb 127.0.0.1:0 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
      echo $? >"$TMP/$name.rc" ) &
    vpid=$!
    port=
    for _ in $(seq 200); do
        port=$(sed -n 's/^vbts: gdb: .* on tcp:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/$name.err" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.05
    done
}
start_vbts probe -S "$LELF"
exec 3<>"/dev/tcp/127.0.0.1/$port"
exec 3>&-
sleep 0.3
history_script probe main 5 | sed "s/PORT/$port/" >"$TMP/probe.cmd"
timeout -k 5 "$VBTS_TIMEOUT" gdb -batch -nx -x "$TMP/probe.cmd" "$LELF" >"$TMP/probe.gdb" 2>&1 </dev/null
wait "$vpid"
if between probe ==history== ==end== | cmp -s - "$TMP/long.want" && [ "$(cat "$TMP/probe.rc")" = 107 ]; then
    ok "a port probe, then gdb: the -S guest waited; the session's history is whole, the status 107"
else
    fail "a port probe, then gdb"; diag_file "$TMP/probe.gdb"; diag_file "$TMP/probe.err"
fi

start_vbts second -S "$LELF"
history_script second main 5 | sed "s/PORT/$port/; /^target remote/a shell sleep 3" >"$TMP/first.cmd"
timeout -k 5 "$VBTS_TIMEOUT" gdb -batch -nx -x "$TMP/first.cmd" "$LELF" >"$TMP/first.gdb" 2>&1 </dev/null &
gpid=$!
sleep 1
timeout -k 5 30 gdb -batch -nx -ex "target remote 127.0.0.1:$port" >"$TMP/other.gdb" 2>&1 </dev/null
wait "$gpid" "$vpid"
if grep -q "Remote failure reply: E.vbts: another gdb is attached to this guest; one at a time" "$TMP/other.gdb" &&
   grep -q "^vbts: gdb: a second connection refused: another gdb is attached (one at a time)$" "$TMP/second.err" &&
   sed -n '/^==history==$/,/^==end==$/p' "$TMP/first.gdb" | sed '1d;$d' | cmp -s - "$TMP/long.want" &&
   [ "$(cat "$TMP/second.rc")" = 107 ]; then
    ok "a second gdb is refused (it prints why), the first's session goes on whole"
else
    fail "a second gdb refused"; diag_file "$TMP/other.gdb"; diag_file "$TMP/first.gdb"; diag_file "$TMP/second.err"
fi

start_vbts reattach "$TMP/loop.bin"
timeout -k 5 30 gdb -batch -nx -ex "target remote 127.0.0.1:$port" -ex "print \$ecx" -ex detach \
    >"$TMP/detach.gdb" 2>&1 </dev/null
sleep 0.5
timeout -k 5 30 gdb -batch -nx -ex "target remote 127.0.0.1:$port" -ex "print \$ecx" -ex kill \
    >"$TMP/again.gdb" 2>&1 </dev/null
wait "$vpid"
ecx1=$(sed -n 's/^\$1 = \([0-9]*\)$/\1/p' "$TMP/detach.gdb")
ecx2=$(sed -n 's/^\$1 = \([0-9]*\)$/\1/p' "$TMP/again.gdb")
if grep -q "(Remote target) detached" "$TMP/detach.gdb" && [ -n "$ecx1" ] && [ -n "$ecx2" ] &&
   [ "$ecx2" -lt "$ecx1" ] && [ "$(cat "$TMP/reattach.rc")" = 137 ]; then
    ok "detach leaves the guest running (its loop counter went from $ecx1 to $ecx2); target remote attaches again, and kill ends it (137)"
else
    fail "detach and attach again (vbts status $(cat "$TMP/reattach.rc"))"; diag_file "$TMP/detach.gdb"
    diag_file "$TMP/again.gdb"; diag_file "$TMP/reattach.err"
fi

# --trace beside gdb: the same records as without it.
"$VBTS" -q --trace "$TMP/alone.vbts" "$CELF" >/dev/null 2>&1 </dev/null
session traced "$CELF" "$CELF" -q --trace "$TMP/traced.vbts" <<'EOG'
target remote 127.0.0.1:PORT
hbreak leaf
continue
continue
delete
continue
EOG
if [ -x "$VBTS_DECODE" ] && [ "$(cat "$TMP/traced.rc")" = 1 ] &&
   "$VBTS_DECODE" "$TMP/alone.vbts" 2>/dev/null | grep -v -e ' -- start ' -e ' -- stop ' >"$TMP/alone.txt" &&
   "$VBTS_DECODE" "$TMP/traced.vbts" 2>/dev/null | grep -v -e ' -- start ' -e ' -- stop ' >"$TMP/traced.txt" &&
   [ -s "$TMP/alone.txt" ] && cmp -s "$TMP/alone.txt" "$TMP/traced.txt"; then
    ok "--trace with gdb stopping twice on the way: the same $(wc -l <"$TMP/alone.txt") lines of records and markers as alone (start and stop times aside)"
else
    fail "--trace beside gdb (status $(cat "$TMP/traced.rc"))"; diff "$TMP/alone.txt" "$TMP/traced.txt" | diag; diag_file "$TMP/traced.gdb"
fi

# The options' errors.
run "-S without --gdb" 125 "vbts: -S waits for gdb: it needs --gdb [HOST:]PORT" -- -S "$CELF"

# Linux (the kernel's -dbg vmlinux), with `nokaslr`.  From its first
# instruction, on both hosts: startup_64 runs at its physical address, so
# the symbols go 0x80000000 further (wrapping: 0xffffffff81000000 is
# 0x1000000), and gdb records from there without a breakpoint.
if [ "${VBTS_LINUX:-1}" = 0 ] || [ ! -r "$LINUX_GUEST/vmlinux" ] || [ ! -r "$LINUX_GUEST/bzImage" ]; then
    for t in "linux entry: threads" "linux entry: history" "linux entry: reverse-stepi, record goto begin" \
             "linux: history from start_kernel" "linux: reverse-stepi and record goto begin"; do
        skip "$t" "no Linux guest with vmlinux (make linux-guest, VBTS_LINUX)"
    done
else
    session entry "$LINUX_GUEST/bzImage" "$LINUX_GUEST/vmlinux" --memory 256M --cpus 2 \
        --initrd "$LINUX_GUEST/initramfs.cpio" --append "$LINUX_APPEND nokaslr" <<EOG
set pagination off
set record function-call-history-size unlimited
symbol-file -o 0x80000000 $LINUX_GUEST/vmlinux
target remote 127.0.0.1:PORT
info threads
thread 2
echo ==thread2==\n
print/x \$pc
echo ==end2==\n
thread 1
record btrace bts
stepi 400
set \$end = \$pc
echo ==history==\n
record function-call-history /c
echo ==end==\n
reverse-stepi
print \$pc != \$end
record goto begin
print \$pc == startup_64
kill
EOG
    # vCPU 1 waits for the boot CPU's SIPI at the reset vector.
    if grep -q '^\* 1 *Thread 1 (vCPU 0) ' "$TMP/entry.gdb" && grep -q '^  2 *Thread 2 (vCPU 1) ' "$TMP/entry.gdb" &&
       [ "$(between entry ==thread2== ==end2==)" = '$1 = 0xfff0' ]; then
        ok "linux entry: a gdb thread per vCPU (--cpus 2); thread 2's registers are vCPU 1's, at the reset vector"
    else
        fail "linux entry: threads"; diag_file "$TMP/entry.gdb" 30
    fi
    between entry ==history== ==end== >"$TMP/eh.txt"
    if head -n 1 "$TMP/eh.txt" | grep -q '^1	 *startup_64$' &&
       grep -q '^[0-9]*	 *startup_64_setup_env$' "$TMP/eh.txt" && grep -q '^[0-9]*	 *verify_cpu$' "$TMP/eh.txt" &&
       grep -q '^[0-9]*	 *__startup_64$' "$TMP/eh.txt"; then
        ok "linux entry: record btrace bts at the first instruction, stepi 400: startup_64 calls startup_64_setup_env, verify_cpu, __startup_64 ($(wc -l <"$TMP/eh.txt") lines)"
    else
        fail "linux entry: history"; diag_file "$TMP/entry.gdb" 30; diag_file "$TMP/entry.err"
    fi
    if grep -q '^\$2 = 1$' "$TMP/entry.gdb" && grep -q '^\$3 = 1$' "$TMP/entry.gdb"; then
        ok "linux entry: reverse-stepi goes back, record goto begin returns to startup_64"
    else
        fail "linux entry: reverse-stepi, record goto begin"; diag_file "$TMP/entry.gdb" 30
    fi
    # From start_kernel, by a breakpoint (where a host's guests fire none,
    # vbts hides start_kernel's page and steps only through it: docs/gdb.md).
    session linux "$LINUX_GUEST/bzImage" "$LINUX_GUEST/vmlinux" --memory 256M \
        --initrd "$LINUX_GUEST/initramfs.cpio" --append "$LINUX_APPEND nokaslr" <<'EOG'
set pagination off
target remote 127.0.0.1:PORT
hbreak start_kernel
continue
record btrace bts
next
next
next
echo ==history==\n
record function-call-history /c
echo ==end==\n
reverse-stepi
print $pc != start_kernel
record goto begin
print $pc == start_kernel
record stop
kill
EOG
    between linux ==history== ==end== >"$TMP/lh.txt"
    if head -n 1 "$TMP/lh.txt" | grep -qx '1	start_kernel' &&
       grep -q '^[0-9]*	  set_task_stack_end_magic$' "$TMP/lh.txt" &&
       [ "$(grep -c . "$TMP/lh.txt")" -ge 4 ]; then
        ok "linux: record btrace bts from start_kernel, next x3: the history starts in start_kernel and calls set_task_stack_end_magic"
    else
        fail "linux: history"; diag_file "$TMP/linux.gdb" 30; diag_file "$TMP/linux.err"
    fi
    if grep -q '^\$1 = 1$' "$TMP/linux.gdb" && grep -q '^\$2 = 1$' "$TMP/linux.gdb"; then
        ok "linux: reverse-stepi leaves the current line's instruction, record goto begin returns to start_kernel"
    else
        fail "linux: reverse-stepi, record goto begin"; diag_file "$TMP/linux.gdb" 30
    fi
fi

exit $((TAP_FAILED > 0))
