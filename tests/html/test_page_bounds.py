# SPDX-License-Identifier: MIT
"""The HTML page's model is bounded by what the page shows (docs/html.md,
"The model"): no usage views (the page draws none), and at most 1,000
phases of a trace that names more, the others summed up in list_omitted
with the figures `report --json` gives for them.

usage: test_page_bounds.py CUMEMTRACE BENCH_GEN_HOSTILE
"""
import json
import os
import re
import subprocess
import sys
import tempfile

failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += not ok


def page_model(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="cmt-model" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def main():
    cli, gen = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "phases.bin")
        subprocess.run([gen, "phases", trace, "3000"], check=True, stdout=subprocess.DEVNULL)
        full = json.loads(subprocess.run([cli, "report", "--json", "--no-symbols", trace], check=True,
                                         capture_output=True, text=True).stdout)
        page = os.path.join(d, "page.html")
        subprocess.run([cli, "report", "--no-symbols", "--format", "html", "-o", page, trace], check=True)
        report = page_model(page)["traces"][0]["report"]
        rows = full["phases"]["list"]
        check(len(rows) == 3000, f"report --json lists every phase: {len(rows)}")
        shown = report["phases"]["list"]
        check(len(shown) == 1000, f"the page holds 1,000 phases: {len(shown)}")
        check(shown == rows[:1000], "the same rows as report --json, in its order")
        om = report["phases"]["list_omitted"]
        rest = rows[1000:]
        check(om["phases"] == len(rest) == 2000, f"the others counted: {om['phases']}")
        for key, src in (("instances", "instances"), ("allocated_bytes", "allocated_bytes"),
                         ("left_live_bytes", "left_live_bytes"), ("failures", "failures")):
            want = sum(r[src] for r in rest)
            check(om[key] == want, f"list_omitted.{key} {om[key]} == {want}")
        check("list_omitted" not in full["phases"], "report --json has no list_omitted")
        check("allocation_calls" in full and "allocation_calls" not in report,
              "the usage views in report --json, not in the page")
        check(os.path.getsize(page) < 2_000_000, f"page of 3,000 phases under 2 MB: {os.path.getsize(page)} B")
    print(f"{'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
