#!/bin/sh
# Install what the build and the tests need, only when something is missing.
set -e
pkgs="build-essential nasm pkg-config libzydis-dev libelf-dev libcriterion-dev qemu-system-x86 python3 perl busybox-static cpio"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "vbts: missing packages:$missing (run as root, or: apt-get install$missing)" >&2
    exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
