#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""live.py: a running vbts's trace read live, in a loop.

    live.py [--compress] [--interval SECONDS] ADDR

ADDR is the monitor's --trace unix:PATH or tcp:HOST:PORT.  Once a second
(--interval) prints the records that came, their rate and the most
frequent branch kinds; at the end of the trace, the totals and what was
lost.  Ctrl-C stops it.  For example:

    vbts --trace unix:/tmp/s guest.bin &
    live.py unix:/tmp/s
"""
import argparse
import sys
import time

import numpy as np

import vbts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("--compress", action="store_true", help="ask for the stream as zstd frames")
    ap.add_argument("--interval", type=float, default=1.0)
    a = ap.parse_args()

    total, kinds = 0, np.zeros(256, dtype=np.int64)
    since, last = 0, time.monotonic()
    t = None
    try:
        with vbts.open(a.addr, compress=a.compress) as t:
            for arr in t.chunks():          # arrays as the records come
                total += arr.size
                since += arr.size
                kinds += np.bincount(arr["kind"], minlength=256)
                now = time.monotonic()
                if now - last >= a.interval:
                    top = np.argsort(kinds)[::-1][:3]
                    print("%9d branches  %10.0f/s  %s" % (
                        total, since / (now - last),
                        "  ".join("%s %d" % (vbts.kind_name(k), kinds[k]) for k in top if kinds[k])),
                        flush=True)
                    since, last = 0, now
    except KeyboardInterrupt:
        print("interrupted")
    except vbts.Error as e:
        print("live: %s" % e, file=sys.stderr)
        end(t, total)
        sys.exit(1)
    end(t, total)


def end(t, total):
    markers = t.markers if t is not None else []
    stops = [m for m in markers if isinstance(m, vbts.Stop)]
    print("end: %d branches, %d markers, %d records lost, %s" % (
        total, len(markers), sum(m.count for m in markers if isinstance(m, vbts.Lost)),
        ", ".join("vCPU %d stopped (%s)" % (m.cpu, m.reason) for m in stops) or "no stop marker"))


if __name__ == "__main__":
    main()
