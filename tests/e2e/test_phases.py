# SPDX-License-Identifier: MIT
"""Phases and steps (docs/report.md, "Phases and steps"): NVTX ranges through
the shim's NVTX injection, the public C API with and without the shim, ctypes,
a crash inside a range, another NVTX tool already named."""
import glob
import os
import shutil
import subprocess
import tempfile
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cmtest import *  # noqa: E402,F403

NVTX = {"NVTX_INJECTION64_PATH": SHIM}
NOTE = "NVTX_INJECTION64_PATH names another tool: NVTX ranges not recorded"
# the shim's warning, docs/messages.md
WARNING = "NVTX_INJECTION64_PATH names another tool ("


def warning_line(tool):
    return (f"cumemtrace: warning: NVTX_INJECTION64_PATH names another tool ({tool}): NVTX ranges not recorded as "
            "phases; run without that tool to record them\n")


def phase(rep, path):
    found = [p for p in rep["phases"]["list"] if p["path"] == path]
    check(len(found) == 1, f"expected one phase {path!r}, found {[p['path'] for p in rep['phases']['list']]}")
    return found[0]


def figures(p):
    return (p["instances"], p["open_at_end"], p["peak_bytes"], p["allocated_bytes"], p["allocated_count"],
            p["left_live_bytes"], p["left_live_count"])


def step_names(rep):
    return [s["name"] for s in rep["phases"]["steps"]]


def test_nvtx_ranges():
    r = run([program("nvtx_phases")], env=NVTX)
    eq(r.proc.returncode, 0, f"exit status ({r.proc.stderr})")
    rep = report(r.trace)
    check(rep["phases"]["recorded"], "no phases recorded")
    dev = device(rep, 0)
    eq(dev["peak_bytes"], 272 * MiB, "peak")
    eq(dev["peak_phase"]["path"], "step 9 > forward [trainer] > layer 2", "phase at the peak")
    eq(dev["peak_phase"]["step_index"], 9, "step of the peak")
    # (instances, open at end, peak, allocated bytes, count, left live bytes, count)
    eq(figures(phase(rep, "<step> > forward [trainer]")), (10, 0, 272 * MiB, 640 * MiB, 20, 640 * MiB, 20),
       "forward")
    eq(figures(phase(rep, "<step> > forward [trainer] > layer 1")), (10, 0, 240 * MiB, 320 * MiB, 10, 320 * MiB, 10),
       "layer 1")
    l2 = phase(rep, "<step> > forward [trainer] > layer 2")
    eq(figures(l2), (10, 0, 272 * MiB, 320 * MiB, 10, 320 * MiB, 10), "layer 2")
    eq((l2["failures"], l2["peak_step_index"]), (1, 9), "layer 2 failures and step of its peak")
    # the gradient comes from a thread with no range of its own: counted in backward
    eq(figures(phase(rep, "<step> > backward")), (10, 0, 272 * MiB, 200 * MiB, 20, 160 * MiB, 10), "backward")
    # its temporary comes from a thread with a range of its own: "apply", in the step, not in optimizer
    eq(figures(phase(rep, "<step> > optimizer [io]")), (10, 0, 226 * MiB, 0, 0, 0, 0), "optimizer")
    apply = phase(rep, "apply")
    eq(figures(apply), (10, 0, 226 * MiB, 20 * MiB, 10, 0, 0), "apply (a helper thread's own range)")
    eq(apply["peak_step_index"], 9, "apply's peak is in step 9 of the main thread")
    eq(figures(phase(rep, "save")), (1, 0, 225 * MiB, 1 * MiB, 1, 0, 0), "save (start/end range)")
    eq(phase(rep, "save")["process_wide"], True, "save is process-wide")
    # the worker thread's stack is its own: loader is not inside setup
    eq(figures(phase(rep, "setup")), (1, 0, 64 * MiB, 64 * MiB, 1, 64 * MiB, 1), "setup")
    eq(figures(phase(rep, "loader")), (1, 0, 6 * MiB, 6 * MiB, 2, 0, 0), "loader")
    eq(figures(phase(rep, "loader > decode")), (1, 0, 6 * MiB, 2 * MiB, 1, 0, 0), "loader > decode")
    eq(rep["phases"]["marks"], 1, "marks")
    eq(rep["phases"]["unmatched_ends"], 0, "unmatched ends")
    steps = rep["phases"]["steps"]
    eq(step_names(rep), [f"step {k}" for k in range(10)], "steps")
    eq([s["number"] for s in steps], list(range(10)), "step numbers")
    eq([s["live_at_end_bytes"] for s in steps], [(80 + 16 * k) * MiB for k in range(10)], "live at each step's end")
    eq([s["peak_bytes"] for s in steps], [(128 + 16 * k) * MiB for k in range(10)], "step peaks")
    eq({(s["allocated_bytes"], s["allocated_count"], s["left_live_bytes"], s["left_live_count"], s["closed"])
        for s in steps}, {(86 * MiB, 5, 16 * MiB, 1, True)}, "per-step allocations")
    g = rep["phases"]["step_growth"]
    eq((g["growing"], g["rate_bytes_per_step"], g["samples"]), (True, 16 * MiB, 10), "growth per step")
    eq(len(g["sites"]), 1, "sites growing per step")
    eq(g["sites"][0]["rate_bytes_per_step"], 16 * MiB, "site growth per step")
    check(g["sites"][0]["frames"][0].startswith("leak_per_step"), f"growing site: {g['sites'][0]['frames']}")
    fail = rep["failed"]
    eq(len(fail), 1, "failed allocations")
    eq(fail[0]["phase"]["path"], "step 7 > forward [trainer] > layer 2", "phase of the failure")
    text = cli("report", r.trace)
    check("phase at the peak: step 9 > forward [trainer] > layer 2" in text.stdout, "text: phase at the peak")
    check("in phase: step 7 > forward [trainer] > layer 2" in text.stdout, "text: phase of the failure")
    check("live bytes at step ends grow: +16.0 MiB per step" in text.stdout, "text: growth per step")
    check("+16.0 MiB per step:" in text.stdout, "text: site growing per step")
    cleanup(r)


