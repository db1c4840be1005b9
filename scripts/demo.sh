#!/bin/sh
# make demo: trace a bundled guest and show what vbts recorded.
set -e
BUILD=${1:-build}
stub=$BUILD/guest-stub/branches64.bin
trace=$BUILD/demo.vbts
echo "== vbts --trace $trace $stub"
set +e
"$BUILD/vbts" --force --trace "$trace" "$stub"
status=$?
set -e
echo "== guest exit status $status (debug-exit 0 -> 1)"
echo "== vbts-decode $trace"
"$BUILD/vbts-decode" "$trace"
