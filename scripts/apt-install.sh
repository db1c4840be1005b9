#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/apt-install.sh WHY PKG...: install Debian packages that are
# missing, as root (apt-get update first); otherwise say what to run and
# fail.  tests/deps.sh (make test) and fuzz/deps.sh (make fuzz) use it.
set -e
why=$1; shift
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "vbts: missing packages for $why: $* (as root: apt-get install $*)" >&2
    exit 1
fi
echo "installing: $* ($why)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
