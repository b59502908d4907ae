#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `cumemtrace top` costs (docs/performance.md, "The live view").

  bench/top_cost.py --build BUILD [--rate 1000000] [--seconds 10] [--rounds 3]
                    [--ranks 64] [--rank-rate 2000] [--callgrind] [--cli CUMEMTRACE]

1. One writer (bench/cpu/rate_writer on the simulated device, under the
   shim) at --rate events per second for --seconds, alone and followed by
   the live view (`cumemtrace top DIR` in a pseudo-terminal, refreshing
   every 0.5 s), rounds alternating. The view's CPU is its own getrusage
   (user + system, from wait4) over its whole life, divided by the writer's
   seconds (so its start and the seconds around the writer count against
   it); the writer's rate and its CPU seconds come from the writer itself.
2. The same writer unpaced (as fast as it can), alone and followed: its
   rate with and without the view.
3. --ranks writers at --rank-rate events per second each in one directory,
   followed by the view at 2 Hz (--interval 0.5): the view's CPU per
   refresh, and one `top --once` over the directory.
4. With --callgrind (valgrind installed): one writer at --rate for 1 s, then
   `top --once` over its trace under callgrind: the instructions of its
   polls (reading and replaying, cmt_top_poll inclusive) per event, and of
   the whole run. Instructions do not depend on the machine's load, as the
   CPU times above do.
