#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gen.t: generated guest programs against QEMU (tests/gen/): the fixed seed
# set and the corpus, under each engine this host has.
#
# `make tests` prepares them in $BUILD/gen (tests/gen/fuzz-trace prepare:
# each program, its image and QEMU's records).  Here each runs under vbts:
#   - the seed set: one test per engine, failing on any mismatch (a record
#     QEMU does not have, one missing, or a status other than the guest's
#     without a clear stop); clear stops are counted in its table;
#   - the corpus (tests/gen/corpus, programs that once found a hole): one
#     test per program and engine, exact, or a clear stop where its line
#     allows one on this host.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
dir=${GEN_DIR:-$(dirname "$STUBS")/gen}
if ! have_vbts || ! have_decode; then
    plan 1
    skip "generated programs" "vbts is not built"
    exit 0
fi
# tests/run prepares them beside the first tests: wait for them (10 min).
for _ in $(seq 300); do [ -s "$dir/programs.json" ] && break; sleep 2; done
if [ ! -s "$dir/programs.json" ]; then
    plan 1
    not_ok "generated programs: $dir/programs.json is missing (make tests prepares it)"
    exit 1
fi
# QEMU 7.2's nested SVM fires no breakpoint: the branch engine is refused
# there, which the runner says in a skip line.  The lab, where a run costs
# a third of a second under TCG, takes the first 60 of the seed set.
limit=()
case $VBTS_HOST in lab/*) limit=(--seed-limit "${GEN_LAB_SEEDS:-60}" --class-seed-limit "${GEN_LAB_CLASS_SEEDS:-6}") ;; esac
exec tests/gen/fuzz-trace run "$dir" --host "$VBTS_HOST" --tap --timeout 30 "${limit[@]}"
