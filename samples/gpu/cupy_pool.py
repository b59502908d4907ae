#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CuPy under cumemtrace: CuPy links the CUDA runtime statically, so its memory
pool's allocations reach the driver through cuGetProcAddress, where the shim's
driver hooks see them.

  cupy_pool.py check OUTDIR      run the workload under the shim and compare
  cupy_pool.py workload OUT.json (inside the traced process) the workload itself

Checks, on the allocations whose stack runs through CuPy's extension modules:
  - their peak equals the largest MemoryPool.total_bytes() the workload saw
    (the pool only grows when it allocates, and it is sampled after every
    allocation);
  - their live bytes when the workload ends equal total_bytes() then;
  - after free_all_blocks() they are all released.
Needs CMT_SHIM and CMT_CLI in the environment."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


def workload(out_path):
    import cupy as cp

    pool = cp.get_default_memory_pool()
    marks, max_total = {}, 0

    def sample():
        nonlocal max_total
        max_total = max(max_total, pool.total_bytes())

    def mark(name):
        cp.cuda.Device().synchronize()
        marks[name] = {"ts": time.monotonic_ns(), "total_bytes": pool.total_bytes(), "used_bytes": pool.used_bytes()}

    kept = []
    for i, n in enumerate([1, 3, 8, 20, 5, 64, 2, 33]):
        a = cp.arange(n * MiB // 4, dtype=cp.float32)  # a kernel touches it
        sample()
        if i % 2 == 0:
            kept.append(a)
        b = a * 2  # a temporary from the pool
        sample()
        del a, b
    big = cp.empty(256 * MiB, dtype=cp.uint8)
    sample()
    del big
    mark("before_free_all")
    pool.free_all_blocks()
    mark("after_free_all")
    again = [cp.ones(16 * MiB // 4, dtype=cp.float32) for _ in range(3)]
    sample()
    mark("end")
    with open(out_path, "w") as f:
        json.dump({"max_total_bytes": max_total, "marks": marks, "cupy": cp.__version__,
                   "kept": len(kept), "again": len(again)}, f, indent=1)


def check(out):
    import cmt_trace

    shim, cli = os.environ["CMT_SHIM"], os.environ["CMT_CLI"]
    env = dict(os.environ, LD_PRELOAD=shim, CUMEMTRACE_QUIET="1",
               CUMEMTRACE_OUTPUT=os.path.join(out, "cupy.%p.bin"))
    with open(os.path.join(out, "cupy.log"), "w") as log:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "workload", os.path.join(out, "cupy.json")],
                           env=env, stdout=log, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        print(f"cupy_pool: workload FAILED, exit {p.returncode}; see cupy.log")
        return 1
    traces = sorted(f for f in os.listdir(out) if f.startswith("cupy.") and f.endswith(".bin"))
    if len(traces) != 1:
        print(f"cupy_pool: FAILED: expected one trace, found {traces}")
        return 1
    path = os.path.join(out, traces[0])
    with open(os.path.join(out, "cupy.report.txt"), "w") as f:
        subprocess.run([cli, "report", "--top", "20", path], stdout=f, stderr=subprocess.STDOUT)
    with open(os.path.join(out, "cupy.json")) as f:
        stats = json.load(f)
    trace = cmt_trace.Trace(path)

    def from_cupy(e):
        return e.kind != cmt_trace.HOST_PINNED and any("cupy" in trace.module_of(a).lower()
                                                       for a in trace.stacks.get(e.stack, []))

    timeline = []
    peak, _ts, _at, _exit = cmt_trace.replay(trace, from_cupy, lambda ts, v: timeline.append((ts, v)))

    def live_at(ts):
        v = 0
        for t, x in timeline:
            if t > ts:
                break
            v = x
        return v

    apis = {}
    for e in trace.events:
        if e.type == cmt_trace.REC_ALLOC and from_cupy(e):
            apis[cmt_trace.APIS[e.api][0]] = apis.get(cmt_trace.APIS[e.api][0], 0) + 1
    failures = []

    def verdict(ok, what):
        print(f"  {'PASS' if ok else 'FAIL'}  {what}")
        if not ok:
            failures.append(what)

    # Recorded under the driver API when the static runtime inside CuPy's
    # modules calls its own cudaMalloc directly; under the runtime API when
    # that module exports cudaMalloc and the call goes through its PLT (the
    # shim's export then comes first): either way, one event per call.
    print(f"== CuPy {stats['cupy']}: allocations from CuPy's pool by API: {apis}")
    verdict(bool(apis), "CuPy's pool allocations recorded")
    verdict(peak == stats["max_total_bytes"],
            f"peak of CuPy's allocations {peak} B == largest MemoryPool.total_bytes() {stats['max_total_bytes']} B")
    for name, m in stats["marks"].items():
        ours = live_at(m["ts"])
        verdict(ours == m["total_bytes"], f"at {name}: live {ours} B == MemoryPool.total_bytes() {m['total_bytes']} B "
                                          f"(used {m['used_bytes']} B)")
    print("cupy_pool: " + ("all checks passed" if not failures else f"{len(failures)} checks FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "workload":
        workload(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