def test_xla_compiler_ranges():
    """XLA's compiler ranges are not the program's phases (issue 33 item 9):
    gen_xla_trace's run (its comment works out every figure). The peak fell
    in XlaCompileGpuAsm inside XlaEmitLlvmIr inside the compile range of
    jit_f, inside the program's train_step: the phase at the peak is
    train_step, said to be during jit_f's compilation; the compiler's passes
    are counted as their compile range, one phase per compiled module."""
    d = tempfile.mkdtemp(prefix="cmt_xla_")
    try:
        trace = os.path.join(d, "xla.bin")
        p = subprocess.run([program("gen_xla_trace"), trace], capture_output=True, text=True)
        eq(p.returncode, 0, f"gen_xla_trace: {p.stderr}")
        rep = report(trace)
        dev = device(rep, 0)
        eq(dev["peak_bytes"], 320 * MiB, "peak")
        eq(dev["peak_phase"], {"path": "train_step [TSL], during XLA's compilation of jit_f",
                               "phase": "train_step [TSL]",
                               "xla_compilation": {"module": "jit_f",
                                                   "range": "XlaCompileBackend:#module=jit_f,program_id=3#"},
                               "step_index": None}, "phase at the peak")
        eq(sorted(p["path"] for p in rep["phases"]["list"]),
           ["XlaCompileBackend:#module=jit_g,program_id=4# [TSL]", "XlaCompileGpuAsm [TSL]", "train_step [TSL]",
            "train_step [TSL] > XlaCompileBackend:#module=jit_f,program_id=3# [TSL]"],
           "phases: one per compile range, none of the compiler's passes")
        # (instances, open at end, peak, allocated bytes, count, left live bytes, count)
        eq(figures(phase(rep, "train_step [TSL] > XlaCompileBackend:#module=jit_f,program_id=3# [TSL]")),
           (1, 0, 320 * MiB, 768 * MiB, 3, 0, 0), "jit_f's compilation: its three passes' autotuning")
        eq(figures(phase(rep, "train_step [TSL]")), (1, 0, 320 * MiB, 864 * MiB, 5, 96 * MiB, 2), "train_step")
        g = phase(rep, "XlaCompileBackend:#module=jit_g,program_id=4# [TSL]")
        eq((figures(g), g["failures"]), ((1, 0, 112 * MiB, 16 * MiB, 1, 0, 0), 1), "jit_g's compilation")
        eq(rep["failed"][0]["phase"], {"path": "(no phase of the program open), during XLA's compilation of jit_g",
                                       "phase": None,
                                       "xla_compilation": {"module": "jit_g",
                                                           "range": "XlaCompileBackend:#module=jit_g,program_id=4#"},
                                       "step_index": None}, "phase of the failure")
        text = cli("report", "--chart-width", "0", trace).stdout
        check("\n  phase at the peak: train_step [TSL], during XLA's compilation of jit_f\n" in text, text)
        check("\n      in phase: (no phase of the program open), during XLA's compilation of jit_g\n" in text, text)
        check("XlaEmitLlvmIr" not in text, text)
        # a driver-API program's calls are named as it made them, not as cudaMalloc
        check("\nMost allocation calls (calls cost time even where nothing leaks: cuMemAlloc and cuMemFree synchronize "
              "the device): 7 calls at 5 call sites; the 1 that allocated more than once\n" in text, text)
    finally:
        shutil.rmtree(d)


