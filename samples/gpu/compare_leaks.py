#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compares the leaks cumemtrace found in driver_leaks (built with plain nvcc:
static runtime) with what the program says it leaked and with
compute-sanitizer --leak-check full.

  compare_leaks.py OUTDIR

OUTDIR holds what run_driver_validation.sh wrote:
  driver_leaks.stdout        the program's own list ("leak NAME ADDRESS BYTES", "calls API N")
  driver_leaks.report.json   cumemtrace report --json of the traced run
  sanitizer.log              compute-sanitizer --leak-check full of an untraced run
  combined.log, combined/*.bin  compute-sanitizer with the shim preloaded: one process, so
                             the two tools' leaks can be matched by address
Prints what matched and what did not; exit status 0 when every check passed."""
import glob
import json
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cmt_trace  # noqa: E402

# How the static runtime reaches the driver (tests/sim/README.md lists the
# same mapping for the simulated runtime): the API each call is recorded as.
DRIVER_API = {"cudaMalloc": "cuMemAlloc", "cudaMallocPitch": "cuMemAllocPitch", "cudaMallocAsync": "cuMemAllocAsync",
              "cudaMallocManaged": "cuMemAllocManaged", "cudaMallocHost": "cuMemHostAlloc",
              "cuMemAlloc": "cuMemAlloc", "cuMemCreate": "cuMemCreate"}
# compute-sanitizer 2025.x prints sizes with thousands separators: "Leaked 8,388,608 bytes".
SANITIZER_LEAK = re.compile(r"Leaked ([\d,]+) bytes at (0x[0-9a-fA-F]+)")
SANITIZER_SUMMARY = re.compile(r"LEAK SUMMARY: (\d+) bytes leaked in (\d+) allocations")

failures = []


def verdict(ok, what):
    print(f"  {'PASS' if ok else 'FAIL'}  {what}")
    if not ok:
        failures.append(what)


def program_output(path):
    leaks, calls = {}, Counter()
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4 and parts[0] == "leak":
                leaks[parts[1]] = (int(parts[2], 16), int(parts[3]))
            elif len(parts) == 3 and parts[0] == "calls":
                calls[DRIVER_API[parts[1]]] += int(parts[2])
    return leaks, calls


def sanitizer_leaks(path):
    leaks, summary = [], None
    with open(path, errors="replace") as f:
        for line in f:
            m = SANITIZER_LEAK.search(line)
            if m:
                leaks.append((int(m.group(2), 16), int(m.group(1).replace(",", ""))))
            m = SANITIZER_SUMMARY.search(line)
            if m:
                summary = (int(m.group(1)), int(m.group(2)))
    return leaks, summary


def main():
    out = sys.argv[1]
    leaks, calls = program_output(os.path.join(out, "driver_leaks.stdout"))
    with open(os.path.join(out, "driver_leaks.report.json")) as f:
        rep = json.load(f)

    print("Every allocation call caught (static runtime: recorded under the driver API):")
    for api, n in sorted(calls.items()):
        got = rep["events_by_api"].get(api, 0)
        if api == "cuMemHostAlloc":  # a runtime may use either pinned-memory entry point
            got += rep["events_by_api"].get("cuMemAllocHost", 0)
        verdict(got >= n, f"{api}: program made {n}, cumemtrace recorded {got}"
                          + (f" ({got - n} made by the runtime itself)" if got > n else ""))

    print("Every leak the program made, found at its call site:")
    by_function = {(first_function(s), s["bytes"]): s["kind"] for s in rep["leaks"]["sites"] if s["count"] == 1}
    for name, (_addr, size) in sorted(leaks.items()):
        kind = by_function.get((name, size))
        verdict(kind is not None, f"{name}: {size} B" + (f" ({kind})" if kind else " not found"))
    expected = {(name, size) for name, (_a, size) in leaks.items()}
    extra = [s for s in rep["leaks"]["sites"]
             if holds_memory(s["kind"]) and (first_function(s), s["bytes"]) not in expected]
    for s in extra:
        frames = " <- ".join(f["function"] or f["module"] for f in s["frames"][:6])
        print(f"  note  also live at exit: {s['bytes']} B in {s['count']} ({s['kind']}, {s['api']}): {frames}")

    print("compute-sanitizer --leak-check full, separate run (matched by size):")
    san, summary = sanitizer_leaks(os.path.join(out, "sanitizer.log"))
    print(f"  compute-sanitizer: {len(san)} leaks, summary {summary}")
    ours_sizes = Counter()
    for s in rep["leaks"]["sites"]:
        if holds_memory(s["kind"]):
            ours_sizes[(s["bytes"] // s["count"], s["kind"])] += s["count"]
    size_only = Counter()
    for (size, _kind), n in ours_sizes.items():
        size_only[size] += n
    san_sizes = Counter(size for _a, size in san)
    for size, n in sorted(san_sizes.items()):
        verdict(size_only[size] >= n, f"compute-sanitizer leak of {size} B x{n}: cumemtrace has {size_only[size]}")
    reported_kinds = {kind for (size, kind) in ours_sizes if san_sizes[size]}
    for (size, kind), n in sorted(ours_sizes.items()):
        if kind in reported_kinds:
            verdict(san_sizes[size] >= n, f"cumemtrace leak of {size} B x{n} ({kind}): compute-sanitizer has "
                                          f"{san_sizes[size]}")
        else:
            print(f"  note  cumemtrace leak of {size} B x{n} ({kind}): compute-sanitizer reports no {kind} leaks"
                  f" ({'found' if san_sizes[size] else 'not found'})")

    combined = sorted(glob.glob(os.path.join(out, "combined", "*.bin")))
    if combined and os.path.exists(os.path.join(out, "combined.log")):
        print("compute-sanitizer with the shim preloaded, one process (matched by address):")
        san, summary = sanitizer_leaks(os.path.join(out, "combined.log"))
        live = {}
        for path in combined:
            trace = cmt_trace.Trace(path)
            _p, _t, _at_peak, at_exit = cmt_trace.replay(trace, lambda e: True)
            for x in at_exit:
                live[x.event.addr] = (x.event.size, cmt_trace.KIND_NAMES[x.event.kind])
        print(f"  compute-sanitizer: {len(san)} leaks; cumemtrace: {len(live)} live at exit")
        for addr, size in san:
            got = live.get(addr)
            verdict(got is not None and got[0] == size,
                    f"compute-sanitizer leak {size} B at {addr:#x}: cumemtrace " +
                    (f"{got[0]} B ({got[1]})" if got else "has nothing there"))
        san_addrs = {a for a, _s in san}
        kinds_reported = {live[a][1] for a in san_addrs if a in live}
        for addr, (size, kind) in sorted(live.items()):
            if addr in san_addrs:
                continue
            if kind in kinds_reported:
                verdict(False, f"cumemtrace leak {size} B at {addr:#x} ({kind}) not reported by compute-sanitizer")
            else:
                print(f"  note  cumemtrace leak {size} B at {addr:#x} ({kind}): compute-sanitizer reports no "
                      f"{kind} leaks")
    else:
        print("  note  no combined run (compute-sanitizer with the shim preloaded) to match by address")

    print()
    print("compare_leaks: " + ("all checks passed" if not failures else f"{len(failures)} checks FAILED"))
    return 1 if failures else 0


def holds_memory(kind_name):
    return kind_name not in ("vmm-reserve", "vmm-map")


def first_function(site):
    """The innermost frame's function without its parameter list: the program
    prints `runtime_leak`, the symbolizer names the C++ function
    `runtime_leak()` (demangled in full, as compute-sanitizer does)."""
    if not site["frames"] or not site["frames"][0]["function"]:
        return "?"
    return site["frames"][0]["function"].split("(", 1)[0]


if __name__ == "__main__":
    sys.exit(main())
