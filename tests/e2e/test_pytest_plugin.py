# SPDX-License-Identifier: MIT
"""End-to-end: the pytest plugin (python/cumemtrace/pytest_plugin.py) on
tests/e2e/pytest_suite/ on the simulated device: each test's outcome, the
message, figures and line of each GPU leak or peak over its limit, a
module-scoped fixture charged to its own setup, warm-ups, a test that fails
on its own keeping its outcome, JUnit properties, the restart under the
profiler and --cumemtrace-report DIR. Needs pytest in an interpreter
(python3-pytest); skipped (77) without it."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

MiB = cmtest.MiB
SUITE_DIR = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "pytest_suite")
SUITE = os.path.join(SUITE_DIR, "test_gpu_suite.py")
PY_SOURCE = os.path.join(os.environ["CMT_SOURCE_ROOT"], "python")


def line_of(path, marker):
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if f"# @{marker}" in text:
                return n
    raise cmtest.Failure(f"no marker {marker} in {path}")


def python_with_pytest():
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", "import pytest"], capture_output=True).returncode == 0:
            return py
    print("skipped: no interpreter here has pytest (apt-get install python3-pytest)")
    sys.exit(77)


def plugin_env(extra=None, preload=True):
    env = cmtest.sim_env({"PYTHONPATH": PY_SOURCE, "CUMEMTRACE_CLI": cmtest.CLI,
                          "CUMEMTRACE_ANALYSIS_LIB": os.environ["CMT_ANALYSIS_LIB"],
                          "CUMEMTRACE_SHIM": cmtest.SHIM, "PYTHONDONTWRITEBYTECODE": "1",
                          "PYTEST_ADDOPTS": None, "CUMEMTRACE_QUIET": "1"}, preload=preload, foreign=True)
    for k, v in (extra or {}).items():
        env[k] = v
    return env


def run_pytest(*args, preload=True, env=None, cwd=None):
    py = python_with_pytest()
    tmp = tempfile.mkdtemp(prefix="cmt-pytest-")
    extra = {"CUMEMTRACE_OUTPUT": os.path.join(tmp, "cumemtrace.%p.bin")} if preload else {}
    extra.update(env or {})
    argv = [py, "-m", "pytest", "-p", "cumemtrace.pytest_plugin", "-p", "no:cacheprovider", "-q",
            "--rootdir", SUITE_DIR, *args]
    proc = subprocess.run(argv, env=plugin_env(extra, preload), capture_output=True, text=True, timeout=600,
                          cwd=cwd or SUITE_DIR)
    return proc, tmp


def junit_cases(path):
    cases = {}
    for tc in ET.parse(path).iter("testcase"):
        failure = tc.find("failure")
        cases[tc.get("name")] = {
            "properties": {p.get("name"): p.get("value") for p in tc.iter("property")},
            "failure": failure.get("message") if failure is not None else None,
            "skipped": tc.find("skipped") is not None,
        }
    return cases


def leak_line(mib, count, marker):
    plural = "s" if count != 1 else ""
    return (f"GPU leak: {mib:.1f} MiB ({mib * MiB} B) in {count} allocation{plural} (cuMemAlloc, device memory, "
            f"device 0) still "
            f"alive after the test, allocated at gpu_sim.py:{line_of(os.path.join(SUITE_DIR, 'gpu_sim.py'), 'alloc')}")


def test_outcomes():
    tmp = tempfile.mkdtemp(prefix="cmt-junit-")
    junit = os.path.join(tmp, "junit.xml")
    proc, traces = run_pytest("--cumemtrace", f"--junitxml={junit}", "--cumemtrace-top=0", "test_gpu_suite.py")
    out = proc.stdout
    eq(proc.returncode, 1, f"pytest's status ({out[-3000:]}{proc.stderr[-2000:]})")
    cases = junit_cases(junit)
    failing = {n for n, c in cases.items() if c["failure"]}
    eq(failing, {"test_leaks_into_a_module_list", "test_leaks_twice_from_one_line", "test_over_its_limit",
                 "test_cache_without_warmup", "test_fails_on_its_own"}, "tests that failed")
    # A leak: its bytes, allocations, the line that allocated it and the
    # test's line below it.
    eq(cases["test_leaks_into_a_module_list"]["failure"], leak_line(32, 1, "leak"), "the leak's message")
    check(f"#1 test_leaks_into_a_module_list at test_gpu_suite.py:{line_of(SUITE, 'leak')}" in out,
          f"the leaking test's line in its stack: {out[:4000]}")
    eq(cases["test_leaks_twice_from_one_line"]["failure"], leak_line(6, 2, "leak_twice"), "two allocations, one site")
    check(f"#1 test_leaks_twice_from_one_line at test_gpu_suite.py:{line_of(SUITE, 'leak_twice')}" in out,
          "the line of the loop's allocation")
    eq(cases["test_over_its_limit"]["failure"],
       f"GPU memory: the test peaked at 24.0 MiB ({24 * MiB} B) on device 0, over its limit of 20.0 MiB "
       f"({20 * MiB} B)", "limit_gpu_memory")
    # The peak equal to the limit passes.
    eq(cases["test_at_its_limit"]["properties"]["cumemtrace_peak_bytes_device0"], str(24 * MiB), "peak at the limit")
    # A test that fails on its own keeps its failure (its leak is noted).
    check("the test's own failure" in cases["test_fails_on_its_own"]["failure"],
          f"own failure kept: {cases['test_fails_on_its_own']['failure']}")
    eq(cases["test_fails_on_its_own"]["properties"]["cumemtrace_leaked_bytes"], str(7 * MiB), "its leak, noted")
    check(cases["test_xfails"]["skipped"], "xfail keeps its outcome")
    # The module fixture's 64 MiB and the function fixture's 4 MiB are
    # charged to them: the test peaked at its own 16 MiB and left nothing.
    clean = cases["test_clean_uses_the_module_fixture"]["properties"]
    eq((clean["cumemtrace_peak_bytes_device0"], clean["cumemtrace_leaked_bytes"]), (str(16 * MiB), "0"),
       "the test using the module fixture")
    check(re.search(r"64\.0 MiB\s+model \(module\)", out), f"the module fixture in the summary: {out[-2500:]}")
    # Warm-ups: the cache the first call filled is not a leak; without
    # warm-ups the same pattern is, unless unchecked.
    warm = cases["test_cache_filled_by_the_warmup"]["properties"]
    eq((warm["cumemtrace_peak_bytes_device0"], warm["cumemtrace_leaked_bytes"]), (str(1 * MiB), "0"), "warm-up")
    eq(cases["test_cache_without_warmup"]["failure"], leak_line(5, 1, "cache_other"), "a cache without warm-up")
    eq(cases["test_leak_not_checked"]["failure"], None, "no_gpu_leak_check")
    eq(cases["test_leak_not_checked"]["properties"]["cumemtrace_leaked_bytes"], str(1 * MiB), "unchecked leak noted")
    check("FAILED test_gpu_suite.py::test_leaks_into_a_module_list - GPU leak: 32.0 MiB" in out,
          "the short summary")
    check("10 tests judged, 4 failed on GPU memory" in out, f"the summary's count: {out[-1500:]}")
    # --cumemtrace-top 0: every test that used GPU memory, by peak (as
    # --top 0 in the commands), not none.
    peaked = sum(1 for c in cases.values() if int(c["properties"].get("cumemtrace_peak_bytes_device0", "0")))
    listed = re.search(r"\nlargest peaks:\n((?:  .*\n)+)", out)
    check(listed, f"the peaks listed: {out[-2500:]}")
    eq(len(listed.group(1).splitlines()), peaked, f"--cumemtrace-top 0 lists all {peaked}: {listed.group(1)}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(traces, ignore_errors=True)


def test_restart_under_the_profiler():
    """Without the profiler loaded, `python -m pytest --cumemtrace` starts
    again under `cumemtrace run` and judges as before; the trace it asked
    for goes with the session."""
    tmp = tempfile.mkdtemp(prefix="cmt-restart-")
    proc, _ = run_pytest("--cumemtrace", "test_gpu_suite.py::test_leaks_into_a_module_list", preload=False,
                         env={"TMPDIR": tmp})
    eq(proc.returncode, 1, f"status ({proc.stdout[-2000:]}{proc.stderr[-2000:]})")
    check(leak_line(32, 1, "leak") in proc.stdout, f"judged after the restart: {proc.stdout[-2000:]}")
    eq(os.listdir(tmp), [], "what the restart left in TMPDIR")
    shutil.rmtree(tmp, ignore_errors=True)


def test_report_dir():
    """--cumemtrace-report DIR: the trace and one JSON file per test that
    failed on GPU memory, with the command that shows its end."""
    out = tempfile.mkdtemp(prefix="cmt-report-dir-")
    proc, traces = run_pytest("--cumemtrace", f"--cumemtrace-report={out}", "--cumemtrace-top=1",
                              "test_gpu_suite.py::test_leaks_into_a_module_list",
                              "test_gpu_suite.py::test_clean_uses_the_module_fixture")
    eq(proc.returncode, 1, f"status: {proc.stdout[-2000:]}")
    check(re.search(r"\nlargest peaks:\n +32\.0 MiB  test_gpu_suite\.py::test_leaks_into_a_module_list\nfixtures",
                    proc.stdout), f"--cumemtrace-top 1: the one largest peak: {proc.stdout[-2000:]}")
    files = sorted(os.listdir(out))
    eq(len(files), 2, f"files in the report dir: {files}")
    trace = [f for f in files if f.endswith(".bin")]
    eq(len(trace), 1, f"the trace kept: {files}")
    name = "test_gpu_suite.py_test_leaks_into_a_module_list.json"
    eq(sorted(files), sorted([trace[0], name]), "one JSON for the one failing test")
    with open(os.path.join(out, name)) as f:
        doc = json.load(f)
    eq(doc["window"]["left"][0]["bytes"], 32 * MiB, "its leak in the JSON")
    # The command it gives shows the leak live at the test's end.
    argv = doc["see"].split()
    eq(argv[:3], ["cumemtrace", "report", "--at"], "the command")
    rep = cmtest.report(argv[4], "--at", argv[3])
    live = sum(s["bytes"] for s in rep["devices"][0]["top_sites_at_peak"])
    check(live >= 32 * MiB, f"live at the test's end per the report: {live}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(traces, ignore_errors=True)


def test_flag_off():
    """The plugin loaded without --cumemtrace judges nothing (its markers
    are known: no warning about them)."""
    proc, traces = run_pytest("-W", "error::pytest.PytestUnknownMarkWarning", "test_gpu_suite.py::test_over_its_limit",
                              "test_gpu_suite.py::test_leaks_into_a_module_list", preload=False)
    eq(proc.returncode, 0, f"status: {proc.stdout[-2000:]}{proc.stderr[-1000:]}")
    check("2 passed" in proc.stdout, proc.stdout[-500:])
    shutil.rmtree(traces, ignore_errors=True)


def test_not_started_from_the_command_line():
    """pytest.main() inside another program is not restarted: it says how
    to run under the profiler."""
    py = python_with_pytest()
    code = ("import sys, pytest; sys.exit(pytest.main(['-p', 'cumemtrace.pytest_plugin', '--cumemtrace', "
            f"{SUITE!r}]))")
    proc = subprocess.run([py, "-c", code], env=plugin_env(preload=False), capture_output=True, text=True,
                          timeout=300, cwd=SUITE_DIR)
    eq(proc.returncode, 4, f"status (usage error): {proc.stdout[-1000:]}{proc.stderr[-1000:]}")
    check("cumemtrace: the profiler is not loaded in this process; run `cumemtrace run -- python -m pytest "
          "--cumemtrace ...`" in proc.stderr + proc.stdout, f"the message: {proc.stderr[-1000:]}")


if __name__ == "__main__":
    if cmtest.VALGRIND:
        print("skipped under valgrind: pytest under memcheck takes many minutes; the follower's C code is tested "
              "under valgrind by unit/trace_follow, the follower under ASan by this test")
        sys.exit(77)
    cmtest.main(sys.modules[__name__])