Prints one JSON document."""
import argparse
import json
import os
import pty
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def writer_env(build, d):
    env = dict(os.environ)
    sim = os.path.join(build, "tests", "sim")
    env["LD_LIBRARY_PATH"] = sim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["LD_PRELOAD"] = os.path.join(build, "preload", "libcumemtrace.so")
    env["CUMEMTRACE_OUTPUT"] = os.path.join(d, "w.%p.bin")
    env["CUMEMTRACE_QUIET"] = "1"
    return env


class Viewer:
    """`cumemtrace top ARGS` in a pseudo-terminal, its screen drained."""

    def __init__(self, cli, args):
        self.master, slave = pty.openpty()
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="160", LINES="50")
        self.start = time.monotonic()
        self.pid = os.fork()
        if self.pid == 0:
            os.setsid()
            os.dup2(slave, 0)
            os.dup2(slave, 1)
            os.dup2(slave, 2)
            os.execve(cli, [cli, "top"] + args, env)
        os.close(slave)
        self.bytes = 0
        self.stop = False
        self.thread = threading.Thread(target=self.drain, daemon=True)
        self.thread.start()

    def drain(self):
        while not self.stop:
            r, _, _ = select.select([self.master], [], [], 0.2)
            if r:
                try:
                    self.bytes += len(os.read(self.master, 65536))
                except OSError:
                    return

    def quit(self):
        os.write(self.master, b"q")
        _, status, ru = os.wait4(self.pid, 0)
        wall = time.monotonic() - self.start
        self.stop = True
        self.thread.join()
        os.close(self.master)
        return {"status": status, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime}


def run_writer(build, d, rate, seconds, sites=16):
    out = subprocess.run([os.path.join(build, "bench", "cpu", "rate_writer"), str(rate), str(seconds), str(sites)],
                         env=writer_env(build, d), stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout)


def one_writer(build, cli, rate, seconds, viewed):
    d = tempfile.mkdtemp(prefix="cmt-topbench-")
    try:
        v = Viewer(cli, ["--interval", "0.5", d]) if viewed else None
        if v:
            time.sleep(1.0)  # the view is up and has scanned the directory
        w = run_writer(build, d, rate, seconds)
        if v:
            time.sleep(1.5)  # the view reads the last of it
            r = v.quit()
            w["viewer_cpu_s"] = r["cpu_s"]
            w["viewer_wall_s"] = r["wall_s"]
            # all of the view's CPU (its start, the second before the writer
            # and the 1.5 s after it included) over the writer's seconds: what
            # following the writer costs, counted high
            w["viewer_core_percent"] = 100.0 * r["cpu_s"] / w["wall_s"]
            w["viewer_ns_per_event"] = 1e9 * r["cpu_s"] / w["events"]
        return w
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


def ranks(build, cli, n, rate, seconds):
    d = tempfile.mkdtemp(prefix="cmt-topranks-")
    try:
        v = Viewer(cli, ["--interval", "0.5", d])
        procs = []
        env = writer_env(build, d)
        for i in range(n):
            e = dict(env, RANK=str(i))
            procs.append(subprocess.Popen([os.path.join(build, "bench", "cpu", "rate_writer"), str(rate),
                                           str(seconds), "16"], env=e, stdout=subprocess.PIPE, text=True))
        events = 0
        for p in procs:
            out, _ = p.communicate()
            events += json.loads(out)["events"]
        time.sleep(1.5)
        r = v.quit()
        t0 = time.monotonic()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        q = subprocess.run([cli, "top", "--once", "--format", "json", d], stdout=subprocess.PIPE, text=True)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        once_wall = time.monotonic() - t0
        doc = json.loads(q.stdout)
        refreshes = r["wall_s"] / 0.5
        return {"ranks": n, "events": events, "traces_seen": len(doc["processes"]),
                "viewer_cpu_s": r["cpu_s"], "viewer_wall_s": r["wall_s"],
                "viewer_core_percent": 100.0 * r["cpu_s"] / r["wall_s"],
                "viewer_cpu_ms_per_refresh": 1000.0 * r["cpu_s"] / refreshes,
                "once_wall_s": once_wall,
                "once_cpu_s": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)}
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


def callgrind(build, cli, rate):
    d = tempfile.mkdtemp(prefix="cmt-topcg-")
    try:
        w = run_writer(build, d, rate, 1)
        trace = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".bin")][0]
        out = os.path.join(d, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, cli, "top", "--once",
                        "--format", "json", trace], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], stdout=subprocess.PIPE, text=True,
                             check=True).stdout

        def count(pattern):
            for line in ann.splitlines():
                if pattern in line:
                    return int(line.split()[0].replace(",", ""))
            return None

        total = count("PROGRAM TOTALS")
        polls = count(":cmt_top_poll ")
        return {"events": w["events"], "instructions": total, "poll_instructions": polls,
                "poll_instructions_per_event": polls / w["events"] if polls else None,
                "instructions_per_event": total / w["events"] if total else None}
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=int, default=1000000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--rank-rate", type=int, default=2000)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--cli", help="the cumemtrace to measure (default: BUILD/analyzer/cumemtrace), to compare two")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cli = os.path.abspath(a.cli) if a.cli else os.path.join(build, "analyzer", "cumemtrace")
    res = {"rate": a.rate, "seconds": a.seconds, "paced": [], "unpaced": []}
    for _ in range(a.rounds):
        res["paced"].append({"alone": one_writer(build, cli, a.rate, a.seconds, False),
                             "viewed": one_writer(build, cli, a.rate, a.seconds, True)})
    for _ in range(a.rounds):
        res["unpaced"].append({"alone": one_writer(build, cli, 0, a.seconds / 2, False),
                               "viewed": one_writer(build, cli, 0, a.seconds / 2, True)})
    pv = [r["viewed"] for r in res["paced"]]
    res["summary"] = {} if not a.rounds else {
        "viewer_core_percent_median": statistics.median(r["viewer_core_percent"] for r in pv),
        "viewer_core_percent_min": min(r["viewer_core_percent"] for r in pv),
        "viewer_ns_per_event_median": statistics.median(r["viewer_ns_per_event"] for r in pv),
        "writer_cpu_s_alone_median": statistics.median(r["alone"]["cpu_s"] for r in res["paced"]),
        "writer_cpu_s_viewed_median": statistics.median(r["viewed"]["cpu_s"] for r in res["paced"]),
        "writer_rate_alone_median": statistics.median(r["alone"]["events_per_s"] for r in res["paced"]),
        "writer_rate_viewed_median": statistics.median(r["viewed"]["events_per_s"] for r in res["paced"]),
        "unpaced_rate_alone_median": statistics.median(r["alone"]["events_per_s"] for r in res["unpaced"]),
        "unpaced_rate_viewed_median": statistics.median(r["viewed"]["events_per_s"] for r in res["unpaced"]),
    }
    if a.ranks:
        res["ranks"] = ranks(build, cli, a.ranks, a.rank_rate, a.seconds)
    if a.callgrind:
        res["callgrind"] = callgrind(build, cli, a.rate)
    with open("/proc/loadavg") as f:
        res["loadavg_after"] = f.read().split()[:3]
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
