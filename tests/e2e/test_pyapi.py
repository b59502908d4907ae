# SPDX-License-Identifier: MIT
"""End-to-end: the Python package's API (python/cumemtrace, docs/python.md)
on the simulated device: phases, steps and marks in the report,
cumemtrace.load() equal to `cumemtrace report --format json` key by key
(the analyzer builds both), the answers without the profiler, `python -m
cumemtrace`, the follower reading a trace as it grows, to_pandas()."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

MiB = cmtest.MiB
PY_SOURCE = os.path.join(os.environ["CMT_SOURCE_ROOT"], "python")
PROGRAM = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "programs", "py_api.py")
SUITE_DIR = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "pytest_suite")
PKG_ENV = {"PYTHONPATH": PY_SOURCE + os.pathsep + SUITE_DIR, "CUMEMTRACE_CLI": cmtest.CLI,
           "CUMEMTRACE_ANALYSIS_LIB": os.environ["CMT_ANALYSIS_LIB"], "PYTHONDONTWRITEBYTECODE": "1"}


def in_python(code, preload=False, env=None):
    """Runs code in a fresh interpreter with the package importable; its
    stdout parsed as JSON."""
    extra = dict(PKG_ENV)
    extra.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], env=cmtest.sim_env(extra, preload=preload, foreign=True),
                       capture_output=True, text=True, timeout=300)
    eq(p.returncode, 0, f"python -c: {p.stderr}")
    return json.loads(p.stdout)


def api_trace():
    r = cmtest.run([sys.executable, PROGRAM], env=dict(PKG_ENV, **{"ASAN_OPTIONS": cmtest.sim_env(foreign=True).get("ASAN_OPTIONS")}))
    eq(r.proc.returncode, 0, f"py_api.py: {r.proc.stderr}")
    return r, json.loads(r.proc.stdout)


def first_difference(a, b, path="report"):
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} against {type(b).__name__}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} against {b!r}"


def load_in_python(trace, options):
    return in_python("import cumemtrace, json, sys; "
                     f"r = cumemtrace.load({trace!r}, **{options!r}); "
                     "json.dump(r.to_dict(), sys.stdout)")


def test_load_equals_report_json():
    r, _ = api_trace()
    loaded = load_in_python(r.trace, {})
    command = cmtest.report(r.trace)
    d = first_difference(loaded, command)
    check(d is None, f"load() and report --json differ: {d}")
    eq(loaded["leaks"]["bytes"], 8 * MiB, "the leak, as both say")
    cmtest.cleanup(r)


def test_load_with_options():
    r, _ = api_trace()
    loaded = load_in_python(r.trace, {"top": 1, "full_stacks": True, "max_frames": 0})
    command = cmtest.report(r.trace, "--top", "1", "--full-stacks", "--max-frames", "0")
    d = first_difference(loaded, command)
    check(d is None, f"load(top=1, full_stacks=True) and report --top 1 --full-stacks differ: {d}")
    eq(len(loaded["devices"][0]["top_sites_at_peak"]), 1, "--top 1 applied")
    cmtest.cleanup(r)


def test_load_errors():
    tmp = tempfile.mkdtemp(prefix="cmt-pyapi-")
    bogus = os.path.join(tmp, "not-a-trace.bin")
    with open(bogus, "w") as f:
        f.write("hello")
    got = in_python("import cumemtrace, json, sys\n"
                    "out = {}\n"
                    f"try:\n    cumemtrace.load({bogus!r})\nexcept cumemtrace.CumemtraceError as e:\n"
                    "    out['error'] = str(e)\n"
                    f"try:\n    cumemtrace.load({bogus!r}, top='many')\nexcept cumemtrace.CumemtraceError as e:\n"
                    "    out['option'] = str(e)\n"
                    "json.dump(out, sys.stdout)")
    eq(got["error"], f"cumemtrace: {bogus}: not a cumemtrace trace (no CUMEMTRC magic at the start): give a file "
                     "the profiler wrote", "the analyzer's message for a file that is no trace")
    check(got["option"].startswith("cumemtrace: report: --top needs a count, got 'many'"), got["option"])


def phase(rep, name):
    found = [p for p in rep["phases"]["list"] if p["name"] == name]
    eq(len(found), 1, f"phase {name} in {[p['name'] for p in rep['phases']['list']]}")
    return found[0]


def test_phases_and_steps_in_report():
    r, _ = api_trace()
    rep = cmtest.report(r.trace)
    load = phase(rep, "load")
    eq((load["allocated_bytes"], load["left_live_bytes"]), (8 * MiB, 8 * MiB), "load: 8 MiB, kept")
    step = phase(rep, "train_step")
    eq((step["instances"], step["allocated_bytes"], step["left_live_bytes"], step["peak_bytes"]),
       (3, 6 * MiB, 0, 10 * MiB), "the decorated function: 3 calls of 2 MiB, freed (its peak: the device's, over the kept 8 MiB)")
    ev = phase(rep, "évaluation")
    eq(ev["allocated_bytes"], 1 * MiB, "a phase named in UTF-8")
    eq([(s["number"], s["source"]) for s in rep["phases"]["steps"]],
       [(1, "cumemtrace_step"), (2, "cumemtrace_step"), (3, "cumemtrace_step")], "steps 1 to 3")
    eq(rep["phases"]["marks"], 1, "the one mark")
    cmtest.cleanup(r)


def test_without_the_profiler():
    got = in_python("import cumemtrace, json, sys\n"
                    "with cumemtrace.phase('x'):\n    cumemtrace.step(); cumemtrace.step(7); cumemtrace.mark('m')\n"
                    "@cumemtrace.phase('f')\ndef f():\n    return 5\n"
                    "json.dump({'active': cumemtrace.is_active(), 'path': cumemtrace.trace_path(), 'f': f()}, "
                    "sys.stdout)")
    eq(got, {"active": False, "path": None, "f": 5}, "the API without the profiler")


def test_trace_path():
    r, answers = api_trace()
    eq(answers["active_before"], True, "is_active() under the profiler")
    eq(answers["path_before"], None, "no trace before the first CUDA call or phase")
    eq(os.path.abspath(answers["path_after"]), os.path.abspath(r.trace), "trace_path() once written")
    cmtest.cleanup(r)


def test_python_m():
    p = subprocess.run([sys.executable, "-m", "cumemtrace", "version"], capture_output=True, text=True,
                       env=cmtest.sim_env(PKG_ENV, preload=False, foreign=True), timeout=60)
    c = cmtest.cli("version")
    eq((p.returncode, p.stdout), (0, c.stdout), "python -m cumemtrace version is the command's")
    p = subprocess.run([sys.executable, "-m", "cumemtrace", "nonsense"], capture_output=True, text=True,
                       env=cmtest.sim_env(PKG_ENV, preload=False, foreign=True), timeout=60)
    eq((p.returncode, p.stderr), (2, "cumemtrace: unknown command 'nonsense'\ntry `cumemtrace help`\n"),
       "its status and message are the command's")


FOLLOW_PROGRAM = r'''
import json, sys
import cumemtrace
from cumemtrace._follow import Follower
from gpu_sim import Buffer, MiB
out = []
kept = []
cumemtrace._push(b"w:first")
kept.append(Buffer(3 * MiB))
tmp = Buffer(5 * MiB)
del tmp
cumemtrace._pop()
f = Follower(cumemtrace.trace_path(), "w:")
out.append(f.poll())
cumemtrace._push(b"w:outer")
cumemtrace._push(b"not a window")
cumemtrace._push(b"w:inner")
kept.append(Buffer(1 * MiB))
cumemtrace._pop()
out.append(f.poll())
kept.append(Buffer(2 * MiB))
cumemtrace._pop()
b = Buffer(4 * MiB)
cumemtrace._pop()
out.append(f.poll())
del kept[0]
out.append(f.poll())
out.append(f.held(1))
json.dump(out, sys.stdout)
'''


def window_summary(w):
    return (w["name"], [(d["device"], d["peak_bytes"], d["left_bytes"], d["left_count"]) for d in w["devices"]],
            [(g["bytes"], g["count"]) for g in w["left"]])


def test_follower_polls():
    """Each poll reads what was committed since the last one: windows come
    once, in the order they closed, nested windows charge their innermost,
    and a window's holdings are asked for later."""
    with tempfile.TemporaryDirectory(prefix="cmt-follow-") as tmp:
        got = in_python(FOLLOW_PROGRAM, preload=True,
                        env={"CUMEMTRACE_OUTPUT": os.path.join(tmp, "t.%p.bin"), "CUMEMTRACE_QUIET": "1"})
    eq([window_summary(w) for w in got[0]["windows"]], [("w:first", [(0, 8 * MiB, 3 * MiB, 1)], [(3 * MiB, 1)])],
       "first poll")
    eq([window_summary(w) for w in got[1]["windows"]], [("w:inner", [(0, 1 * MiB, 1 * MiB, 1)], [(1 * MiB, 1)])],
       "second poll: the inner window only")
    eq([window_summary(w) for w in got[2]["windows"]],
       [("w:outer", [(0, 6 * MiB, 6 * MiB, 2)], [(4 * MiB, 1), (2 * MiB, 1)])],
       "third poll: the outer window, charged its own allocations only")
    eq(got[3]["windows"], [], "nothing closed since")
    eq([(g["bytes"], g["count"]) for g in got[4]["held"]], [], "window 1's 3 MiB, released since")
    eq(got[2]["open_windows"], 0, "no window open")
    site = got[0]["windows"][0]["left"][0]["site"]
    eq((site["function"], site["file"].endswith("gpu_sim.py")), ("Buffer.__init__", True), "the site's frame")


