#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kernels.t: Debian's kernel repacked in every payload format the Linux
# boot protocol allows (gzip, bzip2, lzma, xz, lzo, lz4, zstd, and none),
# by Debian's own compressors (tests/e2e/repack-kernel), with the original
# payload zeroed, so that only a kernel unpacked on the host can boot.
# Each runs the kernel proper from its entry, and its first 500 branches
# are those of Debian's own bzImage, record for record; gzip and lzma run on
# to start_kernel, with the 2,000 branches there the same too.  A corrupt
# payload is named in one line, and the kernel's own decompressor runs
# instead.
#
# The repacked images are kept in build/linux/repack (tests/run makes them
# before the lab starts, since the lab sees this machine's files read-only).
# Unpacking is the host's, the same code whatever KVM runs the guest: the
# lab (half a minute a run under TCG) boots the kernel's default, gzip,
# from its entry beside Debian's own; this machine runs every format, the
# start_kernel windows and the corrupt payload.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
linux_guest_or_skip "kernels in every compression" symbols

FORMATS="gzip bzip2 lzma xz lzo lz4 zstd none"
LAB=0
case $VBTS_HOST in lab/*) LAB=1 ;; esac
RUN=$FORMATS
[ $LAB = 1 ] && RUN=gzip
WHY_LAB="the same unpacking code as on this machine's KVM, where it runs; the lab boots gzip from its entry"
plan $((2 * 8 + 2 + 4))

REPACK=$LINUX_GUEST/repack
if ! mkdir -p "$REPACK" 2>/dev/null || [ ! -w "$REPACK" ]; then REPACK=$TMP/repack; mkdir -p "$REPACK"; fi
made=
for f in $FORMATS; do
    img=$REPACK/bzImage.$f
    if [ ! -s "$img" ] || [ "$img" -ot "$LINUX_GUEST/bzImage" ]; then
        tests/e2e/repack-kernel "$LINUX_GUEST/bzImage" "$f" "$img" 2>"$TMP/repack.$f.err" || made="$made $f"
    fi
done
if [ -z "$made" ]; then ok "Debian's kernel repacked as $FORMATS"
else not_ok "Debian's kernel repacked in every format"; diag "failed:$made"; for f in $made; do diag_file "$TMP/repack.$f.err"; done; fi

# Seconds to start_kernel: about 3 on kvm_pvm.  A kernel that was not
# unpacked on the host never gets there (its payload is zeroed), so a
# failure costs this long, not LINUX_TIMEOUT.
T_WINDOW=$((LINUX_TIMEOUT < 180 ? LINUX_TIMEOUT : 180))

# window NAME N IMAGE [vbts args]: N branches into $TMP/NAME.vbts, as text
# (named by the kernel's symbols for a window that --trace-start opens:
# loading them costs seconds under TCG).
window() {
    local name=$1 n=$2 img=$3 sym=()
    shift 3
    [ $# -gt 0 ] && sym=(--symbols "$LINUX_MAP")
    timeout -k 5 "$T_WINDOW" "$VBTS" --cpus 1 --memory 256M --initrd "$LINUX_INITRD" \
        --append "$LINUX_APPEND" "${sym[@]}" --max-branches "$n" --stop-after-trace \
        --trace "$TMP/$name.vbts" "$@" "$img" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
    rc=$?
    "$VBTS_DECODE" "${sym[@]}" "$TMP/$name.vbts" 2>"$TMP/$name.derr" |
        grep -v '^ *[0-9]*  --' >"$TMP/$name.txt"
}

# Debian's own bzImage (LZ4): the first 500 branches of the kernel proper,
# from its entry (a tenth of a second; the next 500 take seconds where
# CPL0 is emulated), and 2,000 from start_kernel.
window debian 500 "$LINUX_GUEST/bzImage"
if [ $LAB = 1 ]; then
    [ "$rc" = 0 ] && [ "$(wc -l <"$TMP/debian.txt")" = 500 ] && ok "Debian's bzImage (LZ4): 500 branches from the kernel's entry" ||
        { not_ok "Debian's bzImage (LZ4): 500 branches from the entry"; diag "status $rc"; diag_file "$TMP/debian.err"; }
elif window debian.sk 2000 "$LINUX_GUEST/bzImage" --trace-start start_kernel &&
   [ "$rc" = 0 ] && [ "$(wc -l <"$TMP/debian.sk.txt")" = 2000 ] && [ "$(wc -l <"$TMP/debian.txt")" = 500 ] &&
   head -n 1 "$TMP/debian.sk.txt" | grep -q ' start_kernel+0x[0-9a-f]* -> '; then
    ok "Debian's bzImage (LZ4): 500 branches from the kernel's entry, 2000 from start_kernel"
else
    not_ok "Debian's bzImage (LZ4): 500 branches from the entry, 2000 from start_kernel"
    diag "status $rc, $(wc -l <"$TMP/debian.txt") and $(wc -l <"$TMP/debian.sk.txt") records"
    diag_file "$TMP/debian.sk.err"; diag_file "$TMP/debian.sk.derr"
fi

# same NAME REF WHAT: $TMP/NAME.txt holds exactly REF's records.
same() {
    if [ -s "$TMP/$1.txt" ] && cmp -s "$TMP/$1.txt" "$TMP/$2.txt"; then
        ok "$3"
    else
        not_ok "$3"
        diag "$(wc -l <"$TMP/$1.txt") records"; diff "$TMP/$2.txt" "$TMP/$1.txt" | head -n 5 | diag
    fi
}

# Every format: the kernel's first 500 branches from its entry, which a
# kernel left to its own decompressor would not take (that starts at 1 MiB).
# The kernel's default (gzip) and a format without a checksum of its own
# (lzma) also run on to start_kernel.
for f in $FORMATS; do
    if [ "${RUN#*"$f"}" = "$RUN" ]; then
        skip "$f payload: unpacked on the host" "$WHY_LAB"
        skip "$f payload: its first 500 branches are those of Debian's bzImage" "$WHY_LAB"
        [ "$f" = lzma ] && skip "$f payload: its 2000 branches from start_kernel" "$WHY_LAB"
        continue
    fi
    window "$f" 500 "$REPACK/bzImage.$f"
    if [ "$rc" = 0 ] && [ -s "$TMP/$f.txt" ] && ! grep -q 'does not unpack' "$TMP/$f.err" &&
       ! grep -v '^vbts: \(host-compat\|engine\|trace \)' "$TMP/$f.err" | grep -q .; then
        ok "$f payload: unpacked on the host, status 0, nothing on stderr but the usual lines"
    else
        not_ok "$f payload: unpacked on the host, status 0, nothing unusual on stderr"
        diag "status $rc"; diag_file "$TMP/$f.err"; diag_file "$TMP/$f.out" 5
    fi
    same "$f" debian "$f payload: its first 500 branches are those of Debian's bzImage"
    case $LAB:$f in 1:gzip) skip "$f payload: its 2000 branches from start_kernel" "$WHY_LAB" ;;
    0:gzip|0:lzma)
        window "$f.sk" 2000 "$REPACK/bzImage.$f" --trace-start start_kernel
        same "$f.sk" debian.sk "$f payload: its 2000 branches from start_kernel are those of Debian's bzImage"
    esac
done

# A corrupt xz payload: named, and the kernel's own decompressor (at 1 MiB)
# takes the first branch.
if [ $LAB = 1 ]; then
    skip "corrupt xz payload: one line says so" "$WHY_LAB"
    skip "corrupt xz payload: the first branch is the decompressor's" "$WHY_LAB"
elif tests/e2e/repack-kernel "$LINUX_GUEST/bzImage" xz "$TMP/bad.xz" --corrupt 2>"$TMP/bad.rerr"; then
    timeout -k 5 "$T_WINDOW" "$VBTS" --cpus 1 --memory 256M --max-branches 1 --stop-after-trace \
        --trace "$TMP/bad.vbts" "$TMP/bad.xz" >/dev/null 2>"$TMP/bad.err" </dev/null
    rc=$?
    first=$("$VBTS_DECODE" "$TMP/bad.vbts" 2>&1 | awk '$2 ~ /^0x/ { print $2; exit }')
    want="vbts: $TMP/bad.xz: the kernel's xz payload does not unpack on the host (corrupt, or no vmlinux inside); the kernel's own decompressor runs first"
    if [ "$rc" = 0 ] && grep -qxF "$want" "$TMP/bad.err"; then ok "corrupt xz payload: one line says so"
    else not_ok "corrupt xz payload: one line says so"; diag "status $rc"; diag_file "$TMP/bad.err"; fi
    if [ -n "$first" ] && [ $((first)) -ge $((0x100000)) ] && [ $((first)) -lt $((0x1000000)) ]; then
        ok "corrupt xz payload: the first branch is the decompressor's, at $first"
    else not_ok "corrupt xz payload: the first branch is the decompressor's"; diag "first branch from '$first'"; fi
else
    not_ok "corrupt xz payload: one line says so"; not_ok "corrupt xz payload: decompressor runs"; diag_file "$TMP/bad.rerr"
fi
