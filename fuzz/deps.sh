#!/bin/sh
# SPDX-License-Identifier: MIT
# fuzz/deps.sh CC: make sure CC can build a libFuzzer target (make fuzz), and
# install clang with its fuzzer runtime when it cannot, as root on Debian.
# Only `make fuzz` needs this: `make test` replays the corpora with the
# ordinary compiler (tests/deps.sh does not ask for clang).
set -e
cc=${1:-clang}
can_fuzz() {
    dir=$(mktemp -d "${TMPDIR:-/tmp}/vbts-fuzz-cc.XXXXXX")
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$dir/t.c"
    ok=0
    "$cc" -fsanitize=fuzzer,address,undefined -o "$dir/t" "$dir/t.c" >/dev/null 2>&1 || ok=1
    rm -rf "$dir"
    return $ok
}
can_fuzz && exit 0
# Debian 12: libFuzzer is in libclang-rt-dev, which clang only recommends.
pkgs="clang libclang-rt-dev"
if [ "$cc" != clang ]; then
    echo "vbts: make fuzz needs a compiler with libFuzzer: '$cc -fsanitize=fuzzer' does not link (or FUZZ_CC=clang)" >&2
    exit 1
fi
# shellcheck disable=SC2086
"$(dirname "$0")/../scripts/apt-install.sh" "make fuzz: '$cc -fsanitize=fuzzer' does not link" $pkgs
can_fuzz || { echo "vbts: $cc still cannot build a libFuzzer target" >&2; exit 1; }
