#!/bin/bash
# SPDX-License-Identifier: MIT
# The stock-KVM lab: Debian's own kvm_amd, loaded in a QEMU TCG guest whose
# CPU emulates AMD SVM with nested paging.  vbts and its tests run inside,
# on stock KVM, whatever KVM this machine has (docs/host-compat.md).
#
#   scripts/lab.sh setup            fetch Debian's kernel, build the initramfs (cached in build/lab)
#   scripts/lab.sh run CMD [ARG...] run CMD in the lab, here: same directory,
#                                   environment and files (the host's root,
#                                   read-only; /tmp is the lab's own); its
#                                   stdout, stderr and exit status come back
#   scripts/lab.sh info             what the lab is made of
#
# The lab's QEMU is Debian's from the release's backports suite (QEMU 10
# for bookworm), unpacked into build/lab/qemu: the release's own QEMU 7.2
# arms no hardware breakpoint in a nested guest (fixed in QEMU 9.1), and
# the system's QEMU (the oracle's) is left as it is.  The mirror is the one
# the machine's apt sources give for the release.
#
# Environment: LAB_MEM (MiB, default 3072), LAB_CPUS (default 1: see below),
# LAB_TCG_THREAD (single, the default, or multi), LAB_TIMEOUT (seconds for a
# run, default 3600), LAB_STALL (seconds without output after which a run is
# stopped; default 0, never), LAB_KEEP=1 keeps the run
# directory (job, console log, QEMU's messages), LAB_QEMU=system runs the
# system's QEMU instead (7.2 on Debian 12: no breakpoints fire there).
# Needs apt-get, dpkg, cpio and busybox-static; nothing is built from source.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LAB=${LAB_DIR:-$ROOT/build/lab}
INIT=$ROOT/scripts/lab-init
SELF=$ROOT/scripts/lab.sh

die() { echo "lab: $*" >&2; exit 125; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found (tests/deps.sh installs it)"; }

# The modules to load, with what they depend on first, from each .ko's
# own modinfo ("depends=a,b"): no kmod needed on this machine.
module_order() {
    local dir=$1 seen=" " out=""
    visit() {
        local m=$1 f deps d
        case "$seen" in *" $m "*) return 0 ;; esac
        seen="$seen$m "
        f=$(find "$dir" -name "$m.ko" -print -quit)
        [ -n "$f" ] || die "module $m not in the kernel package"
        deps=$(grep -a -o 'depends=[A-Za-z0-9_,-]*' "$f" | head -n 1 | cut -d= -f2 | tr ',' ' ')
        for d in $deps; do visit "$d"; done
        out="$out $m"
    }
    # virtio_pci and 9p for the host's files, kvm-amd for /dev/kvm.
    for m in virtio_pci 9pnet_virtio 9p kvm-amd; do visit "$m"; done
    echo $out
}

# The machine's own mirror of its Debian release, and the release's name.
release_mirror() {
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    apt-get indextargets --format '$(TARGET_OF) $(RELEASE) $(COMPONENT) $(REPO_URI)' 2>/dev/null |
        awk -v r="$codename" '$1 == "deb" && $2 == r && $3 == "main" { print $4 " " r; exit }'
}

