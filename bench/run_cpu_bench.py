#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPU benchmark of the recording overhead, on the simulated device.

Runs bench/cpu/alloc_loop (stream-ordered allocation + release pairs from one call
site at the bottom of a call chain) natively and under the shim in several
configurations, alternating them, several times; prints the median cost per
event of each configuration minus the native cost of the same loop, the trace
bytes per event, and the machine it ran on.

    meson compile -C build bench-cpu-programs
    bench/run_cpu_bench.py --build build [--reps 7] [--json out.json]

The figure is thread CPU time (CLOCK_THREAD_CPUTIME_ID) per event, taken by
the program around its loop: on a shared machine, wall time also counts the
time the thread waited for a CPU. An event is one call (an allocation or a
release); an allocation records a stack, a release does not (the default).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

# (name, environment, what it measures)
CONFIGS = [
    ("native", None, "the loop without the shim"),
    ("disabled", {"CUMEMTRACE_DISABLE": "1"}, "shim loaded, recording off (pass-through)"),
    ("no stacks", {"CUMEMTRACE_STACK_DEPTH": "0"}, "recording without stacks"),
    ("no stacks, no dev cache", {"CUMEMTRACE_STACK_DEPTH": "0", "CUMEMTRACE_DEVICE_CACHE": "0"},
     "recording without stacks, the device asked at every allocation"),
    # The event clock (preload/platform/clock.h): what the TSC saves, side by side.
    ("no stacks, clock_gettime", {"CUMEMTRACE_STACK_DEPTH": "0", "CUMEMTRACE_CLOCK": "monotonic"},
     "recording without stacks, every timestamp from clock_gettime"),
    ("8 frames", {"CUMEMTRACE_STACK_DEPTH": "8"}, "stacks of 8 frames"),
    ("32 frames", {"CUMEMTRACE_STACK_DEPTH": "32"}, "stacks of 32 frames"),
    ("32 frames, clock_gettime", {"CUMEMTRACE_STACK_DEPTH": "32", "CUMEMTRACE_CLOCK": "monotonic"},
     "stacks of 32 frames, every timestamp from clock_gettime"),
    ("64 frames", {"CUMEMTRACE_STACK_DEPTH": "64"}, "stacks of 64 frames"),
    ("8 frames, no cache", {"CUMEMTRACE_STACK_DEPTH": "8", "CUMEMTRACE_STACK_CACHE": "0"},
     "stacks of 8 frames, every one unwound"),
    ("32 frames, no cache", {"CUMEMTRACE_STACK_DEPTH": "32", "CUMEMTRACE_STACK_CACHE": "0"},
     "stacks of 32 frames, every one unwound"),
    ("64 frames, no cache", {"CUMEMTRACE_STACK_DEPTH": "64", "CUMEMTRACE_STACK_CACHE": "0"},
     "stacks of 64 frames, every one unwound"),
]


