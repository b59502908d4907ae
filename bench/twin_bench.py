#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`cumemtrace report --no-symbols` side by side with heaptrack's
`heaptrack_print` on the same shape of work (docs/performance.md, "Side by
side with heaptrack").

usage: twin_bench.py --build BUILD [--dir DIR] [--pairs N] [--runs R] [--runtime null|sim]

bench/cpu/twin_pairs.c is built twice: twin_malloc makes N malloc/free pairs
(default 5,000,000) from 64 call sites in a sawtooth of live blocks and is
recorded by heaptrack (Debian's package); twin_cuda makes the same calls
with cudaMalloc/cudaFree over the null runtime of bench/cpu (or the
simulated device of tests/sim: --runtime sim) and is recorded by the shim.
Then each analyser reads its own recording, alternating (heaptrack_print,
then report, R times; default 5), each run a whole process: wall time, CPU
time (user + system) and peak resident set size, medians over the runs, and
the ratios. Without heaptrack the script says so and exits 0 (a benchmark,
not a test).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def timed(argv, env=None):
    """Runs argv with stdout to /dev/null; returns (wall s, CPU s, peak RSS MiB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed (status {status}): {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def record(args, build):
    """Records both twins once into args.dir; returns (heaptrack file, trace)."""
    os.makedirs(args.dir, exist_ok=True)
    ht_base = os.path.join(args.dir, f"twin-{args.pairs}")
    ht = ht_base + ".zst"
    trace = os.path.join(args.dir, f"twin-{args.pairs}-{args.runtime}.bin")
    malloc_prog = os.path.join(build, "bench", "cpu", "twin_malloc")
    cuda_prog = os.path.join(build, "bench", "cpu", "twin_cuda" if args.runtime == "null" else "twin_cuda_sim")
    shim = os.path.join(build, "preload", "libcumemtrace.so")
    for prog in (malloc_prog, cuda_prog, shim):
        if not os.path.exists(prog):
            sys.exit(f"{prog} is missing: meson compile -C {build} bench-twin-programs")
    pairs = ["--pairs", str(args.pairs)]
    if not os.path.exists(ht) or os.path.getmtime(ht) < os.path.getmtime(malloc_prog):
        print(f"recording {ht} with heaptrack ...", file=sys.stderr)
        for stale in (ht, ht_base + ".gz"):
            if os.path.exists(stale):
                os.remove(stale)
        subprocess.run(["heaptrack", "-o", ht_base, malloc_prog] + pairs, check=True, stdout=subprocess.DEVNULL)
        if not os.path.exists(ht):
            sys.exit(f"heaptrack wrote no {ht} (an older heaptrack writes .gz: this script wants 1.2 or later)")
    if not os.path.exists(trace) or os.path.getmtime(trace) < max(os.path.getmtime(cuda_prog),
                                                                  os.path.getmtime(shim)):
        print(f"recording {trace} with the shim ...", file=sys.stderr)
        if os.path.exists(trace):
            os.remove(trace)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CUMEMTRACE_")}
        env.update(LD_PRELOAD=shim, CUMEMTRACE_OUTPUT=trace, CUMEMTRACE_QUIET="1")
        if args.runtime == "sim":
            env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "sim")
        subprocess.run([cuda_prog] + pairs, check=True, stdout=subprocess.DEVNULL, env=env)
    return ht, trace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, help="the meson build directory")
    ap.add_argument("--cli", help="cumemtrace to time (default BUILD/analyzer/cumemtrace)")
    ap.add_argument("--dir", help="where the recordings go (default BUILD/bench-data)")
    ap.add_argument("--pairs", type=int, default=5000000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--runtime", choices=("null", "sim"), default="null")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    args.dir = args.dir or os.path.join(build, "bench-data")
    cli = args.cli or os.path.join(build, "analyzer", "cumemtrace")
    missing = [t for t in ("heaptrack", "heaptrack_print") if not shutil.which(t)]
    if missing:
        print(f"twin_bench: skipped: {' and '.join(missing)} not found (Debian: apt install heaptrack)")
        return 0
    ht, trace = record(args, build)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"twins: {args.pairs:,} allocation/release pairs, 64 call sites; heaptrack file "
          f"{os.path.getsize(ht) / 2**20:.1f} MiB, trace {os.path.getsize(trace) / 2**20:.1f} MiB")
    env = {k: v for k, v in os.environ.items() if k != "CUMEMTRACE_ANALYZER_THREADS"}
    runs = {"heaptrack_print": [], "cumemtrace report": []}
    for _ in range(args.runs):
        runs["heaptrack_print"].append(timed(["heaptrack_print", ht], env))
        runs["cumemtrace report"].append(timed([cli, "report", "--no-symbols", trace], env))
    med = {}
    print(f"{'analyser':<18} {'wall s':>7} {'CPU s':>6} {'peak RSS MiB':>12}   (medians of {args.runs}; "
          f"walls {{min..max}})")
    for name, rs in runs.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        rss = statistics.median(r[2] for r in rs)
        med[name] = (wall, cpu, rss)
        print(f"{name:<18} {wall:>7.2f} {cpu:>6.2f} {rss:>12.1f}   "
              f"{{{min(r[0] for r in rs):.2f}..{max(r[0] for r in rs):.2f}}}")
    h, c = med["heaptrack_print"], med["cumemtrace report"]
    print(f"ratio heaptrack_print / cumemtrace report: wall {h[0] / c[0]:.2f}x, CPU {h[1] / c[1]:.2f}x, "
          f"peak RSS {h[2] / c[2]:.1f}x (target: wall 3x)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
