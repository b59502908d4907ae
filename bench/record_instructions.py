#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What recording costs per event, in instructions: reproducible where the
CPU benchmark's nanoseconds are not (a shared machine slows runs unevenly).

Runs bench/cpu/alloc_loop_null (allocation + release pairs over a runtime
that does nothing) under callgrind, natively and under the shim, each at two
loop lengths, and prints for each configuration

    (Ir(shim, long) - Ir(shim, short) - (Ir(native, long) - Ir(native, short)))
    / (events(long) - events(short))

the instructions the shim adds per event once started: start-up, the first
unwind and the trace's creation cancel out between the two lengths.

    meson compile -C build bench-cpu-programs
    bench/record_instructions.py --build build [--json out.json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# (name, environment, alloc_loop arguments)
CONFIGS = [
    ("async, stacks (default)", {}, ["--api", "async"]),
    ("async, no stacks", {"CUMEMTRACE_STACK_DEPTH": "0"}, ["--api", "async"]),
    ("plain, stacks (default)", {}, ["--api", "plain"]),
    # Every timestamp from clock_gettime: the event clock's re-anchoring
    # depends on elapsed time (slowed down under callgrind), so the figures
    # above vary by about one instruction from run to run, these two by a
    # few tenths.
    ("async, no stacks, clock_gettime", {"CUMEMTRACE_STACK_DEPTH": "0", "CUMEMTRACE_CLOCK": "monotonic"},
     ["--api", "async"]),
    ("plain, stacks, clock_gettime", {"CUMEMTRACE_CLOCK": "monotonic"}, ["--api", "plain"]),
]
SHORT, LONG = 2000, 12000


def instructions(cmd, env, workdir):
    out = os.path.join(workdir, "callgrind.out")
    if os.path.exists(out):
        os.unlink(out)
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd, env=env, cwd=workdir,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise RuntimeError("no instruction total in " + out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    args = ap.parse_args()
    program = os.path.join(args.build, "bench", "cpu", "alloc_loop_null")
    shim = os.path.abspath(os.path.join(args.build, "preload", "libcumemtrace.so"))
    results = []
    with tempfile.TemporaryDirectory() as work:
        for name, extra, argv in CONFIGS:
            counts = {}
            for traced in (False, True):
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                if traced:
                    env.update(extra)
                    env.update({"LD_PRELOAD": shim, "CUMEMTRACE_OUTPUT": os.path.join(work, "t.%p.bin"),
                                "CUMEMTRACE_QUIET": "1"})
                for pairs in (SHORT, LONG):
                    cmd = [os.path.abspath(program), "--pairs", str(pairs), "--warmup", "100", "--chain", "20"] + argv
                    counts[traced, pairs] = instructions(cmd, env, work)
                    for f in os.listdir(work):
                        if f.endswith(".bin"):
                            os.unlink(os.path.join(work, f))
            added = (counts[True, LONG] - counts[True, SHORT]) - (counts[False, LONG] - counts[False, SHORT])
            per_event = added / (2 * (LONG - SHORT))
            results.append({"config": name, "instructions_per_event": round(per_event, 1)})
            print(f"{name:28s} {per_event:8.1f} instructions per event")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
