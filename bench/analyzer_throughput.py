#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Throughput and peak memory of `cumemtrace report --no-symbols` on
synthetic traces of two lengths (docs/performance.md, "Analyzer throughput").

usage: analyzer_throughput.py --cli CUMEMTRACE --gen BENCH_GEN_TRACE [--dir DIR]
                              [--events N[,N...]] [--repeat R] [--threads T[,T...]]
                              [--commands C[,C...]]

Traces are generated once into DIR (they are deterministic; about 14 bytes
per event) and reused by later runs. Each configuration runs R times; the
best wall time is reported (the machine may be shared), with the CPU time
(user + system) of that run, the peak resident set size of the analyzer and,
with two threads, how the CPU time split between the reader and the replay
(CUMEMTRACE_ANALYZER_STATS=1).

Then each of --commands (default report,html,check,timeline: `report
--no-symbols`, `report --no-symbols --format html`, `check --no-symbols`,
`timeline --csv`) runs R times on the first trace length as a user runs it
(the analyzer picks its threads): best wall time, the CPU time of that run,
the peak resident set size, and the output's size.
"""
import argparse
import os
import subprocess
import sys
import time


def generate(gen, path, events):
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(gen):
        return
    print(f"generating {path} ({events:,} events)...", file=sys.stderr)
    subprocess.run([gen, path + ".tmp", str(events)], check=True, stdout=subprocess.DEVNULL)
    os.replace(path + ".tmp", path)


COMMANDS = {
    "report": ["report", "--no-symbols"],
    "html": ["report", "--no-symbols", "--format", "html"],
    "check": ["check", "--no-symbols"],
    "timeline": ["timeline", "--csv"],
}


def run_command(cli, trace, words, out_path):
    """One whole process of a command; returns (wall, CPU, peak RSS MiB, output bytes)."""
    env = {k: v for k, v in os.environ.items() if k != "CUMEMTRACE_ANALYZER_THREADS"}
    with open(out_path, "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen([cli] + words + [trace], stdout=out, stderr=subprocess.PIPE, env=env, text=True)
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    # check exits 1 when the gate fails (the synthetic trace leaks by design)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{cli} {' '.join(words)} failed on {trace} (status {status}): {err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, os.path.getsize(out_path)


def run_once(cli, trace, threads):
    env = dict(os.environ, CUMEMTRACE_ANALYZER_THREADS=str(threads), CUMEMTRACE_ANALYZER_STATS="1")
    t0 = time.monotonic()
    p = subprocess.Popen([cli, "report", "--no-symbols", trace], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit(f"{cli} report failed on {trace} (status {status}): {err}")
    # "cumemtrace: analyzer threads: reader R s, replay P s of CPU" (two threads only)
    split = ""
    for line in err.splitlines():
        if "analyzer threads:" in line:
            words = line.replace(",", "").split()
            split = f"{float(words[4]):.2f}/{float(words[7]):.2f}"
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", default="bench-data")
    ap.add_argument("--events", default="10000000,50000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--commands", default="report,html,check,timeline",
                    help="commands timed on the first trace length ('' for none)")
    args = ap.parse_args()
    commands = [c for c in args.commands.split(",") if c]
    for c in commands:
        if c not in COMMANDS:
            sys.exit(f"--commands: '{c}' is not one of {', '.join(COMMANDS)}")
    os.makedirs(args.dir, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'events':>12} {'trace MiB':>9} {'threads':>7} {'wall s':>7} {'Mevents/s':>9} {'CPU s':>6} "
          f"{'Mev/CPU-s':>9} {'peak RSS MiB':>12} {'reader/replay CPU s':>19}")
    for events in (int(e) for e in args.events.split(",")):
        trace = os.path.join(args.dir, f"synthetic-{events}.bin")
        generate(args.gen, trace, events)
        size = os.path.getsize(trace) / 2**20
        for threads in (int(t) for t in args.threads.split(",") if t):
            runs = [run_once(args.cli, trace, threads) for _ in range(args.repeat)]
            wall, cpu, _, split = min(runs)
            rss = max(r[2] for r in runs)
            print(f"{events:>12,} {size:>9.0f} {threads:>7} {wall:>7.2f} {events / wall / 1e6:>9.1f} {cpu:>6.2f} "
                  f"{events / cpu / 1e6:>9.1f} {rss:>12.1f} {split or '-':>19}")
    if commands:
        events = int(args.events.split(",")[0])
        trace = os.path.join(args.dir, f"synthetic-{events}.bin")
        print(f"\n{events:,} events, each command as a user runs it (best of {args.repeat}):")
        print(f"{'command':<32} {'wall s':>7} {'CPU s':>6} {'peak RSS MiB':>12} {'output':>10}")
        for c in commands:
            out_path = os.path.join(args.dir, f"out-{c}")
            runs = [run_command(args.cli, trace, COMMANDS[c], out_path) for _ in range(args.repeat)]
            wall, cpu, _, size = min(runs)
            rss = max(r[2] for r in runs)
            print(f"{' '.join(COMMANDS[c]):<32} {wall:>7.2f} {cpu:>6.2f} {rss:>12.1f} "
                  f"{size / 2**20:>8.2f} MiB")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