def test_payload_ranges():
    # NVTX's payload extension, as NCCL uses it: a range pushed with the core
    # and popped with nvtxRangePopPayload must close, or every later range
    # nests inside it (found on an H200 with NCCL 2.28).
    r = run([program("nvtx_payload")], env=NVTX)
    eq(r.proc.returncode, 0, f"exit status ({r.proc.stderr})")
    rep = report(r.trace)
    eq(sorted(p["path"] for p in rep["phases"]["list"]),
       ["(unnamed) [NCCL]", "(unnamed) [NCCL]", "init [NCCL]", "left open", "train"], "phases, none nested")
    eq(figures(phase(rep, "init [NCCL]")), (1, 0, 8 * MiB, 8 * MiB, 1, 8 * MiB, 1), "init, popped with a payload")
    eq(figures(phase(rep, "train")), (1, 0, 12 * MiB, 4 * MiB, 1, 0, 0), "train, after it")
    pushed, started = sorted((p for p in rep["phases"]["list"] if p["path"] == "(unnamed) [NCCL]"),
                             key=lambda p: p["process_wide"])
    eq((figures(pushed), pushed["process_wide"]), ((1, 0, 10 * MiB, 2 * MiB, 1, 0, 0), False),
       "pushed with a payload")
    eq((figures(started), started["process_wide"]), ((1, 0, 9 * MiB, 1 * MiB, 1, 0, 0), True),
       "started and ended with payloads")
    eq(rep["phases"]["unmatched_ends"], 0, "unmatched ends")
    eq(figures(phase(rep, "left open")), (1, 1, 0, 0, 0, 0, 0), "the range never popped")
    text = cli("report", r.trace).stdout
    check("  open at the end (never closed, though the process exited normally: a range its code or a library "
          "pushed and never popped):\n    left open: 1 open; what it allocated and is still live: 0 B in 0\n" in text,
          text)


def test_crash_inside_range():
    r = run([program("nvtx_phases"), "crash"], env=NVTX)
    eq(r.proc.returncode, -signal.SIGKILL, "killed")
    rep = report(r.trace)
    eq(step_names(rep), [f"step {k}" for k in range(4)], "steps up to the crash")
    steps = rep["phases"]["steps"]
    eq([s["closed"] for s in steps], [True, True, True, False], "the last step is open at the end")
    eq(steps[3]["left_live_bytes"], 64 * MiB, "step 3 holds its activations")
    fw = phase(rep, "<step> > forward [trainer]")
    eq((fw["instances"], fw["open_at_end"], fw["left_live_bytes"], fw["open_left_live_bytes"],
        fw["open_left_live_count"]), (4, 1, 4 * 64 * MiB, 64 * MiB, 2), "forward open at the end")
    eq(phase(rep, "<step>")["open_at_end"], 1, "one step open at the end")
    eq(device(rep, 0)["peak_phase"]["path"], "step 3 > forward [trainer] > layer 2", "phase at the peak")
    text = cli("report", r.trace).stdout
    check("open at the end (the program crashed or was killed inside them" in text, "text: open at the end")
    check("<step> > forward [trainer]: 1 open; what it allocated and is still live: 64.0 MiB in 2" in text, text)
    cleanup(r)


def test_c_api():
    r = run([program("phase_api")])
    eq((r.proc.returncode, r.proc.stdout), (0, "phase_api done\n"), "exit status and output")
    rep = report(r.trace)
    steps = rep["phases"]["steps"]
    eq(step_names(rep), [f"step {100 + i}" for i in range(12)], "steps from cumemtrace_step")
    eq({s["source"] for s in steps}, {"cumemtrace_step"}, "step source")
    eq([s["closed"] for s in steps], [True] * 11 + [False], "the last step ends with the trace")
    eq([s["live_at_end_bytes"] for s in steps], [16 * (i + 1) * MiB for i in range(12)], "live at each step's end")
    eq(device(rep, 0)["peak_phase"]["path"], "step 111 > optimizer", "phase at the peak")
    eq(device(rep, 0)["peak_bytes"], 192 * MiB, "peak")
    eq(figures(phase(rep, "forward")), (12, 0, 184 * MiB, 96 * MiB, 12, 0, 0), "forward")
    eq(figures(phase(rep, "optimizer")), (12, 0, 192 * MiB, 192 * MiB, 12, 192 * MiB, 12), "optimizer")
    eq(phase(rep, "<step>")["open_at_end"], 0, "a cumemtrace_step step is not left open")
    g = rep["phases"]["step_growth"]
    eq((g["growing"], g["rate_bytes_per_step"], g["samples"]), (True, 16 * MiB, 11), "growth per step")
    eq(rep["phases"]["marks"], 1, "marks")
    cleanup(r)
    # Without the shim the API does nothing: same output, no trace.
    r = run([program("phase_api")], preload=False)
    eq((r.proc.returncode, r.proc.stdout, r.traces), (0, "phase_api done\n", []), "without the shim")
    cleanup(r)


