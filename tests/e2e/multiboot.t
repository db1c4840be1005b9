#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# multiboot.t: multiboot kernels as QEMU boots them (docs/multiboot.md).
# guest-stub/pc/platform.c reports what it finds, one fact a line: its
# command line, the modules (--initrd), its segment below 1 MiB, fw_cfg
# (signature, feature bits, CPUs, RAM, the file directory and etc/e820),
# the MADT and, with --cpus 2, the AP it started by INIT/SIPI at 0x8000
# in real mode; it ends with a 4-byte write to the debug-exit port.  Its
# output is checked line for line, untraced and under each engine that
# runs here; the AP's records, which no timing changes, are the same
# under both.  Then the loader's refusals, and an a.out image at 0x8000.
. "$(dirname "$0")/tap.sh"

cd "$ROOT"
ELF=$STUBS/pc/platform.elf
have_vbts && [ -f "$ELF" ] || { plan 1; skip "multiboot platform" "vbts or $ELF is not built"; exit 0; }
T=$TMP
plan 19

printf 'NR_CPUS=1\nMEMSIZE=256\n' >"$T/env"
printf 'second' >"$T/two,b"
# The facts that do not depend on --cpus, after the lines that do.
common() {
    cat <<EOF
low segment: 0x8000: 0xfa
fw_cfg: QEMU, id 1, $1 CPUs, RAM 0x10000000
fw_cfg file: etc/e820, 20 bytes, key 0x20: RAM 0x0-0x10000000
EOF
}
{
    echo "cmdline: $ELF a=1 b"
    echo "module 0: $T/env x=1, 22 bytes: NR_CPUS=1|MEMSIZE=256|"
    echo "module 1: $T/two,b, 6 bytes: second"
    common 1
    echo "ACPI: none"
} >"$T/want1"
{
    echo "cmdline: $ELF "
    echo "modules: none"
    common 2
    echo "ACPI: MADT CPUs 0 1, I/O APIC 0xfec00000"
    echo "SMP: 1 AP started, APIC IDs 1"
} >"$T/want2"

# check NAME WANT STATUS [vbts args...]: stdout == WANT, the status, stderr shown if not.
check() {
    local name=$1 want=$2 st=0
    shift 2
    timeout -k 5 "$VBTS_TIMEOUT" "$VBTS" "$@" >"$T/out" 2>"$T/err" </dev/null || st=$?
    if [ $st = 43 ] && cmp -s "$want" "$T/out"; then
        ok "$name"
    else
        fail "$name" "status $st (want 43: outl 0x115 to port 0xf4)" "$(diff "$want" "$T/out")" "$(tail -n 3 "$T/err")"
    fi
}

check "modules with their command lines (',,' a comma), --append after the kernel's name, fw_cfg, no ACPI" \
    "$T/want1" --initrd "$T/env x=1,$T/two,,b" --append "a=1 b" "$ELF"
check "--cpus 2: a PC: fw_cfg says 2 CPUs, the MADT lists both, the AP starts by INIT/SIPI at 0x8000" \
    "$T/want2" --cpus 2 "$ELF"

