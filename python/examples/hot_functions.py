#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hot_functions.py: the hottest functions of a trace window, and a
per-function branch histogram.

    hot_functions.py [--top N] [--png OUT.png] TRACE SYMBOLS

TRACE is any trace vbts-decode reads (FILE, FILE.zst, -, unix:PATH,
tcp:HOST:PORT); SYMBOLS a System.map, /proc/kallsyms text or an ELF
(vmlinux).  Prints the N functions (default 20) the most branches were
taken from, with their counts by branch kind, and with --png draws them:
one bar per function, split by kind.  For example, a Linux window of a
million branches from start_kernel (docs/python.md):

    vbts --trace w.vbts.zst --symbols System.map --trace-start start_kernel \\
         --max-branches 1000000 --stop-after-trace --initrd initramfs.cpio bzImage
    hot_functions.py --png hot.png w.vbts.zst System.map
"""
import argparse
import sys

import vbts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("symbols")
    ap.add_argument("--top", type=int, default=20, help="functions to show (default 20)")
    ap.add_argument("--png", help="draw the histogram into this PNG file (matplotlib)")
    ap.add_argument("--title", help="the picture's title (default: the trace's name)")
    a = ap.parse_args()

    try:
        with vbts.open(a.trace) as t:
            df = t.to_pandas(symbols=a.symbols)
    except (vbts.Error, OSError) as e:
        sys.exit("hot_functions: %s" % e)
    # Branches by the function they were taken from, and by kind.
    named = df[df["from_sym"].notna()]
    by_kind = named.groupby(["from_sym", "kind"], observed=True).size().unstack(fill_value=0)
    total = by_kind.sum(axis=1).sort_values(ascending=False)
    top = by_kind.loc[total.index[:a.top]]
    kinds = [k for k in vbts.KINDS if k in top.columns and top[k].sum()] + \
            [k for k in top.columns if k not in vbts.KINDS and top[k].sum()]
    top = top[kinds]

    print("%d branch records, %d in %d named functions" % (len(df), len(named), len(total)))
    width = max(len(str(f)) for f in top.index) if len(top) else 8
    cols = [max(len(k), 7) for k in kinds]
    print("%-*s %9s %6s %s" % (width, "function", "branches", "share",
                               " ".join("%*s" % (w, k) for w, k in zip(cols, kinds))))
    for f, row in top.iterrows():
        n = int(row.sum())
        print("%-*s %9d %5.1f%% %s" % (width, f, n, 100.0 * n / len(df),
                                         " ".join("%*d" % (w, row[k]) for w, k in zip(cols, kinds))))
    if a.png:
        draw(top, a.png, a.title or "%s: the %d hottest functions" % (a.trace, len(top)))


def draw(top, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = top.iloc[::-1]            # the hottest at the top
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.6))
    left = None
    for kind in rows.columns:
        ax.barh(rows.index.astype(str), rows[kind], left=left, label=kind)
        left = rows[kind] if left is None else left + rows[kind]
    ax.set_xlabel("branches taken from the function")
    ax.set_title(title, fontsize=10)
    ax.legend(title="kind", fontsize=8, loc="lower right")
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("histogram: %s" % path)


if __name__ == "__main__":
    main()
