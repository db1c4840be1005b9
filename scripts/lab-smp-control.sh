#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lab-smp-control.sh: the control that tells a lab fault from a vbts fault
# for SMP guests.  Untraced 2-vCPU Linux boots, N under vbts and N under
# QEMU with -accel kvm (another VMM on the same KVM), alternately; where
# QEMU fails as often as vbts or more, the fault is the host's (in the lab:
# QEMU TCG's nested SVM), not vbts's.  Meant for the lab:
#
#   LAB_CPUS=2 scripts/lab.sh run scripts/lab-smp-control.sh [N] [TIMEOUT]
#
# (docs/host-compat.md has the figures), but runs on any KVM host.  Needs
# the Linux guest (make linux-guest) and qemu-system-x86_64.  Prints one
# line a boot and "vbts K of N, qemu K of N"; exit 0.
set -u
cd "$(dirname "$0")/.."
. scripts/linux-cmdline
N=${1:-10} TO=${2:-90} G=${LINUX_GUEST:-build/linux} VBTS=${VBTS:-build/vbts}
T=$(mktemp -d "${TMPDIR:-/tmp}/smp-control.XXXXXX")
trap 'rm -rf "$T"' EXIT
ok() { tr -d '\r' <"$1" | grep -q "VBTS-LINUX-OK cpus=2 online=0-1"; }
ok_v=0 ok_q=0
for i in $(seq "$N"); do
    t0=$SECONDS
    timeout -s TERM "$TO" "$VBTS" --cpus 2 --memory 256M --initrd "$G/initramfs.cpio" \
        --append "$LINUX_APPEND nokaslr" --symbols "$G/System.map" "$G/bzImage" >"$T/v.out" 2>"$T/v.err" </dev/null
    st=$?
    if [ $st = 0 ] && ok "$T/v.out"; then ok_v=$((ok_v + 1)); echo "vbts $i: ok ($((SECONDS - t0)) s)"
    else
        echo "vbts $i: FAILED, status $st ($((SECONDS - t0)) s)"
        grep -E "^vbts: (where|vCPU [0-9]+:)" "$T/v.err" | sed 's/^/    /'
    fi
    t0=$SECONDS
    timeout -s TERM "$TO" qemu-system-x86_64 -accel kvm -cpu host -smp 2 -m 256 -nographic -no-reboot \
        -nodefaults -serial stdio -kernel "$G/bzImage" -initrd "$G/initramfs.cpio" \
        -append "$LINUX_APPEND nokaslr" -device isa-debug-exit,iobase=0xf4,iosize=1 \
        </dev/null >"$T/q.out" 2>"$T/q.err"
    st=$?
    if ok "$T/q.out"; then ok_q=$((ok_q + 1)); echo "qemu $i: ok ($((SECONDS - t0)) s)"
    else echo "qemu $i: FAILED, status $st ($((SECONDS - t0)) s)"; fi
done
echo "2-vCPU boots, untraced: vbts $ok_v of $N, qemu -accel kvm $ok_q of $N"