def test_ctypes():
    script = ("import ctypes, os\n"
              "lib = ctypes.CDLL(None)\n"
              "rt = ctypes.CDLL(os.path.join(os.environ['CMT_SIM_DIR'], 'libcudart.so.13'))\n"
              "lib.cumemtrace_step.argtypes = [ctypes.c_uint64]\n"
              "p = ctypes.c_void_p()\n"
              "for i in range(3):\n"
              "    lib.cumemtrace_step(i)\n"
              "    lib.cumemtrace_phase_push(b'forward')\n"
              "    rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4 << 20))\n"
              "    lib.cumemtrace_phase_pop()\n"
              "print('ok')\n")
    # Python is not ours: under ASan its own leaks are not reported (sim_env's foreign)
    env = {"PYTHONDONTWRITEBYTECODE": "1", "ASAN_OPTIONS": sim_env(foreign=True).get("ASAN_OPTIONS")}
    r = run([sys.executable, "-c", script], env=env)
    eq((r.proc.returncode, r.proc.stdout), (0, "ok\n"), f"python ({r.proc.stderr})")
    rep = report(r.trace)
    eq(figures(phase(rep, "forward")), (3, 0, 12 * MiB, 12 * MiB, 3, 12 * MiB, 3), "forward from Python")
    eq(device(rep, 0)["peak_phase"]["path"], "step 2 > forward", "phase at the peak")
    cleanup(r)


def test_other_nvtx_tool():
    tool = program("libother_nvtx_tool.so")
    r = run([program("nvtx_phases")], env={"NVTX_INJECTION64_PATH": tool})
    eq(r.proc.returncode, 0, f"exit status ({r.proc.stderr})")
    # once per NVTX instance: the program's and its library's
    eq(r.proc.stderr.count("other tool loaded"), 2, f"the other tool keeps its place: {r.proc.stderr}")
    eq(r.proc.stderr.count(WARNING), 1, f"warned once: {r.proc.stderr}")
    eq(r.proc.stderr.count(warning_line(tool)), 1, f"the catalogued warning: {r.proc.stderr}")
    rep = report(r.trace)
    eq(rep["phases"]["recorded"], False, "no phases")
    eq([(n["source"], n["text"]) for n in rep["notes"]], [("nvtx", NOTE)], "note in the trace")
    eq(device(rep, 0)["peak_phase"], None, "no phase at the peak")
    cleanup(r)
    # quiet: the note stays, the warning goes
    r = run([program("nvtx_phases")], env={"NVTX_INJECTION64_PATH": tool, "CUMEMTRACE_QUIET": "1"})
    eq(r.proc.stderr.count(WARNING), 0, f"quiet: {r.proc.stderr}")
    eq([n["text"] for n in report(r.trace)["notes"]], [NOTE], "note when quiet")
    cleanup(r)


def test_injection_without_preload():
    # NVTX_INJECTION64_PATH inherited without LD_PRELOAD: NVTX loads the shim
    # on its own; it declines (no hooks there), the program runs untouched
    r = run([program("nvtx_phases")], env=NVTX, preload=False)
    eq((r.proc.returncode, r.proc.stdout, r.traces), (0, "nvtx_phases done\n", []), f"not preloaded: {r.proc.stderr}")
    cleanup(r)


def test_run_sets_injection():
    out = tempfile.mkdtemp(prefix="cmt-e2e-")
    p = subprocess.run([CLI, "run", "-o", os.path.join(out, "t.%p.bin"), program("nvtx_phases")],
                       env=sim_env({"NVTX_INJECTION64_PATH": None}, preload=False), capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, f"run ({p.stderr})")
    traces = glob.glob(os.path.join(out, "*.bin"))
    eq(len(traces), 1, "one trace")
    eq(device(report(traces[0]), 0)["peak_phase"]["path"], "step 9 > forward [trainer] > layer 2", "phases via run")
    shutil.rmtree(out)
    # a tool already named keeps its place
    out = tempfile.mkdtemp(prefix="cmt-e2e-")
    p = subprocess.run([CLI, "run", "-o", os.path.join(out, "t.%p.bin"), program("nvtx_phases")],
                       env=sim_env({"NVTX_INJECTION64_PATH": program("libother_nvtx_tool.so")}, preload=False),
                       capture_output=True, text=True, timeout=300)
    eq((p.returncode, p.stderr.count("other tool loaded"), p.stderr.count(WARNING)), (0, 2, 1), p.stderr)
    shutil.rmtree(out)




if __name__ == "__main__":
    main(sys.modules[__name__])
