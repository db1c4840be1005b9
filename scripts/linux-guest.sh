#!/bin/sh
# SPDX-License-Identifier: MIT
# make linux-guest: a real Linux guest for tests and the demo, from Debian's
# packages only (apt-get download + dpkg -x; nothing is built from source).
#
#   scripts/linux-guest.sh OUTDIR
#
# OUTDIR/bzImage        Debian's current cloud kernel (linux-image-*-cloud-amd64,
#                       resolved through the linux-image-cloud-amd64 metapackage)
# OUTDIR/System.map     its symbol map (Debian ships a placeholder in some versions)
# OUTDIR/initramfs.cpio busybox-static with an /init that mounts proc, sys and
#                       devtmpfs, prints "VBTS-LINUX-OK cpus=N online=LIST" and
#                       powers off.  Not compressed: the guest's CPL0 code is slow
#                       on some hosts (kvm_pvm emulates it) and gunzip there costs
#                       seconds; copying an uncompressed cpio costs nothing.
# Idempotent: an existing kernel is kept; the initramfs is rebuilt when older
# than this script.
set -eu
OUT=${1:-build/linux}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

need() { command -v "$1" >/dev/null 2>&1 || { echo "linux-guest: $1 not found (tests/deps.sh installs it)" >&2; exit 1; }; }
need apt-get
need dpkg
need cpio

if [ ! -s "$OUT/bzImage" ]; then
    # The metapackage names the current ABI: Depends: linux-image-6.1.0-NN-cloud-amd64.
    resolve() {
        apt-cache depends linux-image-cloud-amd64 2>/dev/null |
            sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-cloud-amd64\)$/\1/p' | head -n 1
    }
    pkg=$(resolve)
    # A fresh machine may have no package lists yet.
    if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null 2>&1 || true
        pkg=$(resolve)
    fi
    if [ -z "$pkg" ]; then
        echo "linux-guest: cannot resolve linux-image-cloud-amd64 (run apt-get update?)" >&2
        exit 1
    fi
    echo "linux-guest: downloading $pkg"
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/vbts-linux.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    # apt-get download writes into the current directory; as root it also
    # wants its sandbox user to be able to write there.
    chmod 0777 "$tmp"
    (cd "$tmp" && apt-get download -q "$pkg")
    dpkg -x "$tmp"/*.deb "$tmp/x"
    cp "$tmp"/x/boot/vmlinuz-* "$OUT/bzImage.tmp"
    cp "$tmp"/x/boot/System.map-* "$OUT/System.map" 2>/dev/null || true
    echo "$pkg" >"$OUT/kernel-package"
    mv "$OUT/bzImage.tmp" "$OUT/bzImage"
    rm -rf "$tmp"
    trap - EXIT
fi

if [ -s "$OUT/initramfs.cpio" ] && [ "$OUT/initramfs.cpio" -nt "$SELF" ]; then
    exit 0
fi

# busybox-static's /bin/busybox: the initramfs has no libraries.
BUSYBOX=/bin/busybox
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q "install ok installed" || {
    echo "linux-guest: busybox-static is not installed (tests/deps.sh installs it)" >&2
    exit 1
}
root=$(mktemp -d "${TMPDIR:-/tmp}/vbts-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$BUSYBOX" "$root/bin/busybox"
for app in sh mount echo cat grep wc poweroff reboot sleep nproc uname; do
    ln -s busybox "$root/bin/$app"
done
cat >"$root/init" <<'EOF'
#!/bin/sh
# vbts test init: mount what is needed, report the CPUs, power off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
cpus=$(grep -c '^processor' /proc/cpuinfo)
echo "VBTS-LINUX-OK cpus=$cpus online=$(cat /sys/devices/system/cpu/online)"
# -f: no init to ask; the kernel powers the machine off (ACPI S5).
poweroff -f
EOF
chmod 0755 "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$OUT/initramfs.cpio.tmp"
mv "$OUT/initramfs.cpio.tmp" "$OUT/initramfs.cpio"
echo "linux-guest: $OUT/bzImage ($(cat "$OUT/kernel-package" 2>/dev/null)), $OUT/initramfs.cpio"