# Traced: the same lines, no violation; the AP's records from its first far jump.
ap32=$(nm "$ELF" | awk '$3 == "ap32" { print "0x" $1 }')
case $VBTS_HOST in
kvm_pvm|kvm_amd|kvm_intel) engines="step branch" ;;
lab/*) [ "${LAB_QEMU:-}" = system ] && engines=step || engines="step branch" ;;
*) engines=step ;;
esac
for e in step branch; do
    if [[ " $engines " != *" $e "* ]]; then
        skip "--cpus 2 traced, $e engine" "this host runs no branch engine"
        skip "--cpus 2 traced, $e engine: the AP's records" "this host runs no branch engine"
        skip "--cpus 2 traced, $e engine: --verify-flow" "this host runs no branch engine"
        continue
    fi
    check "--cpus 2 traced, $e engine: the same lines" "$T/want2" \
        --cpus 2 --engine $e --verify-flow --trace "$T/$e.vbts" "$ELF"
    cp "$T/err" "$T/$e.err"
    "$VBTS_DECODE" "$T/$e.vbts" 2>/dev/null | awk '$1 == 1 && $2 ~ /^0x/ { print $2, $4 }' >"$T/$e.ap"
    first=$(head -n 1 "$T/$e.ap")
    want_first=$(printf '0x%016x 0x%016x' 0x8013 "$ap32")
    # far jmp to ap32, call ap_main, call lapic, ret, ret; then cli; hlt holds it.
    if [ "$first" = "$want_first" ] && [ "$(wc -l <"$T/$e.ap")" = 5 ]; then
        ok "--cpus 2 traced, $e engine: the AP's 5 records, from its far jump out of real mode to its halt"
    else
        fail "--cpus 2 traced, $e engine: the AP's records" "first: '$first', want '$want_first'" "$(head -n 5 "$T/$e.ap")"
    fi
    if grep -qx 'vbts: verify-flow: [0-9]* records checked, 0 violations' "$T/$e.err"; then
        ok "--cpus 2 traced, $e engine: --verify-flow: 0 violations"
    else
        fail "--cpus 2 traced, $e engine: --verify-flow" "$(grep verify-flow "$T/$e.err")"
    fi
done
if [ -s "$T/step.ap" ] && [ -s "$T/branch.ap" ]; then
    if cmp -s "$T/step.ap" "$T/branch.ap"; then
        ok "the AP's records are the same under both engines"
    else
        fail "the AP's records are the same under both engines" "$(diff "$T/step.ap" "$T/branch.ap" | head -n 10)"
    fi
else
    skip "the AP's records are the same under both engines" "one engine only here"
fi

run "--initrd: a module that cannot be read: status 125, named" 125 \
    "vbts: $ELF: --initrd: cannot open $T/nope: No such file or directory" -- --initrd "$T/nope x" "$ELF"
run "--initrd: an empty item" 125 \
    "vbts: $ELF: --initrd: a module without a file name in '$T/env,'" -- --initrd "$T/env," "$ELF"
head -c 1048576 /dev/zero >"$T/big"
run "--initrd: modules beyond --memory" 125 \
    "vbts: $ELF: no room for the multiboot information and modules above the image (needs 0x104000-0x205000; use a larger --memory)" \
    -- --memory 2M --initrd "$T/big" "$ELF"
run "an ELF segment in the hole below 1 MiB: status 125, named" 125 \
    "vbts: fuzz/corpus/multiboot/elf32_in_hole: ELF segment 0xa0000-0xa0110 lies outside guest memory (RAM for images is 0x0-0x9fc00 and 0x100000-0x10000000)" \
    -- fuzz/corpus/multiboot/elf32_in_hole
mb_image "$T/low.bin" "cmp ebx, 0x9000       ; the information: on the page after the image
jne .bad
mov al, 5
out 0xf4, al
.bad: mov al, 6
out 0xf4, al" 0x8000
run "an a.out image at 0x8000, its information on the next page" 11 "" -- "$T/low.bin"
mb_image "$T/halt.bin" "mov dx, 0x604
mov ax, 0x3400        ; SLP_TYP 5 (\\_S5), SLP_EN: ACPI power-off
out dx, ax
cli
hlt"
run "--cpus 1: ACPI power-off ends the run with status 0" 0 "" -- --cpus 1 "$T/halt.bin"
# The firmware's state (x86/bios.h): the PIT's IRQ0 reaches the CPU at the PIC's vector 8.
mb_image "$T/timer.bin" "lidt [idtr]
sti
hlt                   ; woken by the timer
ud2
tick: mov al, 7       ; the handler: no iretd (kvm_pvm cannot run it at CPL0)
out 0xf4, al
idtr: dw 9 * 8 - 1
dd idt - \$\$ + 0x100000
idt: times 8 dq 0
dw (tick - \$\$ + 0x100000) & 0xffff, 0x08, 0x8e00, (tick - \$\$ + 0x100000) >> 16"
run "--cpus 1: the PIT ticks on IRQ0, at the PIC's vector 8, as the firmware leaves them" 15 "" -- --cpus 1 "$T/timer.bin"
run "--cpus 1, traced: the timer's interrupt wakes the HLT" 15 "" -- --cpus 1 --trace "$T/timer.vbts" -q "$T/timer.bin"
recs=$("$VBTS_DECODE" "$T/timer.vbts" 2>&1 | awk '$2 ~ /^0x/ { print $2, $4 }')
if [ "$recs" = "0x0000000000100029 0x000000000010002b" ]; then
    ok "--cpus 1, traced: one record, from after the HLT to the handler"
else
    fail "--cpus 1, traced: one record, from after the HLT to the handler" "got: $recs"
fi
run "--cpus 0 refused" 125 "vbts: --cpus: '0' is not a number from 1 to 64" -- --cpus 0 "$ELF"
