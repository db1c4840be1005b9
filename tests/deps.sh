#!/bin/sh
# Install what the build and the tests need, only when something is missing.
set -e
pkgs="build-essential nasm pkg-config libzydis-dev libelf-dev libdw-dev libcriterion-dev libseccomp-dev lcov gdb qemu-system-x86 python3 python3-numpy python3-pandas python3-matplotlib python3-pytest perl busybox-static cpio zlib1g-dev libbz2-dev liblzma-dev liblzo2-dev liblz4-dev libzstd-dev gzip bzip2 xz-utils lzop lz4 zstd"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
exec "$(dirname "$0")/../scripts/apt-install.sh" "make test" $missing
