#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks one oom_verdicts.cu scenario's report (run_frag_validation.sh).

  frag_check.py SCENARIO STDOUT_FILE REPORT_JSON

Prints PASS / FAIL / NOTE lines and exits 1 on a FAIL. What each scenario
expects is in EXPECT below; where a GPU may legitimately not fail the way the
simulated device does (fragmentation, pools), a success is a NOTE with what
the GPU did, not a FAIL."""
import json
import sys

GiB = 1 << 30

# scenario -> (key in the program's output that must be a failure (2), verdict, rule)
EXPECT = {
    "capacity_large": ("ask", "capacity", "R4"),
    "capacity_live": ("ask", "capacity", "R5"),
    "fragmentation": (None, "fragmentation", None),
    "caching": ("ask", "caching", "R6"),
    "other": ("ask", "other-consumers", "R7"),
    "retry": (None, "caching", "R1"),
}
# A GPU may serve these where the simulated device does not.
MAY_SUCCEED = {"fragmentation", "caching"}


def program_output(path, scenario):
    with open(path) as f:
        for line in f:
            if line.startswith(scenario + ":"):
                return dict(kv.split("=", 1) for kv in line.split()[1:])
    return None


def gib(v):
    return f"{v / GiB:.2f} GiB"


def describe(case):
    f = case["figures"]
    return (f"{case['api']} of {gib(case['size'])}: verdict {case['verdict']} ({case['rule']}); "
            f"free {gib(f['free'])} of {gib(f['total'])}, live {gib(f['live'])}, pools unused "
            f"{gib(f['pool_unused'])}, unexplained {gib(f['unexplained'])}, others {gib(f['other_consumers'])}, "
            f"span holes {case['span']['holes']} (largest {gib(case['span']['largest_hole'])})")


def main():
    scenario, stdout_path, report_path = sys.argv[1:4]
    key, verdict, rule = EXPECT[scenario]
    out = program_output(stdout_path, scenario)
    if out is None:
        print(f"FAIL  {scenario}: the program printed no '{scenario}:' line (see {stdout_path})")
        return 1
    print(f"  program: {' '.join(f'{k}={v}' for k, v in out.items())}")
    with open(report_path) as f:
        rep = json.load(f)
    cases = rep["oom"]["cases"]
    for c in cases:
        print(f"  case: {describe(c)}")
    failed_calls = [k for k, v in out.items() if v == "2"]
    if not cases:
        if scenario in MAY_SUCCEED and not failed_calls:
            print(f"NOTE  {scenario}: no allocation failed on this GPU (the simulated device fails here): "
                  f"{' '.join(f'{k}={v}' for k, v in out.items())}")
            return 0
        print(f"FAIL  {scenario}: the report examined no failed allocation")
        return 1
    if key and out.get(key) != "2":
        print(f"NOTE  {scenario}: '{key}' did not fail with cudaErrorMemoryAllocation (2): {out.get(key)}")
    # The scenario's own failure: the first case with the expected verdict, or the first case.
    match = [c for c in cases if c["verdict"] == verdict and (rule is None or c["rule"] == rule)]
    if match:
        print(f"PASS  {scenario}: {describe(match[0])}")
        print(f"      explanation: {match[0]['explanation']}")
        print(f"      what to try: {match[0]['what_to_try']}")
        return 0
    print(f"FAIL  {scenario}: expected verdict {verdict} ({rule or 'any rule'}), got "
          f"{[(c['verdict'], c['rule']) for c in cases]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