def test_to_pandas():
    have = subprocess.run([sys.executable, "-c", "import pandas"], capture_output=True).returncode == 0
    if not have:
        print("skipped: pandas is not installed here; to_pandas() needs it (its error without it is tested)")
        got = in_python("import cumemtrace, sys, json\n"
                        "r = cumemtrace.Report({})\n"
                        "try:\n    r.to_pandas()\nexcept ImportError as e:\n    json.dump(str(e), sys.stdout)\n")
        eq(got, "cumemtrace: to_pandas() needs pandas (pip install pandas)", "the message without pandas")
        sys.exit(77)
    r, _ = api_trace()
    got = in_python("import cumemtrace, json, sys\n"
                    f"t = cumemtrace.load({r.trace!r}).to_pandas()\n"
                    "json.dump({k: len(v) for k, v in t.items()} | {'leak': int(t['leaks']['bytes'].sum())}, "
                    "sys.stdout)")
    eq(got["leak"], 8 * MiB, "the leaks table")
    cmtest.cleanup(r)


if __name__ == "__main__":
    if cmtest.VALGRIND:
        print("skipped under valgrind: the interpreter under memcheck takes minutes; the reader's follow mode is "
              "tested under valgrind by unit/trace_follow, the follower under ASan by this test")
        sys.exit(77)
    cmtest.main(sys.modules[__name__])
