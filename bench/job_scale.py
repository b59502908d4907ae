#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A job of 1,024 ranks simulated on one machine (docs/performance.md, "A job
at scale"): the job view from summaries, its time and peak memory.

    job_scale.py --cli build/analyzer/cumemtrace --gen build/bench/bench_gen_trace
                 --dir build/bench-data/job [--ranks 1024] [--per-host 8] [--events 5000]
                 [--from-traces]

1. bench_gen_trace writes rank R's trace of one Slurm job (JOB record, host
   node%04d, CUDA_VISIBLE_DEVICES) into the directory of its host, as each
   node keeps its own traces (generated once, kept in --dir).
2. A launcher stand-in plays `srun --ntasks-per-node=1 cumemtrace summarize
   -o SHARED node/*.bin`: one `summarize` per host, run one host at a time
   here (the machine has few cores; each summarize uses them all), its
   summaries gathered into one directory as a shared file system would.
3. `cumemtrace report --json SHARED` (and text, and HTML): wall time and peak
   memory (the process's maximum resident set, from wait4), median of three.
With --from-traces also the job view from the 1,024 traces on this one
machine, for comparison. Figures, not a test: nothing is asserted."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def run_measured(argv, out=subprocess.DEVNULL):
    """(wall seconds, peak RSS in MiB, exit status) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        sys.exit(f"job_scale: {' '.join(argv[:3])}... exited {rc}: {err[-2000:]}")
    return wall, ru.ru_maxrss / 1024.0, rc


def generate(args, hosts):
    marker = os.path.join(args.dir, f"traces-{args.ranks}-{args.per_host}-{args.events}")
    if os.path.exists(marker):
        return
    shutil.rmtree(os.path.join(args.dir, "nodes"), ignore_errors=True)
    t0 = time.perf_counter()
    procs = []
    for r in range(args.ranks):
        d = os.path.join(args.dir, "nodes", f"node{r // args.per_host:04d}")
        os.makedirs(d, exist_ok=True)
        procs.append(subprocess.Popen([args.gen, os.path.join(d, f"trace.{r}.bin"), str(args.events), "--stacks",
                                       "200", "--threads", "2", "--rank", str(r), "--world", str(args.ranks),
                                       "--ranks-per-host", str(args.per_host)], stdout=subprocess.DEVNULL))
        if len(procs) >= 2:
            if procs.pop(0).wait() != 0:
                sys.exit("job_scale: bench_gen_trace failed")
    for p in procs:
        if p.wait() != 0:
            sys.exit("job_scale: bench_gen_trace failed")
    open(marker, "w").close()
    print(f"generated {args.ranks} traces of {args.events} events in {hosts} host directories "
          f"({time.perf_counter() - t0:.1f} s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--from-traces", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    hosts = (args.ranks + args.per_host - 1) // args.per_host
    generate(args, hosts)
    nodes = os.path.join(args.dir, "nodes")
    shared = os.path.join(args.dir, "summaries")
    shutil.rmtree(shared, ignore_errors=True)
    node_dirs = sorted(os.listdir(nodes))
    trace_bytes = sum(os.path.getsize(os.path.join(nodes, n, f)) for n in node_dirs
                      for f in os.listdir(os.path.join(nodes, n)))

    # the launcher stand-in: one summarize per host
    t0 = time.perf_counter()
    per_host, rss = [], []
    for n in node_dirs:
        d = os.path.join(nodes, n)
        traces = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".bin"))
        wall, mib, _ = run_measured([args.cli, "summarize", "-o", shared, *traces])
        per_host.append(wall)
        rss.append(mib)
    total = time.perf_counter() - t0
    sums = [os.path.join(shared, f) for f in os.listdir(shared)]
    sum_bytes = sum(os.path.getsize(f) for f in sums)
    print(f"{args.ranks} ranks on {hosts} hosts, {args.events} events each ({trace_bytes / 2**20:.0f} MiB of traces)")
    print(f"summarize, per host ({args.per_host} traces, {os.cpu_count()} cores): median "
          f"{statistics.median(per_host) * 1000:.0f} ms, peak memory {max(rss):.1f} MiB; all hosts one after another "
          f"{total:.1f} s")
    print(f"summaries: {len(sums)} files, {sum_bytes / 1024:.0f} KiB ({sum_bytes / len(sums):.0f} B each)")

    for fmt in ("json", "text", "html"):
        runs = []
        for _ in range(3):
            with open(os.devnull, "w") as null:
                runs.append(run_measured([args.cli, "report", "--format", fmt, shared], out=null))
        wall = statistics.median(r[0] for r in runs)
        mib = max(r[1] for r in runs)
        print(f"report --format {fmt} of {len(sums)} summaries: {wall:.2f} s, peak memory {mib:.1f} MiB "
              f"(targets: 5 s, 100 MiB)")
    if args.from_traces:
        every = sorted(os.path.join(nodes, n, f) for n in node_dirs for f in os.listdir(os.path.join(nodes, n)))
        wall, mib, _ = run_measured([args.cli, "report", "--json", *every])
        print(f"report --json of the {len(every)} traces on one machine: {wall:.1f} s, peak memory {mib:.1f} MiB")


if __name__ == "__main__":
    main()
