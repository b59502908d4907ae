#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report's out-of-memory advice from the replay (issue 28), held
against real runs: for each workload of run_tensor_validation.sh's `matrix`
part that ran out of memory under the defaults (frag_oom, capacity_oom),
`cumemtrace report` of that trace says, per setting of the `whatif
--compare` set, whether it would have served the failing request and the
reserve it reaches (the case's `replayed`). Every such claim is checked
against the real run of the workload under that setting (json/NAME.json:
PyTorch's max_memory_reserved() and whether it raised): a setting said to
serve it with no failure must not have raised and must have reserved what
was said (to the byte where the run asked for the same tensors, as the
matrix requires, within 1% otherwise); a setting said to fail must have
raised; `what_to_try` must name the setting with the least reserve among
those that did not raise, and `cumemtrace check` must say the same verdict
and advice.

    oom_advice_check.py DATA [--cli PATH]

DATA is the directory run_tensor_validation.sh wrote (json/, traces-matrix/
or traces-matrix.tar.xz). Exit status 0 when every claim holds, 1 when one
does not, 2 when DATA holds no matrix.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whatif_matrix import TOLERANCE, run_name, tag_of, traces_dir  # noqa: E402

WORKLOADS = ["frag", "capacity"]


def report(cli, trace):
    p = subprocess.run([cli, "report", "--format", "json", "--no-symbols", trace], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{trace}: cumemtrace report exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "analyzer",
                                                  "cumemtrace"))
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="cmt-advice-")
    problems, checked = [], 0
    try:
        tdir = traces_dir(a.data, scratch)
        if not tdir:
            print(f"oom_advice_check: no traces-matrix/ or traces-matrix.tar.xz in {a.data}", file=sys.stderr)
            return 2
        real = {}
        for path in glob.glob(os.path.join(a.data, "json", "m_*.json")):
            with open(path) as f:
                real[run_name(path)] = json.load(f)
        for wl in WORKLOADS:
            trace = os.path.join(tdir, f"m_{wl}_default.bin")
            if not os.path.exists(trace):
                print(f"NOTE {wl}: no trace under the defaults")
                continue
            rep = report(a.cli, trace)
            cases = [c for c in (rep.get("oom") or {}).get("cases", []) if c.get("replayed")]
            if not cases:
                problems.append(f"{wl}: no failure with the replay's facts")
                continue
            case = cases[0]
            p = case["replayed"]
            print(f"{wl}: {case['verdict']} ({case['rule']}); what to try: {case['what_to_try']}")
            if not p["reproduced"]:
                problems.append(f"{wl}: the replay did not reproduce the recorded failure")
                continue
            fitting = []
            for s in p["settings"]:
                run = real.get(f"m_{wl}_{tag_of(s['setting'])}")
                if run is None:
                    print(f"  {s['label']}: no real run")
                    continue
                checked += 1
                raised, reserved = bool(run["oom"]), run["max_memory_reserved"]
                said = s["outcome"]
                line = f"  {s['label']}: replayed {said}, {s['peak_reserved_bytes']} B; real: " \
                       f"{'raised' if raised else 'no failure'}, {reserved} B"
                ok = True
                if said == "no-failure":
                    fitting.append((reserved, s["label"]))
                    bound = 0 if s["peak_reserved_bytes"] == reserved else TOLERANCE * reserved
                    ok = not raised and abs(s["peak_reserved_bytes"] - reserved) <= bound
                elif said in ("fails-here", "fails-before"):
                    ok = raised
                print(line + ("" if ok else "  <- MISS"))
                if not ok:
                    problems.append(f"{wl}: {s['label']}: the replay said {said}, the real run "
                                    f"{'raised' if raised else 'did not'} ({reserved} B)")
            if fitting:
                best = min(fitting)[1]
                if p["best"] != best:
                    problems.append(f"{wl}: the advice names {p['best']}, the real runs' least reserve was {best}")
            elif p["best"] is not None:
                problems.append(f"{wl}: the advice names {p['best']}, yet no real run of the set got through")
            c = subprocess.run([a.cli, "check", "--no-symbols", trace], capture_output=True, text=True)
            if case["what_to_try"] not in c.stdout or f"{case['verdict']} (rule {case['rule']})" not in c.stdout:
                problems.append(f"{wl}: check does not say the report's verdict and advice")
        print(f"{checked} claims held against real runs, {len(problems)} problems")
        for line in problems:
            print("PROBLEM " + line)
        return 1 if problems else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
