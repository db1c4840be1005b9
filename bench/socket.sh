#!/bin/bash
# Socket streaming throughput next to `cat FILE | reader` of the same bytes
# (bench/sockbench.c), as a ratio measured in this run.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/bench/sockbench"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$BUILD/bench/sockbench" "$T" "${RECORDS:-4000000}"