# QEMU from the release's backports, unpacked into $LAB/qemu with its
# firmware (SeaBIOS too: QEMU 10 wants a newer one than bookworm's).
fetch_qemu() {
    [ -x "$LAB/qemu/usr/bin/qemu-system-x86_64" ] && return 0
    local mirror="" codename=""
    read -r mirror codename < <(release_mirror) || true
    [ -n "$mirror" ] || die "no apt source for this Debian release's main archive (apt-get indextargets): cannot fetch QEMU from its backports"
    local apt=$LAB/apt
    rm -rf "$apt" "$LAB/qemu.tmp"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$apt/sources" "$LAB/qemu.tmp"
    printf 'Types: deb\nURIs: %s\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$mirror" "$codename" >"$apt/sources/backports.sources"
    local opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/sources"
                -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
                -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
                -o APT::Sandbox::User=root)
    echo "lab: fetching QEMU from $codename-backports"
    apt-get "${opts[@]}" update -qq >/dev/null 2>"$apt/update.err" ||
        die "apt-get update of $codename-backports failed: $(tail -n 1 "$apt/update.err")"
    local p
    for p in qemu-system-x86 qemu-system-common qemu-system-data seabios; do
        (cd "$apt/debs" && apt-get "${opts[@]}" download -q "$p/$codename-backports") >/dev/null 2>"$apt/download.err" ||
            die "cannot download $p from $codename-backports: $(tail -n 1 "$apt/download.err")"
    done
    for p in "$apt"/debs/*.deb; do dpkg -x "$p" "$LAB/qemu.tmp"; done
    "$LAB/qemu.tmp/usr/bin/qemu-system-x86_64" --version >/dev/null 2>"$apt/run.err" ||
        die "QEMU from $codename-backports does not run here: $(tail -n 1 "$apt/run.err")"
    rm -rf "$LAB/qemu" "$apt/debs"
    mv "$LAB/qemu.tmp" "$LAB/qemu"
}

# The QEMU command: the backports one with its own firmware, or the system's.
# monitor SOCKET COMMAND...: the lab's QEMU monitor answers each command
# (what L1's vCPUs are doing when the lab is silent: spinning in L1's
# kernel, or running L2 with L1's own interrupts never delivered).
monitor() {
    local sock=$1
    shift
    python3 - "$sock" "$@" <<'PY' 2>/dev/null || echo "(the lab's QEMU monitor did not answer)"
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
def drain():
    out = b""
    while True:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        out += d
        if out.endswith(b"(qemu) "):
            break
    return out.decode(errors="replace")
drain()
for cmd in sys.argv[2:]:
    s.sendall(cmd.encode() + b"\n")
    sys.stdout.write(drain().replace("\r", "").replace("(qemu) ", ""))
PY
}

qemu_cmd() {
    if [ "${LAB_QEMU:-}" = system ]; then
        echo qemu-system-x86_64
    else
        echo "$LAB/qemu/usr/bin/qemu-system-x86_64 -L $LAB/qemu/usr/share/qemu -L $LAB/qemu/usr/share/seabios"
    fi
}

setup() {
    need apt-get; need dpkg; need cpio; need gzip
    [ -x /bin/busybox ] && dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q "install ok installed" ||
        die "busybox-static is not installed (tests/deps.sh installs it)"
    mkdir -p "$LAB"
    if [ ! -s "$LAB/vmlinuz" ] || [ ! -d "$LAB/modules" ]; then
        # Debian's generic kernel: it has 9p (the cloud kernel does not) and kvm_amd.
        resolve() {
            apt-cache depends linux-image-amd64 2>/dev/null |
                sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
        }
        local pkg
        pkg=$(resolve)
        if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
            apt-get update -qq >/dev/null 2>&1 || true
            pkg=$(resolve)
        fi
        [ -n "$pkg" ] || die "cannot resolve linux-image-amd64 (run apt-get update?)"
        echo "lab: downloading $pkg"
        local tmp
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/vbts-lab.XXXXXX")
        trap 'rm -rf "$tmp"' EXIT
        chmod 0777 "$tmp"
        (cd "$tmp" && apt-get download -q "$pkg") >/dev/null
        dpkg -x "$tmp"/*.deb "$tmp/x"
        rm -rf "$LAB/modules.tmp"
        mkdir -p "$LAB/modules.tmp"
        local kmods
        kmods=$(echo "$tmp"/x/lib/modules/*/kernel)
        [ -d "$kmods" ] || die "$pkg has no modules"
        local order
        order=$(module_order "$kmods")
        for m in $order; do cp "$(find "$kmods" -name "$m.ko" -print -quit)" "$LAB/modules.tmp/"; done
        printf '%s\n' $order >"$LAB/modules.tmp/modules.order"
        cp "$tmp"/x/boot/vmlinuz-* "$LAB/vmlinuz.tmp"
        rm -rf "$LAB/modules"
        mv "$LAB/modules.tmp" "$LAB/modules"
        echo "$pkg" >"$LAB/kernel-package"
        mv "$LAB/vmlinuz.tmp" "$LAB/vmlinuz"
        rm -rf "$tmp"
        trap - EXIT
        rm -f "$LAB/initramfs.cpio.gz"
    fi
    if [ "${LAB_QEMU:-}" = system ]; then need qemu-system-x86_64; else fetch_qemu; fi
    if [ -s "$LAB/initramfs.cpio.gz" ] && [ "$LAB/initramfs.cpio.gz" -nt "$INIT" ] &&
       [ "$LAB/initramfs.cpio.gz" -nt "$SELF" ]; then
        return 0
    fi
    local root
    root=$(mktemp -d "${TMPDIR:-/tmp}/vbts-labroot.XXXXXX")
    mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/lib/modules"
    cp /bin/busybox "$root/bin/busybox"
    cp "$LAB"/modules/* "$root/lib/modules/"
    cp "$INIT" "$root/init"
    chmod 0755 "$root/init"
    (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$LAB/initramfs.cpio.gz.tmp"
    mv "$LAB/initramfs.cpio.gz.tmp" "$LAB/initramfs.cpio.gz"
    rm -rf "$root"
    echo "lab: $LAB ready ($(cat "$LAB/kernel-package"), modules: $(tr '\n' ' ' <"$LAB/modules/modules.order"))"
}

# run CMD...: the job is a bash script in a fresh run directory, which the
# lab mounts read-write at the same path; its output streams back as it is
# written.
run() {
    [ $# -gt 0 ] || die "run: no command"
    setup >/dev/null
    mkdir -p "$LAB"
    local rundir
    rundir=$(mktemp -d "$LAB/run.XXXXXX")
    {
        echo "# written by scripts/lab.sh"
        local n
        for n in $(compgen -e); do
            case $n in PWD|OLDPWD|SHLVL|_|HOSTNAME|TMPDIR) continue ;; esac
            printf 'export %s=%q\n' "$n" "${!n}"
        done
        printf 'export TMPDIR=/tmp\n'
        printf 'cd %q || exit 125\n' "$PWD"
        printf 'exec'
        printf ' %q' "$@"
        printf '\n'
    } >"$rundir/job.sh"
    : >"$rundir/stdout"
    : >"$rundir/stderr"
    # The job's /tmp is the lab's own tmpfs, unless that would hide the run
    # directory or the repository.
    local labtmp=/tmp
    case "$rundir/" in /tmp/*) labtmp=/run ;; esac
    case "$ROOT/" in /tmp/*) labtmp=/run ;; esac
    [ "$labtmp" = /tmp ] || sed -i "s|^export TMPDIR=/tmp$|export TMPDIR=$labtmp|" "$rundir/job.sh"

    # Single-threaded TCG and one vCPU: under multi-threaded TCG nested
    # guests triple-fault now and then and a 2-vCPU one hangs; with two lab
    # vCPUs one nested boot in eight hangs early in the kernel (pinned to
    # one lab CPU or not); one lab vCPU runs a 2-vCPU nested Linux in
    # seconds (docs/host-compat.md).
    # The monitor's socket, where a unix socket's path fits (108 bytes).
    local mon=none
    [ ${#rundir} -lt 90 ] && mon="unix:$rundir/monitor.sock,server=on,wait=off"
    # shellcheck disable=SC2046
    timeout -k 10 "${LAB_TIMEOUT:-3600}" $(qemu_cmd) \
        -accel tcg,thread=${LAB_TCG_THREAD:-single} -cpu EPYC,+svm,+npt -m "${LAB_MEM:-3072}" -smp "${LAB_CPUS:-1}" \
        -nodefaults -display none -monitor "$mon" \
        -serial "file:$rundir/console.log" -no-reboot \
        -kernel "$LAB/vmlinuz" -initrd "$LAB/initramfs.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3 vbts_lab_run=$rundir vbts_lab_tmp=$labtmp" \
        -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
        -virtfs "local,path=$rundir,mount_tag=rundir,security_model=none" \
        </dev/null >"$rundir/qemu.out" 2>"$rundir/qemu.err" &
    local qpid=$! qst=0
    tail -n +1 -s 0.2 -f --pid=$qpid "$rundir/stdout" &
    local t1=$!
    tail -n +1 -s 0.2 -f --pid=$qpid "$rundir/stderr" >&2 &
    local t2=$!
    # LAB_STALL=N: a lab whose job writes nothing for N seconds is stopped
    # (a nested guest under TCG has been seen to stall whole, now and then,
    # where no timeout inside it can fire).
    local wd=
    if [ "${LAB_STALL:-0}" -gt 0 ]; then
        (
            last= quiet=0
            while kill -0 $qpid 2>/dev/null; do
                sleep 5
                now=$(cat "$rundir/stdout" "$rundir/stderr" 2>/dev/null | wc -c)
                if [ "$now" = "$last" ]; then quiet=$((quiet + 5)); else quiet=0 last=$now; fi
                if [ $quiet -ge "$LAB_STALL" ]; then
                    echo "lab: no output for $LAB_STALL s: the lab is stopped (LAB_STALL); where its vCPUs stood:" >&2
                    monitor "$rundir/monitor.sock" "info cpus" "info registers -a" |
                        grep -E "CPU #|RIP=|^CS =|CR0=|EFL=" | sed 's/^/lab:   /' >&2
                    kill $qpid
                    break
                fi
            done
        ) &
        wd=$!
    fi
    wait $qpid || qst=$?
    if [ -n "$wd" ]; then kill $wd 2>/dev/null || true; fi
    wait $t1 $t2 2>/dev/null || true
    local st
    if [ -s "$rundir/status" ]; then
        st=$(cat "$rundir/status")
    else
        st=125
        echo "lab: the lab ended without the job's status (QEMU status $qst); its console:" >&2
        tail -n 20 "$rundir/console.log" >&2 2>/dev/null || true
        grep -v "TCG doesn't support requested feature" "$rundir/qemu.err" | tail -n 5 >&2 || true
        [ "$qst" = 124 ] && echo "lab: killed after ${LAB_TIMEOUT:-3600} s (LAB_TIMEOUT)" >&2
    fi
    [ "${LAB_KEEP:-0}" = 1 ] && echo "lab: run directory kept: $rundir" >&2 || rm -rf "$rundir"
    return "$st"
}

case "${1:-}" in
setup) setup ;;
run) shift; [ "${1:-}" = -- ] && shift; run "$@" ;;
info)
    setup >/dev/null
    echo "kernel:  $(cat "$LAB/kernel-package") ($LAB/vmlinuz)"
    echo "modules: $(tr '\n' ' ' <"$LAB/modules/modules.order")"
    echo "qemu:    $($(qemu_cmd) --version | head -n 1), -accel tcg,thread=single -cpu EPYC,+svm,+npt -smp ${LAB_CPUS:-1}"
    ;;
*)
    sed -n "3,$(grep -n "^set -eu" "$0" | cut -d: -f1)p" "$0" | sed "\$d" | sed 's/^# \{0,1\}//'
    [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || exit 2
    ;;
esac
