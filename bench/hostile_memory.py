#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Memory the analyzer needs per item of a hostile trace (issue 32).

For each shape of bench_gen_hostile (distinct stacks, live allocations,
frames, strings, phases, threads) it writes a trace of N1 and of N2 items
and runs a command on each, and prints the peak resident size of each run,
the trace's bytes per item and the analyzer's bytes per item:
(peak(N2) - peak(N1)) / (N2 - N1), which leaves out what any trace costs.

  hostile_memory.py --cli CUMEMTRACE --gen BENCH_GEN_HOSTILE [--dir DIR]
                    [--shapes stacks,live,...] [--n1 N] [--n2 N]
                    [--command report|check] [--symbols]

docs/performance.md, "Memory on hostile traces", quotes its output."""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

SHAPES = ["stacks", "live", "frames", "strings", "phases", "threads"]


def peak_rss_kib(argv):
    """Runs argv; returns its peak resident size (KiB) and its status."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    return usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--n1", type=int, default=20000)
    ap.add_argument("--n2", type=int, default=200000)
    ap.add_argument("--command", default="report")
    ap.add_argument("--symbols", action="store_true")
    args = ap.parse_args()
    d = args.dir or tempfile.mkdtemp(prefix="cmt-hostile-")
    os.makedirs(d, exist_ok=True)
    print(f"{'shape':8} {'N':>9} {'trace':>11} {'B/item':>7} {'peak RSS':>10} {'analyzer B/item':>16}")
    for shape in args.shapes.split(","):
        rows = []
        for n in (args.n1, args.n2):
            path = os.path.join(d, f"{shape}.{n}.bin")
            if not os.path.exists(path):
                subprocess.run([args.gen, shape, path, str(n)], check=True)
            argv = [args.cli, args.command] + ([] if args.symbols else ["--no-symbols"]) + [path]
            rss, status = peak_rss_kib(argv)
            if status not in (0, 1):
                print(f"{shape}: {args.command} exited {status}", file=sys.stderr)
            rows.append((n, os.path.getsize(path), rss))
        (n1, s1, r1), (n2, s2, r2) = rows
        per = (r2 - r1) * 1024 / (n2 - n1)
        for n, size, rss in rows:
            print(f"{shape:8} {n:>9} {size:>11} {size / n:>7.1f} {rss / 1024:>8.1f} MiB", end="")
            print(f" {per:>16.0f}" if n == n2 else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
