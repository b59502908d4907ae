#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tables of bench/gpu/profile_async_pair.sh: time per pair in each
library and function, for each configuration's fastest process.

    profile_summary.py OUTDIR PERIOD_NS

Reads OUTDIR/result-CONFIG-ROUND.json (the program's line: the API, the
pairs timed and their mean) and
OUTDIR/samples-CONFIG-ROUND.csv (perf report -F overhead,sample,comm,dso,sym -t,).
"""
import csv
import glob
import json
import os
import sys

CONFIGS = ["native", "disabled", "nostacks", "stacks"]


HELPER = "cumemtrace-pop"  # the shim's page-populating thread (page_populate.h)


def load(out, name, period, pairs):
    """ns per pair in each library and in each library's functions; the
    shim's helper thread's samples under "helper thread: LIBRARY"."""
    dso, sym = {}, {}
    with open(os.path.join(out, f"samples-{name}.csv")) as f:
        for row in csv.reader(f):
            if len(row) < 5:
                continue
            try:
                n = int(row[1].strip())
            except ValueError:
                continue
            ns = n * period / pairs
            d = os.path.basename(row[3].strip())
            if row[2].strip() == HELPER:
                d = f"helper thread: {d}"
            dso[d] = dso.get(d, 0) + ns
            key = f"{d}: {row[4].strip()}"
            sym[key] = sym.get(key, 0) + ns
    return dso, sym


def main():
    out, period = sys.argv[1], int(sys.argv[2])
    speed, by_dso, by_sym = {}, {}, {}
    api, pairs = "async", 0
    for c in CONFIGS:
        for path in sorted(glob.glob(os.path.join(out, f"result-{c}-*.json"))):
            name = os.path.basename(path)[len("result-"):-len(".json")]
            try:
                with open(path) as f:
                    r = json.load(f)
                # The mean: the samples cover every block, the rare costly
                # ones (a chunk claim, page faults) included.
                speed.setdefault(c, {})[name] = r["mean_ns_per_pair"]
                api, pairs = r["api"], r["pairs_per_block"] * r["blocks"]
            except (ValueError, KeyError):
                continue
            by_dso[name], by_sym[name] = load(out, name, period, pairs)
    chosen = {c: min(speed[c], key=speed[c].get) for c in CONFIGS if speed.get(c)}
    if not chosen:
        print("no process gave a result")
        return 1
    names = list(chosen.values())
    what = "cudaMalloc+cudaFree" if api == "plain" else "cudaMallocAsync+cudaFreeAsync"
    print(f"{what} pairs, dynamic runtime, samples in the timed blocks only;")
    print(f"ns per pair = samples x {period} ns / {pairs} pairs, in each configuration's fastest process")
    print("processes (ns per pair, mean over the timed blocks): " + "; ".join(
        f"{c} " + " ".join(f"{v:.0f}" for v in speed[c].values()) for c in chosen))
    print()
    print(f"{'library':34} " + " ".join(f"{c:>9}" for c in chosen))
    dsos = sorted({d for n in names for d in by_dso[n]}, key=lambda d: -max(by_dso[n].get(d, 0) for n in names))
    for d in dsos:
        if max(by_dso[n].get(d, 0) for n in names) >= 1:
            print(f"{d[-34:]:34} " + " ".join(f"{by_dso[n].get(d, 0):9.1f}" for n in names))
    print(f"{'sampled, all':34} " + " ".join(f"{sum(by_dso[n].values()):9.1f}" for n in names))
    print(f"{'timed by the program':34} " + " ".join(f"{speed[c][chosen[c]]:9.1f}" for c in chosen))
    print()
    print("functions, ns per pair (those with at least 2 in one configuration)")
    print(f"{'':60} " + " ".join(f"{c:>9}" for c in chosen))
    syms = sorted({s for n in names for s in by_sym[n]}, key=lambda s: -max(by_sym[n].get(s, 0) for n in names))
    for s in syms:
        if max(by_sym[n].get(s, 0) for n in names) >= 2:
            print(f"{s[-60:]:60} " + " ".join(f"{by_sym[n].get(s, 0):9.1f}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
