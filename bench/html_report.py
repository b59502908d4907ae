#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The HTML report of a long trace: its size and how fast headless Chromium
renders it (docs/html.md, "Size and speed"; issue 30's budget: 5 MB and
usable (first chart drawn, tables filled) in 1 s for 10 million events).
Prints figures; not a test.

  html_report.py --cli CUMEMTRACE --gen BENCH_GEN_TRACE --dir DIR
                 --node-modules DIR [--chromium PATH] [--events N]"""
import argparse
import json
import os
import subprocess
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--events", type=int, default=10_000_000)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    trace = os.path.join(a.dir, f"html-{a.events}.bin")
    if not os.path.exists(trace):
        subprocess.run([a.gen, trace, str(a.events)], check=True)
    html = os.path.join(a.dir, f"html-{a.events}.html")
    t0 = time.monotonic()
    subprocess.run([a.cli, "report", "--format", "html", "-o", html, trace], check=True)
    write_s = time.monotonic() - t0
    here = os.path.dirname(os.path.abspath(__file__))
    r = json.loads(subprocess.run(["node", os.path.join(here, "html_render.js"), a.node_modules, a.chromium, html],
                                  check=True, capture_output=True, text=True).stdout)
    size = os.path.getsize(html)
    print(f"{a.events} events: trace {os.path.getsize(trace)} B; HTML {size} B ({size / 1e6:.1f} MB, budget 5 MB), "
          f"written in {write_s:.2f} s; ready in headless Chromium in {r['median_ms']} ms (median of {r['loads_ms']}, "
          f"budget 1000 ms); console errors: {r['console_errors']}")


if __name__ == "__main__":
    main()
