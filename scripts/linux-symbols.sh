#!/bin/sh
# SPDX-License-Identifier: MIT
# make linux-symbols: the real symbols of the guest kernel, for --symbols and
# --trace-start SYMBOL.  Debian's kernel package ships a placeholder
# System.map; the real one comes from the matching -dbg package's vmlinux.
#
#   scripts/linux-symbols.sh OUTDIR     (after scripts/linux-guest.sh OUTDIR)
#
# OUTDIR/vmlinux      the kernel ELF with its symbol table (for libelf)
# OUTDIR/System.map   "ADDR TYPE NAME" lines made from it with nm
# Idempotent; about 300 MB to download once.
set -eu
OUT=${1:-build/linux}
[ -s "$OUT/kernel-package" ] || { echo "linux-symbols: run scripts/linux-guest.sh $OUT first" >&2; exit 1; }
if [ -s "$OUT/vmlinux" ] && [ -s "$OUT/System.map" ] && [ "$(wc -l <"$OUT/System.map")" -gt 1000 ]; then
    exit 0
fi
pkg=$(cat "$OUT/kernel-package")-dbg
echo "linux-symbols: downloading $pkg"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vbts-dbg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 0777 "$tmp"
(cd "$tmp" && apt-get download -q "$pkg")
# Only the kernel image, not the modules' debug files.
dpkg-deb --fsys-tarfile "$tmp"/*.deb | (cd "$tmp" && tar -x --wildcards './usr/lib/debug/boot/vmlinux-*')
mv "$tmp"/usr/lib/debug/boot/vmlinux-* "$OUT/vmlinux"
nm -n "$OUT/vmlinux" >"$OUT/System.map.tmp"
mv "$OUT/System.map.tmp" "$OUT/System.map"
echo "linux-symbols: $(wc -l <"$OUT/System.map") symbols in $OUT/System.map"
