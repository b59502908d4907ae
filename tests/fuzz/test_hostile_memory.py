#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The analyzer's memory on hostile traces stays within a budget that
counts bytes, not time (issue 32): for each shape of bench_gen_hostile, the
analysis of N items runs under --max-memory of a fixed 64 MiB plus a few
hundred bytes per item, which the analyzer enforces by counting what it
uses (base/memory_budget.c: its anonymous resident memory, or the
sanitizer's allocated bytes under ASan); a trace over it is refused, status
2. So the test fails if memory per item grows past the allowance. One
million distinct call stacks among them (a 72 MB trace: 3.4 GiB before).
A budget too small is refused with the message that says so.

  test_hostile_memory.py CUMEMTRACE BENCH_GEN_HOSTILE"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

cli, gen = sys.argv[1:3]
MiB = 1 << 20
# shape: (items, bytes allowed per item). The figures measured (RSS per
# item, docs/performance.md, "Memory on hostile traces") are about 700,
# 320, 0, 870 and 200; the allowance leaves room for allocator slack.
SHAPES = {
    "stacks": (1000000, 700),
    "live": (200000, 512),
    "frames": (2000000, 64),
    "strings": (200000, 1024),
    "phases": (200000, 384),
}
FIXED = 64 * MiB
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL: " + msg)


def run(*args):
    env = dict(os.environ)
    # The sanitizer's count is the budget's under ASan: no quarantine held back.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
    return subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=600)


d = tempfile.mkdtemp(prefix="cmt-hostile-memory-")
try:
    for shape, (n, per_item) in SHAPES.items():
        trace = os.path.join(d, shape + ".bin")
        subprocess.run([gen, shape, trace, str(n)], check=True, timeout=600)
        budget = FIXED + n * per_item
        for command in ("report", "check"):
            p = run(command, "--no-symbols", "--max-memory", str(budget), trace)
            ok = p.returncode in (0, 1)
            print(f"{'ok' if ok else 'FAIL'}: {command} of {n} {shape} ({os.path.getsize(trace)} bytes) within "
                  f"{budget // MiB} MiB")
            if not ok:
                fail(f"{command} {shape}: status {p.returncode}: {p.stderr.strip()}")
        os.unlink(trace) if shape != "stacks" else None
    # Refused with a clear message: the budget, what was in use, what to do.
    trace = os.path.join(d, "stacks.bin")
    p = run("report", "--no-symbols", "--max-memory", "64MiB", trace)
    pattern = (r"cumemtrace: \S+: the analysis needs more memory than --max-memory allows: \S+ \S+ in use over a "
               r"budget of 64\.0 MiB, after \d+ events, with \d+ distinct call stacks and \d+ live allocations so "
               r"far \(memory grows with those, not with the events\); give --max-memory a larger size \(this "
               r"machine has \S+ \S+, the default is half of it\), or analyse the trace on a machine with more "
               r"memory\n")
    if p.returncode != 2 or not re.fullmatch(pattern, p.stderr) or p.stdout:
        fail(f"refused: status {p.returncode}, stderr {p.stderr!r}")
    else:
        print("ok: a budget too small is refused, status 2")
    p = run("check", "--no-symbols", "--max-memory", "64MiB", trace)
    if p.returncode != 2 or "the analysis needs more memory than --max-memory allows" not in p.stdout:
        fail(f"check refused: status {p.returncode}, {p.stdout!r}")
    else:
        print("ok: check refuses it too, status 2")
finally:
    shutil.rmtree(d, ignore_errors=True)
sys.exit(1 if failed else 0)
