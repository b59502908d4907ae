#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPU cost of the Python package (docs/python.md, docs/performance.md):

1. cumemtrace.step(), mark() and `with phase()` per call, without the
   profiler loaded (empty Python functions) and with it (a ctypes call into
   the shim, which writes one mark record);
2. the pytest plugin's way of knowing what a test left: per "test" (a
   window of 64 allocations and frees on the simulated device), the
   follower's poll and take, against cumemtrace.load() of the whole trace
   (what re-reading the trace at each test's end would cost), after 50,
   200 and 800 tests.

    meson compile -C build
    bench/run_python_api_bench.py --build build

Prints medians of several rounds (min beside); figures to quote in
docs/performance.md, not assertions."""
import argparse
import os
import subprocess
import sys
import tempfile

CODE_CALLS = r'''
import statistics, sys, time
import cumemtrace
n = 200000
def per_call(fn):
    rounds = []
    for _ in range(7):
        t = time.perf_counter_ns()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter_ns() - t) / n)
    return statistics.median(rounds), min(rounds)
def empty():
    pass
def with_phase():
    with cumemtrace.phase("p"):
        pass
res = {"loop of an empty function": per_call(empty), "step()": per_call(cumemtrace.step),
       "mark('m')": per_call(lambda: cumemtrace.mark("m")), "with phase('p')": per_call(with_phase)}
for k, (med, mn) in res.items():
    print(f"  {k:28s} {med:8.1f} ns (min {mn:.1f})")
'''

CODE_FOLLOW = r'''
import ctypes, os, statistics, sys, time
import cumemtrace
from cumemtrace._follow import Follower
lib = ctypes.CDLL("libcuda.so.1"); lib.cuInit(0)
c = ctypes.c_void_p(); lib.cuDevicePrimaryCtxRetain(ctypes.byref(c), 0); lib.cuCtxSetCurrent(c)
def test_body():
    ptrs = []
    for i in range(64):
        p = ctypes.c_uint64(); lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4096 * (i + 1))); ptrs.append(p)
    for p in ptrs:
        lib.cuMemFree_v2(p)
cumemtrace._push(b"pytest:warm"); test_body(); cumemtrace._pop()
f = Follower(cumemtrace.trace_path(), "pytest:")
f.poll()
done = 0
for checkpoint in (50, 200, 800):
    polls = []
    while done < checkpoint:
        cumemtrace._push(b"pytest:t"); test_body(); cumemtrace._pop()
        t = time.perf_counter_ns(); f.poll(); polls.append(time.perf_counter_ns() - t)
        done += 1
    loads = []
    for _ in range(3):
        t = time.perf_counter_ns(); cumemtrace.load(cumemtrace.trace_path(), no_forensics=True); loads.append(time.perf_counter_ns() - t)
    print(f"  after {checkpoint:4d} tests: poll+take per test {statistics.median(polls[-50:]) / 1e3:8.1f} us"
          f"   load() of the whole trace {statistics.median(loads) / 1e3:10.1f} us")
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"),
               CUMEMTRACE_CLI=os.path.join(build, "analyzer", "cumemtrace"),
               CUMEMTRACE_ANALYSIS_LIB=os.path.join(build, "analyzer", "lib", "libcumemtrace_analysis.so"),
               LD_LIBRARY_PATH=os.path.join(build, "tests", "sim"), CUMEMTRACE_QUIET="1")
    env.pop("LD_PRELOAD", None)
    with tempfile.TemporaryDirectory(prefix="cmt-pyapi-bench-") as tmp:
        print("without the profiler:")
        subprocess.run([a.python, "-c", CODE_CALLS], env=env, check=True)
        traced = dict(env, LD_PRELOAD=os.path.join(build, "preload", "libcumemtrace.so"),
                      CUMEMTRACE_OUTPUT=os.path.join(tmp, "t.%p.bin"))
        print("with the profiler (one mark record per call):")
        subprocess.run([a.python, "-c", CODE_CALLS], env=traced, check=True)
        print("the plugin's follower against re-reading the trace (64 allocations and frees per test):")
        subprocess.run([a.python, "-c", CODE_FOLLOW], env=traced, check=True)


if __name__ == "__main__":
    main()
