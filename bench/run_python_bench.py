#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPU benchmark of the Python frames (preload/python/python_frames.c).

Runs bench/cpu/py_alloc_loop.py (cudaMalloc + cudaFree pairs through ctypes
with 50 Python frames on the stack) under the shim with the Python frames on
and off (CUMEMTRACE_PYTHON=0: native frames only), alternating, several
times, with the stack cache on and off; prints the median nanoseconds per
pair of each and what the Python frames add per allocation (a release records
no stack). The figure is the thread's CPU time around the loop.

    meson compile -C build
    bench/run_python_bench.py --build build [--reps 7] [--frames 50] [--pairs 100000]

The runtime is the simulated device's (tests/sim): the shim records its
cuMemAlloc. On a shared machine the runs wander; the least disturbed run of
each configuration (min) is printed beside the median."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(args, build, runtime, env_extra, tmpdir):
    env = dict(os.environ)
    env.update({
        "LD_LIBRARY_PATH": os.path.join(build, "tests", "sim"),
        "LD_PRELOAD": os.path.join(build, "preload", "libcumemtrace.so"),
        "CUMEMTRACE_OUTPUT": os.path.join(tmpdir, "t.%p.bin"),
        "CUMEMTRACE_QUIET": "1",
    })
    env.update(env_extra)
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([args.python, os.path.join(here, "cpu", "py_alloc_loop.py"), runtime, str(args.frames),
                        str(args.pairs)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"benchmark run failed ({p.returncode}): {p.stderr}")
    for f in os.listdir(tmpdir):
        os.unlink(os.path.join(tmpdir, f))
    return float(p.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (default: build)")
    ap.add_argument("--reps", type=int, default=7, help="runs of each configuration (default 7)")
    ap.add_argument("--frames", type=int, default=50, help="Python frames on the stack (default 50)")
    ap.add_argument("--pairs", type=int, default=100000, help="allocation + release pairs per run (default 100000)")
    ap.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    runtime = os.path.join(build, "tests", "sim", "libcudart.so.13")
    configs = []
    for cache in ("1", "0"):
        for python in ("0", "1"):
            configs.append((f"python {'on ' if python == '1' else 'off'}, stack cache {'on ' if cache == '1' else 'off'}",
                            {"CUMEMTRACE_PYTHON": python, "CUMEMTRACE_STACK_CACHE": cache}))
    results = {name: [] for name, _ in configs}
    with tempfile.TemporaryDirectory(prefix="cmt-pybench-") as tmpdir:
        for _ in range(args.reps):
            for name, env in configs:
                results[name].append(run_once(args, build, runtime, env, tmpdir))
    print(f"{args.frames} Python frames, {args.pairs} pairs per run, {args.reps} runs each, "
          f"{args.python}")
    print(f"{'configuration':34} {'ns/pair (median)':>17} {'min':>8} {'max':>8}")
    for name, _ in configs:
        v = results[name]
        print(f"{name:34} {statistics.median(v):17.0f} {min(v):8.0f} {max(v):8.0f}")
    for cache in ("on ", "off"):
        on, off = results[f"python on , stack cache {cache}"], results[f"python off, stack cache {cache}"]
        print(f"Python frames add {statistics.median(on) - statistics.median(off):.0f} ns per allocation by the "
              f"medians, {min(on) - min(off):.0f} ns by the minima (stack cache {cache.strip()})")


if __name__ == "__main__":
    main()