def machine_description(build):
    info = {"python": platform.python_version(), "kernel": platform.release()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("Model name", "CPU(s)", "Hypervisor vendor", "Thread(s) per core"):
                info[key.strip()] = value.strip()
    except OSError:
        pass
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            info["clocksource"] = f.read().strip()
    except OSError:
        pass
    for cmd, key in ((["pkg-config", "--modversion", "libunwind"], "libunwind"),
                     (["cc", "-dumpfullversion"], "cc"),
                     (["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                      "commit")):
        try:
            info[key] = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        except OSError:
            pass
    # A bundle (scripts/gpu_bundle.sh) says which commit its build is; the
    # git HEAD of the tree it was copied into may be another one.
    try:
        with open(os.path.join(build, "build-id.txt")) as f:
            info["commit"] = f.read().strip()[:12] + " (the build's build-id.txt)"
    except OSError:
        if info.get("commit"):
            info["commit"] += " (git HEAD of the tree)"
    info["load average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    info["build"] = os.path.abspath(build)
    return info


BACKENDS = {
    "sim": ("alloc_loop", "the simulated device (tests/sim): one mutex for all of its state"),
    "null": ("alloc_loop_null", "a runtime that does nothing (bench/cpu/null_cudart.c): no lock, no driver"),
}


def run_once(args, env_extra, backend, threads, pairs, tmpdir):
    env = dict(os.environ)
    sim = os.path.join(args.build, "tests", "sim")
    env["LD_LIBRARY_PATH"] = sim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["SIMCUDA_DEVICES"] = "1"
    env.pop("LD_PRELOAD", None)
    for k in list(env):
        if k.startswith("CUMEMTRACE_"):
            del env[k]
    trace = None
    if env_extra is not None:
        env["LD_PRELOAD"] = os.path.join(args.build, "preload", "libcumemtrace.so")
        env["CUMEMTRACE_QUIET"] = "1"
        trace = os.path.join(tmpdir, "trace.bin")
        env["CUMEMTRACE_OUTPUT"] = trace
        if args.clock:
            env["CUMEMTRACE_CLOCK"] = args.clock
        env.update(env_extra)
    argv = [os.path.join(args.build, "bench", "cpu", BACKENDS[backend][0]), "--threads", str(threads), "--pairs", str(pairs),
            "--warmup", str(max(pairs // 10, 1000)), "--chain", str(args.chain)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"run_cpu_bench: {' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    if trace and os.path.exists(trace):
        s = subprocess.run([os.path.join(args.build, "bench", "trace_stats"), trace], capture_output=True, text=True)
        if s.returncode == 0:
            result["trace"] = json.loads(s.stdout)
        os.unlink(trace)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (default: build)")
    ap.add_argument("--reps", type=int, default=7, help="runs of each configuration (default 7)")
    ap.add_argument("--pairs", type=int, default=200000, help="pairs per thread, one thread (default 200000)")
    ap.add_argument("--pairs-8", type=int, default=50000, help="pairs per thread, eight threads (default 50000)")
    ap.add_argument("--chain", type=int, default=70,
                    help="frames of the program's call chain below the allocation site (default 70: deeper than "
                         "every depth measured, so each stack is cut at the configured depth)")
    ap.add_argument("--threads", default="1,8", help="thread counts, comma-separated (default 1,8)")
    ap.add_argument("--backends", default="sim,null",
                    help="what the program allocates from, comma-separated: sim (the simulated device) and null "
                         "(a runtime that does nothing, for scaling); default sim,null")
    ap.add_argument("--clock", choices=("auto", "tsc", "monotonic"),
                    help="CUMEMTRACE_CLOCK for every configuration under the shim that does not set its own "
                         "(default: unset, i.e. auto)")
    ap.add_argument("--configs",
                    help="only these configurations, comma-separated names (native is always run: the "
                         "overheads are differences from it)")
    ap.add_argument("--json", help="write every measurement to this file")
    args = ap.parse_args()
    configs = CONFIGS
    if args.configs:
        wanted = [c.strip() for c in args.configs.split(",")]
        unknown = [c for c in wanted if c not in [n for n, _, _ in CONFIGS]]
        if unknown:
            sys.exit(f"run_cpu_bench: unknown configuration(s) {unknown}: expected names from "
                     f"{[n for n, _, _ in CONFIGS]}")
        configs = [c for c in CONFIGS if c[0] == "native" or c[0] in wanted]
    for prog in ("cpu/alloc_loop", "cpu/alloc_loop_null", "trace_stats"):
        if not os.path.exists(os.path.join(args.build, "bench", prog)):
            sys.exit(f"run_cpu_bench: {args.build}/bench/{prog} is missing: run `meson compile -C {args.build} bench-cpu-programs`")

    machine = machine_description(args.build)
    tmpdir = tempfile.mkdtemp(prefix="cmt-bench-")
    thread_counts = [int(t) for t in args.threads.split(",")]
    backends = args.backends.split(",")
    for b in backends:
        if b not in BACKENDS:
            sys.exit(f"run_cpu_bench: unknown backend {b!r}: expected one of {', '.join(BACKENDS)}")
    samples = {}  # (backend, config, threads) -> list of results, in rep order
    try:
        for rep in range(args.reps):
            # Rotate the order each repetition so no configuration always
            # runs right after another.
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for backend in backends:
                for threads in thread_counts:
                    pairs = args.pairs if threads == 1 else args.pairs_8
                    for name, env, _ in order:
                        samples.setdefault((backend, name, threads), []).append(
                            run_once(args, env, backend, threads, pairs, tmpdir))
            print(f"  repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    machine["load average after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    machine["CUMEMTRACE_CLOCK"] = args.clock or "unset (auto)"

    print("Machine:")
    for k, v in machine.items():
        print(f"  {k}: {v}")
    print(f"\nalloc_loop: cudaMallocAsync + cudaFreeAsync of 512 bytes, call chain of {args.chain} frames, "
          f"{args.reps} runs per configuration, medians; ns = thread CPU time per event")
    for b in backends:
        print(f"  backend {b}: {BACKENDS[b][1]}")
    header = f"{'backend':<7} {'configuration':<24} {'threads':>7} {'ns/event':>9} {'overhead':>9} {'spread':>15} " \
             f"{'bytes/event':>11} {'record B/ev':>11}"
    print(header)
    print("-" * len(header))
    table = []
    for backend, threads in [(b, t) for b in backends for t in thread_counts]:
        native = [r["cpu_ns_per_event"] for r in samples[(backend, "native", threads)]]
        for name, env, what in configs:
            runs = samples[(backend, name, threads)]
            cpu = [r["cpu_ns_per_event"] for r in runs]
            # Paired differences: each run minus the native run of the same
            # repetition, which ran moments before or after it.
            diffs = [c - n for c, n in zip(cpu, native)]
            med = statistics.median(cpu)
            over = statistics.median(diffs) if env is not None else 0.0
            spread = f"{min(diffs):.0f}..{max(diffs):.0f}" if env is not None else f"{min(cpu):.0f}..{max(cpu):.0f}"
            traces = [r["trace"] for r in runs if "trace" in r]
            fbpe = statistics.median(t["file_bytes_per_event"] for t in traces) if traces else None
            rbpe = statistics.median(t["record_bytes_per_event"] for t in traces) if traces else None
            print(f"{backend:<7} {name:<24} {threads:>7} {med:>9.1f} {over:>9.1f} {spread:>15} "
                  f"{(f'{fbpe:.2f}' if fbpe else '-'):>11} {(f'{rbpe:.2f}' if rbpe else '-'):>11}")
            table.append({"backend": backend, "configuration": name, "what": what, "threads": threads, "ns_per_event": med,
                          "overhead_ns_per_event": over, "overhead_min": min(diffs), "overhead_max": max(diffs),
                          "file_bytes_per_event": fbpe, "record_bytes_per_event": rbpe,
                          "runs": runs})
    print("\noverhead = median over runs of (configuration - native of the same repetition); spread: its range "
          "(native row: range of its own figure)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "chain": args.chain, "reps": args.reps, "clock": args.clock, "table": table},
                      f, indent=1)


if __name__ == "__main__":
    main()
