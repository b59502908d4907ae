# SPDX-License-Identifier: MIT
"""End-to-end: PyTorch's language in report and check (issue 14).

Two sources of PyTorch-shaped stacks, both through the test doubles
libtorch_cpu.so and libc10_cuda.so (programs/torch_cpu_double.c,
programs/c10_cuda_double.c: PyTorch's C++ names, no DWARF):
- gen_pytorch_trace writes a trace with Python frames (FRAME records of
  language 1) merged where CPython's evaluation loop ran them; its comment
  says what it allocates, and every figure below follows from it;
- torch_train runs under the shim on the simulated device: a caching
  allocator that keeps its segments to exit beside a real leak (its comment
  gives the figures), with and without PYTORCH_NO_CUDA_MEMORY_CACHING."""
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
from cmtest import MiB, check, eq  # noqa: E402

SRC = os.path.join(os.path.dirname(__file__), "programs")
ROOT = os.environ["CMT_SOURCE_ROOT"]
REL = "tests/e2e/programs/"
GEN = cmtest.program("gen_pytorch_trace")
TRAIN = cmtest.program("torch_train")

MODEL = "/home/u/proj/model.py"
SCRIPT = "/home/u/proj/train.py"
# The call site of a forward tensor as shown by default: the operation, then
# the user's Python lines (nn.Module's _call_impl, runpy, importlib, CPython's
# loop and the interpreter's anonymous frames folded away).
FORWARD_TAIL = (f"        forward at {MODEL}:{{line}}\n"
                f"        train_step at {SCRIPT}:55\n"
                f"        <module> at {SCRIPT}:80\n")


def forward_site(line):
    return "        aten::addmm in libtorch_cpu.so\n" + FORWARD_TAIL.format(line=line)


def line_of(source, text):
    with open(os.path.join(SRC, source)) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise cmtest.Failure(f"{text!r} not in {source}")


def line_of_gen(text):
    with open(os.path.join(os.path.dirname(__file__), "gen_pytorch_trace.c")) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise cmtest.Failure(f"{text!r} not in gen_pytorch_trace.c")


# The C extension's leak: a native frame with a line inside the Python line
# that names the site.
def ext_rows(prefix):
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_pytorch_trace.c")
    return [f"{prefix}ext_alloc at {gen}:{line_of_gen('void *ext_alloc(void *f) { return f; }')}",
            f"{prefix}load at /home/u/proj/data.py:12", f"{prefix}<module> at {SCRIPT}:80"]


def first_row(text):
    """The frames of the first row of a leaks section."""
    lines = text.splitlines()[3:]
    end = next((i for i, line in enumerate(lines) if line.startswith("    ") and not line.startswith("      ")),
               len(lines))
    return [line for line in lines[:end] if line]


def section(text, start, end):
    """The lines of text from the one starting with start up to (not
    including) the next one starting with end."""
    i = text.find("\n" + start)
    check(i >= 0, f"no section {start!r} in:\n{text}")
    j = text.find("\n" + end, i + 1)
    return text[i + 1:j + 1 if j >= 0 else len(text)]


class Scratch:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="cmt-pytorch-")

    def __call__(self, name):
        return os.path.join(self.path, name)

    def done(self):
        shutil.rmtree(self.path, ignore_errors=True)


def python_trace(d):
    out = d("py.bin")
    p = subprocess.run([GEN, out], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_pytorch_trace: {p.stderr}")
    return out


def text_report(trace, *opts):
    p = cmtest.cli("report", "--chart-width", "0", "--no-forensics", *opts, trace)
    eq(p.returncode, 0, f"report: {p.stderr}")
    return p.stdout


def cli_check(trace, *opts):
    return cmtest.cli("check", "--source-root", ROOT, *opts, trace)


def findings(p, trace):
    """check's findings: its text before the notes and result lines about the
    trace."""
    lines = p.stdout.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if line.startswith(trace)), len(lines))
    return "".join(lines[:end])


def said(p):
    return p.stdout + p.stderr


# ---- Python frames: sites, the operation, held memory, peaks ---------------

def test_python_sites():
    d = Scratch()
    trace = python_trace(d)
    out = text_report(trace)
    eq(section(out, "Device 0:", "  live at exit"),
       "Device 0: peak 69.0 MiB (72351744 B) in 4 allocations at 6.0 ms\n"
       "  by holder (at the device peak; each holder's own peak):\n"
       "    PyTorch  29.0 MiB (30408704 B); own peak 34.0 MiB (35651584 B) in 3 allocations at 3.0 ms\n"
       "    other    40.0 MiB (41943040 B)\n"
       "    (PyTorch's own peak is its reserved memory at its highest: with its cache on, "
       "torch.cuda.max_memory_reserved())\n", "device header")
    eq(section(out, "  call sites live at the peak:", "  call tree"),
       "  call sites live at the peak:\n"
       "    40.0 MiB (41943040 B) in 1 allocation (cudaMalloc)\n"
       f"        scratch at {SCRIPT}:60\n"
       f"        <module> at {SCRIPT}:80\n"
       "    20.0 MiB (20971520 B) in 1 allocation (cudaMalloc)\n"
       + forward_site(30)
       + "    8.0 MiB (8388608 B) in 1 allocation (cudaMalloc)\n"
       "        AddmmBackward0 in libtorch_cpu.so\n"
       "    1.0 MiB (1048576 B) in 1 allocation (cudaMalloc)\n"
       + forward_site(42), "sites at the peak")
    eq(section(out, "Held by PyTorch at exit", "Leaks"),
       "Held by PyTorch at exit (its cache, not counted as leaks; --include-cached counts it): "
       "28.0 MiB (29360128 B) in 2 segments\n"
       "  cumemtrace sees the segments PyTorch reserved from CUDA, not what lives in them: memory your program "
       "keeps alive by mistake inside a cached segment (a tensor held in a list) looks the same as free cache. "
       "To tell them apart, run with PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is then its own cudaMalloc "
       "and cudaFree, and a tensor still alive at exit shows as a leak at the line that made it.\n"
       "  the call sites that first needed them:\n"
       "    20.0 MiB (20971520 B) in 1 segment (device, cudaMalloc)\n"
       + forward_site(30)
       + "    8.0 MiB (8388608 B) in 1 segment (device, cudaMalloc)\n"
       "        AddmmBackward0 in libtorch_cpu.so\n\n", "held section")
    leaks = section(out, "Leaks", "Growing")
    check(leaks.startswith("Leaks (live at exit): 1.5 MiB (1572864 B) in 2 allocations\n"
                           "  allocated once (the call site allocated a single time: start-up buffers, never freed): "
                           "1.5 MiB (1572864 B) in 2 allocations\n"
                           "    1.0 MiB (1048576 B) in 1 allocation (device, cudaMalloc)\n"
                           + forward_site(42)
                           + "    512.0 KiB (524288 B) in 1 allocation (device, cudaMalloc)\n"), leaks)
    eq([re.sub(r"at /\S*/tests/e2e/", "at TESTS/", x) for x in leaks.splitlines()[8:11]],
       [re.sub(r"at /\S*/tests/e2e/", "at TESTS/", x) for x in ext_rows("        ")], "the extension's leak")
    for plumbing in ("_PyEval_EvalFrameDefault", "PyObject_Vectorcall", "CachingAllocator", "at::_ops",
                     "Dispatcher", "VariableType", "THPVariable", "pybind11", "_call_impl", "runpy", "frozen",
                     "python3.12+"):
        check(plumbing not in out.split("\nWarnings:")[0], f"{plumbing} shown by default:\n{out}")

    rep = cmtest.report(trace, "--no-forensics")
    dev = cmtest.device(rep, 0)
    eq(dev["peak_by_holder"], {"other": 40 * MiB, "pytorch": 29 * MiB, "cupy": 0, "xla": 0, "rmm": 0,
                               "cublas": 0, "cudnn": 0, "nccl": 0}, "peak_by_holder")
    eq(dev["own_peaks"]["pytorch"], {"bytes": 34 * MiB, "count": 3, "time_ns": 3000000}, "PyTorch's own peak")
    check("other" not in dev["own_peaks"], "no own peak for the rest: it is not followed")
    eq(dev["own_peaks"]["cublas"], {"bytes": 0, "count": 0, "time_ns": None}, "no cuBLAS")
    held = rep["held_at_exit"]
    eq([(h["holder"], h["bytes"], h["segments"], [s["bytes"] for s in h["sites"]]) for h in held],
       [("PyTorch", 28 * MiB, 2, [20 * MiB, 8 * MiB])], "held_at_exit")
    fwd = held[0]["sites"][0]
    eq([(f["function"], f["file"], f["line"]) for f in fwd["frames"]],
       [("aten::addmm", None, 0), ("forward", MODEL, 30), ("train_step", SCRIPT, 55), ("<module>", SCRIPT, 80)],
       "frames of the held forward site")
    eq(fwd["site_frame"], 1, "the site is named by forward at model.py:30")
    eq(held[0]["sites"][1]["site_frame"], 0, "autograd's thread: named by its operation")
    eq(rep["leaks"]["bytes"], 1 * MiB + 512 * 1024, "leaked bytes")
    eq(rep["leaks"]["count"], 2, "leaked allocations")
    eq(rep["leaks"]["sites"][0]["site_frame"], 1, "leak named by forward at model.py:42")
    eq(rep["leaks"]["sites"][1]["site_frame"], 1, "the extension's leak named by load at data.py:12")
    d.done()


def test_python_full_fold_unfold():
    d = Scratch()
    trace = python_trace(d)
    full = section(text_report(trace, "--full-stacks", "--max-frames", "0"), "Leaks", "Growing")
    eq(first_row(full),
       ["        c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long) in "
        "libc10_cuda.so",
        "        at::detail::empty_generic(unsigned long) in libtorch_cpu.so",
        "        at::(anonymous namespace)::wrapper_CUDA_addmm(unsigned long) in libtorch_cpu.so",
        "        torch::autograd::VariableType::addmm(unsigned long) in libtorch_cpu.so",
        "        c10::Dispatcher::call(unsigned long) in libtorch_cpu.so",
        "        at::_ops::addmm::call(unsigned long) in libtorch_cpu.so",
        "        torch::autograd::THPVariable_addmm(unsigned long) in libtorch_cpu.so",
        "        pybind11::cpp_function::dispatcher(unsigned long) in libtorch_cpu.so"]
       + first_row(full)[8:],
       "full stack: every native frame, named as the symbol table names it")
    rest = "\n".join(first_row(full)[8:])
    for frame in ("PyObject_Vectorcall at", "_PyEval_EvalFrameDefault at", f"forward at {MODEL}:42",
                  "_call_impl at /home/u/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750",
                  f"train_step at {SCRIPT}:55", "_call_with_frames_removed at <frozen importlib._bootstrap>:488",
                  "_run_code at /usr/lib/python3.12/runpy.py:88", "in python3.12+0x1054caed"):
        check(frame in rest, f"--full-stacks shows {frame!r}:\n{full}")
    # --fold: forward is folded too; the site is then train_step's line.
    p = cli_check(trace, "--fold", "forward")
    eq(p.returncode, 1, f"check --fold: {p.stderr}")
    check(findings(p, trace).startswith(f"{SCRIPT}:55: error: leaked 1.0 MiB in 1 allocation (cudaMalloc) [leak]\n"
                              "    #0 aten::addmm in libtorch_cpu.so\n"
                              f"    #1 train_step at {SCRIPT}:55\n"
                              f"    #2 <module> at {SCRIPT}:80\n"), p.stdout)
    # --unfold: nn.Module's frame is shown; the innermost user line still names the site.
    out = section(text_report(trace, "--unfold", "*/torch/nn/*"), "Leaks", "Growing")
    eq(first_row(out),
       ["        aten::addmm in libtorch_cpu.so", f"        forward at {MODEL}:42",
        "        _call_impl at /home/u/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750",
        f"        train_step at {SCRIPT}:55", f"        <module> at {SCRIPT}:80"], "--unfold")
    # --unfold of native plumbing: the factory shows, innermost.
    out = section(text_report(trace, "--unfold", "at::detail::*"), "Leaks", "Growing")
    eq(out.splitlines()[3:5], ["        at::detail::empty_generic(unsigned long) in libtorch_cpu.so",
                               "        aten::addmm in libtorch_cpu.so"], "--unfold at::detail::*")
    d.done()


def test_python_check_locations():
    d = Scratch()
    trace = python_trace(d)
    p = cli_check(trace)
    eq(p.returncode, 1, f"check: {p.stderr}")
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_pytorch_trace.c")
    eq(findings(p, trace),
       f"{MODEL}:42: error: leaked 1.0 MiB in 1 allocation (cudaMalloc) [leak]\n"
       "    #0 aten::addmm in libtorch_cpu.so\n"
       f"    #1 forward at {MODEL}:42\n"
       f"    #2 train_step at {SCRIPT}:55\n"
       f"    #3 <module> at {SCRIPT}:80\n"
       "/home/u/proj/data.py:12: error: leaked 512.0 KiB in 1 allocation (cudaMalloc) [leak]\n"
       + "".join(f"    #{i} {f.strip()}\n" for i, f in enumerate(ext_rows("")))
       .replace(f"at {gen}", "at tests/e2e/gen_pytorch_trace.c"), "check text")
    check("note: PyTorch held 28.0 MiB in 2 segments at exit: its cache, not checked as leaks (--include-cached "
          "checks them;" in said(p), said(p))
    check(said(p).endswith("FAIL " + trace + " (python3 train.py, pid 4242): 2 violations; leaked 1.5 MiB in 2 "
                           "allocations; peak 69.0 MiB on device 0\n"), said(p))
    sarif = json.loads(cli_check(trace, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    eq([(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"],
         r["locations"][0]["logicalLocations"][0]["name"]) for r in results],
       [("file://" + MODEL, 42, "forward"), ("file:///home/u/proj/data.py", 12, "load")], "SARIF locations")
    junit = ET.fromstring(cli_check(trace, "--format", "junit").stdout)
    failures = junit.findall(".//failure")
    eq(len(failures), 1, "one JUnit failure (the trace is one test case)")
    check(failures[0].text.startswith(f"{MODEL}:42: error: leaked 1.0 MiB"), failures[0].text)
    # --include-cached: the cache's segments are leaks of their user sites.
    p = cli_check(trace, "--include-cached")
    eq(p.returncode, 1, f"check --include-cached: {p.stderr}")
    eq(re.findall(r"^(\S+): error: leaked (.*) \[leak\]$", p.stdout, re.M),
       [(f"{MODEL}:30", "20.0 MiB in 1 allocation (cudaMalloc)"),
        ("libtorch_cpu.so", "8.0 MiB in 1 allocation (cudaMalloc)"),
        (f"{MODEL}:42", "1.0 MiB in 1 allocation (cudaMalloc)"),
        ("/home/u/proj/data.py:12", "512.0 KiB in 1 allocation (cudaMalloc)")], "--include-cached findings")
    check("PyTorch held" not in said(p), said(p))
    rep = cmtest.report(trace, "--no-forensics", "--include-cached")
    check("held_at_exit" not in rep, "report --include-cached sets nothing aside")
    eq((rep["leaks"]["bytes"], rep["leaks"]["count"]), (29 * MiB + 512 * 1024, 4), "report --include-cached leaks")
    d.done()


def test_own_peak_churn():
    """PyTorch's own peak over 4,000 segments made and released in a shuffled
    order, against the generator's plain sums."""
    d = Scratch()
    out = d("churn.bin")
    p = subprocess.run([GEN, out, "--churn"], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_pytorch_trace --churn: {p.stderr}")
    best, count, ts = (int(x) for x in p.stdout.split())
    own = cmtest.device(cmtest.report(out, "--no-forensics"), 0)["own_peaks"]["pytorch"]
    eq(own, {"bytes": best, "count": count, "time_ns": ts}, "PyTorch's own peak")
    rep = cmtest.report(out, "--no-forensics")
    eq(cmtest.device(rep, 0)["peak_bytes"], best, "every allocation is PyTorch's: its peak is the device's")
    d.done()


def test_host_cache():
    """PyTorch's pinned host memory cache (CachingHostAllocator) is a holder
    whose blocks at exit are its cache, not leaks, in report and check alike;
    the program's own pinned buffer beside it is still a leak."""
    d = Scratch()
    out = d("host.bin")
    p = subprocess.run([GEN, out, "--host-cache"], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_pytorch_trace --host-cache: {p.stderr}")
    text = text_report(out)
    held = section(text, "Held by PyTorch's host cache at exit", "Leaks")
    check(held.startswith("Held by PyTorch's host cache at exit (its cache, not counted as leaks; --include-cached "
                          "counts it): 1.1 GiB (1140850688 B) in 2 segments\n"), held)
    sites = held.split("  the call sites that first needed them:\n")[1]
    eq(sites.splitlines(), ["    1.1 GiB (1140850688 B) in 2 segments (pinned-host, cudaHostAlloc)",
                            "        aten::_pin_memory in libtorch_cpu.so",
                            "        collate at /home/u/proj/data.py:14",
                            "        load at /home/u/proj/data.py:12",
                            f"        <module> at {SCRIPT}:80", ""], "the host cache's site")
    check("Held by PyTorch at exit (its cache, not counted as leaks; --include-cached counts it): 20.0 MiB "
          "(20971520 B) in 1 segment\n" in text, text)
    leaks = section(text, "Leaks", "Growing")
    check(leaks.startswith("Leaks (live at exit): 2.0 MiB (2097152 B) in 1 allocation\n"), leaks)
    check("\n    2.0 MiB (2097152 B) in 1 allocation (pinned-host, cudaHostAlloc)\n        ext_alloc at " in leaks, leaks)
    rep = cmtest.report(out, "--no-forensics")
    eq([(h["holder"], h["bytes"], h["segments"]) for h in rep["held_at_exit"]],
       [("PyTorch", 20 * MiB, 1), ("PyTorch's host cache", 1088 * MiB, 2)], "held_at_exit")
    eq((rep["leaks"]["bytes"], rep["leaks"]["count"]), (2 * MiB, 1), "JSON leaks")
    check("pytorch_host" not in cmtest.device(rep, 0)["peak_by_holder"], "no host holder in a device's split")
    # check: the same, not a leak; the note says whose cache it is
    p = cli_check(out)
    eq(p.returncode, 1, f"check: {p.stderr}")
    eq(re.findall(r"^(\S+): error: leaked (.*) \[leak\]$", p.stdout, re.M),
       [("/home/u/proj/data.py:12", "2.0 MiB in 1 allocation (cudaHostAlloc)")], "the one leak")
    check("note: PyTorch's host cache held 1.1 GiB in 2 segments at exit: its cache, not checked as leaks" in said(p),
          said(p))
    js = json.loads(cli_check(out, "--format", "json").stdout)
    eq((js["traces"][0]["leaks"]["bytes"], js["traces"][0]["leaks"]["count"]), (2 * MiB, 1), "check's JSON leaks")
    p = cli_check(out, "--include-cached")
    eq(re.findall(r"^(\S+): error: leaked (.*) \[leak\]$", p.stdout, re.M),
       [("/home/u/proj/data.py:14", "1.1 GiB in 2 allocations (cudaHostAlloc)"),
        ("/home/u/proj/model.py:30", "20.0 MiB in 1 allocation (cudaMalloc)"),
        ("/home/u/proj/data.py:12", "2.0 MiB in 1 allocation (cudaHostAlloc)")], "--include-cached")
    d.done()


GiB = 1024 * MiB
FAILED_AT_2 = ("  cudaMalloc of 30.0 GiB (32212254720 B) on device 0 failed at 2.0 ms with cudaErrorMemoryAllocation (2)\n"
               "    verdict: capacity (rule R5): this process's live data ({live}) plus the request (30.0 GiB) and the "
               "context's share ({context}) exceed the device's 80.0 GiB: the data does not fit\n"
               "    what to try: {remedy}\n")
CAPACITY_REMEDY = ("release or reuse what the call sites below hold before this point, use smaller batches or tiles, "
                   "or a GPU with more memory")
SETTINGS = ("this allocation came from PyTorch's caching allocator: set PYTORCH_CUDA_ALLOC_CONF="
            "expandable_segments:True (segments grow in place instead of one per new size) or "
            "backend:cudaMallocAsync (the driver's pool), pad inputs to a few fixed shapes, or call "
            "torch.cuda.empty_cache() between phases")


def oom_trace(mode):
    d = Scratch()
    out = d(mode.strip("-") + ".bin")
    p = subprocess.run([GEN, out, mode], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_pytorch_trace {mode}: {p.stderr}")
    return d, out


def oom_outputs(out):
    """The report's text (with forensics), its JSON's out-of-memory cases and
    its HTML page."""
    p = cmtest.cli("report", "--chart-width", "0", out)
    eq(p.returncode, 0, f"report: {p.stderr}")
    rep = cmtest.report(out)
    h = cmtest.cli("report", "--format", "html", out)
    eq(h.returncode, 0, f"report --format html: {h.stderr}")
    return p.stdout, rep["oom"]["cases"], h.stdout


def test_oom_block_capacity():
    """A tensor request fails at capacity and PyTorch's block layer recorded
    its own OOM for it: the cache held only 544 KiB reserved but unallocated
    and expandable segments would not have served it. One failure, one
    verdict: PyTorch's record decides (R12, capacity, the cache's figures),
    its retry after releasing the cache is the same failure (not a second
    case), and no allocator setting is suggested. The replay of the usual
    settings says the same: each runs out there (capacity), the tensors'
    peak must be 11 GiB less the cache's 544 KiB smaller (11810603008 B),
    and "the rest" (no steps) holds them, 64426049536 B."""
    d, out = oom_trace("--oom-capacity")
    text, cases, html = oom_outputs(out)
    # The allocator's settings as the trace recorded them (format 2.4).
    check("  allocator settings: PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8\n" in text, text)
    blocks = cmtest.report(out)["blocks"]
    eq((blocks["settings_known"], blocks["alloc_conf"], blocks["cuda_alloc_conf"]),
       (True, None, "garbage_collection_threshold:0.8"), "recorded settings")
    remedy = ("the tensors' peak must be 11.0 GiB (11810603008 B) smaller for this request to fit; the rest hold most "
              "of it: 60.0 GiB at the tensors' peak, 100% of the device memory then: release the tensors kept across "
              "steps or made outside them once used; no allocator setting serves it (all 7 replayed run out): release "
              "or reuse what the call sites hold before this point, use smaller batches, or a GPU with more memory")
    check("Out-of-memory forensics: 1 failure examined of 2 failed allocation calls" in text, text)
    check("    verdict: capacity (rule R12): capacity, by PyTorch's cache's own record of the failure (the block "
          "layer): its tensors held 60.0 GiB, it had 544.0 KiB reserved but unallocated and the device 19.0 GiB "
          "free, 11.0 GiB short of the 30.0 GiB asked: the data does not fit; replayed (the recorded tensor requests "
          "through PyTorch's allocator on the recorded device, room for its cache 79.0 GiB at the tightest): the "
          "recorded settings (garbage_collection_threshold:0.8) fail here as the run did; the defaults, "
          "expandable_segments:True, max_split_size_mb:128, max_split_size_mb:512, roundup_power2_divisions:4 and "
          "garbage_collection_threshold:0.6 would not (capacity, each)\n" in text, text)
    eq(text.count("    what to try: " + remedy + "\n"), 1, "one case, the retry folded in")
    check("asked for the same size again: failed again, 1 time (PyTorch's own retry, the last at 2.1 ms: the same "
          "failure)" in text, text)
    check("PYTORCH_CUDA_ALLOC_CONF=expandable" not in section(text, "Out-of-memory forensics", "Fragmentation"), text)
    eq([(c["verdict"], c["rule"], c["time_ns"], c["what_to_try"], c["allocator_retries"]) for c in cases],
       [("capacity", "R12", 2000000, remedy, 1)], "JSON: one case")
    p = cases[0]["replayed"]
    eq((p["reproduced"], p["room_bytes"], p["short_by_bytes"], p["best"], p["category"]["category"],
        p["category"]["bytes"]), (True, 79 * GiB, 11810603008, None, "other", 64426049536), "the replay")
    eq({x["label"]: (x["outcome"], x["verdict"]) for x in p["settings"]},
       {k: ("fails-here", "capacity") for k in ("garbage_collection_threshold:0.8", "the defaults",
                                                "expandable_segments:True", "max_split_size_mb:128",
                                                "max_split_size_mb:512", "roundup_power2_divisions:4",
                                                "garbage_collection_threshold:0.6")}, "each setting")
    own = {"time_ns": 2200000, "verdict": "capacity", "unallocated": 544 * 1024,
           "expandable_segments_would_serve": False}
    eq([c["allocator_oom"] for c in cases], [own], "PyTorch's own OOM")
    rep = cmtest.report(out)
    eq([(f["verdict"], f["count"], f["allocator_retries"], f["probe"]) for f in rep["failed"]],
       [("capacity", 2, 1, False)], "the failed calls, one failure")
    check(json.dumps(remedy)[1:-1] in html, "the HTML page's data")
    check(json.dumps(SETTINGS)[1:-1] not in html, "no setting in the HTML page")
    d.done()


def test_oom_block_fragments():
    """The same failure, but the cache held 20 GiB free in fragments (with
    the device's 19 GiB enough for the tensor: PyTorch's verdict is
    fragmentation): every section says fragmentation (R11) and suggests
    expandable segments."""
    d, out = oom_trace("--oom-fragments")
    text, cases, html = oom_outputs(out)
    remedy = ("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments then grow in place and the cache's "
              "free bytes serve a request of any size (PyTorch's own record says it would have served this one); "
              "or max_split_size_mb to keep large blocks from being split, or torch.cuda.empty_cache() before the "
              "large request")
    check("    verdict: fragmentation (rule R11): fragmentation inside PyTorch's cache (its own record of the "
          "failure, the block layer): it held 20.0 GiB reserved but unallocated and the device 19.0 GiB free, "
          "enough for the 30.0 GiB asked, but no free range that large" in text, text)
    check("    what to try: " + remedy + "\n" in text, text)
    check("expandable_segments:True would have served it" in text, text)
    check("capacity" not in section(text, "Out-of-memory forensics", "Fragmentation"), text)
    eq([(c["verdict"], c["rule"], c["what_to_try"], c["allocator_retries"]) for c in cases],
       [("fragmentation", "R11", remedy, 1)], "JSON")
    own = {"time_ns": 2200000, "verdict": "fragmentation", "unallocated": 20 * GiB,
           "expandable_segments_would_serve": True}
    eq([c["allocator_oom"] for c in cases], [own], "PyTorch's own OOM")
    eq([f["verdict"] for f in cmtest.report(out)["failed"]], ["fragmentation"], "failed[].verdict")
    check(json.dumps(remedy)[1:-1] in html, "the HTML page's data")
    check("reserved but unallocated (its block layer)" not in html, "the HTML page")
    d.done()



def test_oom_block_stranded():
    """A cache fragmented as PyTorch's defaults fragment it (gen_pytorch_trace
    --oom-stranded: its comment works out every figure): R11 by PyTorch's
    record, and the replay of the usual settings says which would have
    served the 30 GiB and with what reserve: max_split_size_mb:128 the
    least (71 GiB), :512 the same, expandable segments 72720 MiB; the
    defaults, roundup_power2_divisions:4 and garbage_collection_threshold:0.6
    run out there. Text, JSON, HTML and check say the same."""
    d, out = oom_trace("--oom-stranded")
    text, cases, html = oom_outputs(out)
    rounded = "no failure, reserved peak 71.0 GiB ({} B), +11.0 GiB against the recorded run"
    remedy = ("set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 (replayed: " + rounded.format(76235669504) +
              "); it also fits under expandable_segments:True (replayed: " + rounded.format(76252446720) +
              ") and max_split_size_mb:512 (replayed: " + rounded.format(76235669504) + ")")
    found = ("replayed (the recorded tensor requests through PyTorch's allocator on the recorded device, room for its "
             "cache 79.0 GiB at the tightest): the recorded settings (the defaults) fail here as the run did; "
             "expandable_segments:True, max_split_size_mb:128 and max_split_size_mb:512 would have served it, "
             "roundup_power2_divisions:4 and garbage_collection_threshold:0.6 would not (fragmentation, each)")
    check("    verdict: fragmentation (rule R11): fragmentation inside PyTorch's cache (its own record of the "
          "failure, the block layer): it held 19.0 GiB reserved but unallocated and the device 19.0 GiB free, "
          "enough for the 30.0 GiB asked, but no free range that large; its reserve counts as live memory in the "
          "device's figures (60.0 GiB live); " + found + "\n" in text, text)
    check("    what to try: " + remedy + "\n" in text, text)
    check("    out of memory at 2.2 ms asking 30.0 GiB (32212254720 B): reserved 60.0 GiB, allocated 41.0 GiB: "
          "fragmentation inside the cache (19.0 GiB free in its segments, the largest free range 18.0 GiB, 30.0 GiB "
          "asked); replayed: max_split_size_mb:128 would have served it (no failure, reserved peak 71.0 GiB "
          "(76235669504 B)), and 2 other settings (expandable_segments:True, max_split_size_mb:512); "
          "roundup_power2_divisions:4 and garbage_collection_threshold:0.6 would not (fragmentation, each)\n" in text,
          text)
    eq([(c["verdict"], c["rule"], c["what_to_try"], c["allocator_retries"]) for c in cases],
       [("fragmentation", "R11", remedy, 1)], "JSON")
    p = cases[0]["replayed"]
    eq((p["reproduced"], p["best"], p["best_peak_reserved_bytes"], p["short_by_bytes"], p["category"], p["found"],
        p["what_to_try"]), (True, "max_split_size_mb:128", 76235669504, None, None, found, remedy), "the replay")
    eq([(x["label"], x["outcome"], x["peak_reserved_bytes"], x["verdict"]) for x in p["settings"]],
       [("the defaults", "fails-here", 60 * GiB, "fragmentation"),
        ("expandable_segments:True", "no-failure", 72720 * MiB, None),
        ("max_split_size_mb:128", "no-failure", 71 * GiB, None),
        ("max_split_size_mb:512", "no-failure", 71 * GiB, None),
        ("roundup_power2_divisions:4", "fails-here", 60 * GiB, "fragmentation"),
        ("garbage_collection_threshold:0.6", "fails-here", 60 * GiB, "fragmentation")], "each setting")
    check(json.dumps(remedy)[1:-1] in html, "the HTML page's data")
    # check: the same verdict and the same advice
    p = cli_check(out)
    check(f"note: the failure at 2.0 ms (cudaMalloc of 30.0 GiB on device 0): fragmentation (rule R11), the verdict "
          f"of the report's out-of-memory forensics; {found}; what to try: {remedy}\n" in p.stdout, p.stdout)
    p = cli_check(out, "--failed-allocations", "all")
    # one failure: PyTorch's retry after releasing its cache is the same one
    eq(re.findall(r"^(\S+): error: (.*) \[failed-allocation\]$", p.stdout, re.M),
       [("/home/u/proj/model.py:42", "cudaMalloc of 30.0 GiB failed with cudaErrorMemoryAllocation (2) on device 0: "
         "fragmentation (rule R11)")], "the finding")
    js = json.loads(cli_check(out, "--format", "json").stdout)
    check(any(n.startswith("the failure at 2.0 ms") and remedy in n for n in js["traces"][0]["notes"]),
          js["traces"][0]["notes"])
    d.done()


def test_oom_block_stranded_twice():
    """The stranded cache's 30 GiB asked again after the program caught the
    error: PyTorch's second OOM record has no replay's facts (each setting's
    first failure is all the replay keeps), so its sentence stays the block
    layer's own; the first keeps them."""
    d, out = oom_trace("--oom-stranded-twice")
    rep = cmtest.report(out)
    fails = rep["blocks"]["devices"][0]["failures"]
    eq([(f["cache"]["ts_ns"], f["replayed"] is not None and f["replayed"]["best"]) for f in fails],
       [(2200000, "max_split_size_mb:128"), (2700000, False)], "the replay's facts on the first failure only")
    eq(fails[1]["explanation"], "reserved 60.0 GiB, allocated 41.0 GiB: fragmentation inside the cache (19.0 GiB free "
       "in its segments, the largest free range 18.0 GiB, 30.0 GiB asked); expandable_segments:True would have "
       "served it", "the second failure, as the block layer says it")
    # the program's second request came after PyTorch raised: its own failure, not the allocator's retry
    # (issue 33: folded as "1 failure, 3 of 4 calls the allocator asking again")
    eq([(f["count"], f["allocator_retries"]) for f in rep["failed"]], [(4, 2)], "4 calls, 2 the allocator's retries")
    eq([(c["rule"], c["allocator_retries"]) for c in rep["oom"]["cases"]], [("R11", 1), ("R11", 1)],
       "two failures, each retried once by PyTorch")
    text = cmtest.cli("report", "--chart-width", "0", out).stdout
    check("\nFailed allocations: 2 (4 calls: 2 of them a caching allocator asking again after a failure, the same "
          "failure)\n  cudaMalloc of 30.0 GiB (32212254720 B) on device 0 failed with cudaErrorMemoryAllocation (2), "
          "4 times (2 of them the allocator's own retry);" in text, text)
    frag = cmtest.cli("frag", out).stdout
    check("Out-of-memory forensics: 2 failures examined of 4 failed allocation calls" in frag, frag)
    check("\n  cudaMalloc of 30.0 GiB (32212254720 B) on device 0 failed at 2.5 ms with cudaErrorMemoryAllocation (2)\n"
          "    the program asked again: PyTorch raised torch.OutOfMemoryError for the same request at 2.2 ms (the "
          "failure at 2.0 ms) and the program went on: a failure of its own, not PyTorch's retry\n" in frag, frag)
    eq(frag.count("the program asked again"), 1, "said of the second failure only")
    d.done()


def test_oom_block_late():
    """PyTorch's OOM record after the thread's next allocation is not the
    driver failures' own: the driver's figures decide (R5), the settings are
    suggested, no allocator_oom; the retry is still the same failure."""
    d, out = oom_trace("--oom-late")
    text, cases, html = oom_outputs(out)
    remedy = "need less memory at once: " + CAPACITY_REMEDY + "; " + SETTINGS
    check(FAILED_AT_2.format(live="60.0 GiB", context="1022.0 MiB", remedy=remedy) in text, text)
    eq([(c["what_to_try"], c["allocator_oom"], c["allocator_retries"]) for c in cases], [(remedy, None, 1)], "JSON")
    d.done()

# ---- a caching allocator under the shim ------------------------------------

def run_train(env=None):
    r = cmtest.run([TRAIN], env=env)
    eq(r.proc.returncode, 0, f"torch_train: {r.proc.stderr}")
    eq(r.proc.stdout, "torch_train done\n", "stdout untouched")
    return r


def test_caching_allocator():
    r = run_train()
    fwd = line_of("torch_train.c", "forward: the tensor kept")
    fwd_call = line_of("torch_train.c", "    forward_step();")
    leak = line_of("torch_train.c", "leak: never freed")
    leak_call = line_of("torch_train.c", "    leak_buffer();")
    out = text_report(r.trace)
    check(re.search(r"\nDevice 0: peak 71.0 MiB \(74448896 B\) in 5 allocations at [0-9.]+ (?:ns|us|ms|s)\n", out), out)
    holders = re.sub(r"at [0-9.]+ (?:ns|us|ms|s)", "at T s", section(out, "  by holder", "  live at exit"))
    eq(holders,
       "  by holder (at the device peak; each holder's own peak):\n"
       "    PyTorch  28.0 MiB (29360128 B); own peak 34.0 MiB (35651584 B) in 3 allocations at T s\n"
       "    cuBLAS   2.0 MiB (2097152 B); own peak 2.0 MiB (2097152 B) in 1 allocation at T s\n"
       "    other    41.0 MiB (42991616 B)\n"
       "    (PyTorch's own peak is its reserved memory at its highest: with its cache on, "
       "torch.cuda.max_memory_reserved())\n", "by holder")
    held = section(out, "Held by PyTorch at exit", "Leaks")
    check(held.startswith("Held by PyTorch at exit (its cache, not counted as leaks; --include-cached counts it): "
                          "28.0 MiB (29360128 B) in 2 segments\n"), held)
    sites = held.split("  the call sites that first needed them:\n")[1]
    shown = [re.sub(r" at \S+/tests/e2e/programs/", " at ", s) for s in sites.splitlines()]
    eq(shown, ["    20.0 MiB (20971520 B) in 1 segment (device, cudaMalloc)",
               "        aten::addmm in libtorch_cpu.so",
               f"        forward_step at torch_train.c:{fwd}",
               f"        main at torch_train.c:{fwd_call}",
               "    8.0 MiB (8388608 B) in 1 segment (device, cudaMalloc)",
               "        AddmmBackward0 in libtorch_cpu.so", ""], "held sites")
    # report applies check's suppressions: cuBLAS's handle state is shown
    # apart, suppressed by the default list's line, and is no leak
    leaks = section(out, "Leaks", "Growing")
    check(leaks.startswith("Leaks (live at exit): 1.0 MiB (1048576 B) in 1 allocation\n"), leaks)
    supp_line = line_of(os.path.join(ROOT, "analyzer", "check", "default.supp"), "leak:cublasCreate")
    suppressed = section(out, "  suppressed (not counted as leaks", "Growing")
    shown = [re.sub(r" at \S+/tests/e2e/programs/", " at ", s) for s in suppressed.splitlines()]
    eq(shown[:4], ["  suppressed (not counted as leaks; as `cumemtrace check` applies them): 2.0 MiB (2097152 B) in "
                   "1 allocation",
                   "    2.0 MiB (2097152 B) in 1 allocation (device, cudaMalloc): suppressed by "
                   f"default.supp:{supp_line} (cuBLAS handle state)",
                   f"        allocate_handle_state at fake_cublas.c:{line_of('fake_cublas.c', 'cudaMalloc(&p, 2u << 20)')}",
                   f"        cublasCreate_v2 at fake_cublas.c:{line_of('fake_cublas.c', 'handle_state = allocate_handle_state();')}"],
       "the suppressed row")
    check("allocated repeatedly" not in leaks, leaks)
    rep = cmtest.report(r.trace, "--no-forensics")
    eq((rep["leaks"]["bytes"], rep["leaks"]["count"]), (1 * MiB, 1), "report's leak total")
    sup = rep["leaks"]["suppressed"]
    eq((sup["bytes"], sup["count"], len(sup["sites"])), (2 * MiB, 1, 1), "report's suppressed total")
    eq(sup["sites"][0]["suppression"], {"pattern": "cublasCreate", "source": "default.supp", "line": supp_line,
                                        "reason": "cuBLAS handle state", "default": True}, "the suppression")
    # and `report --no-default-suppressions` counts it, as check does
    nodef = cmtest.report(r.trace, "--no-forensics", "--no-default-suppressions")
    eq((nodef["leaks"]["bytes"], nodef["leaks"]["suppressed"]["bytes"]), (3 * MiB, 0), "without the defaults")
    # check: the cache is no leak; the program's own 1 MiB is, at its line;
    # cuBLAS's handle is suppressed by default.
    p = cli_check(r.trace)
    eq(p.returncode, 1, f"check: {p.stderr}")
    eq(findings(p, r.trace), f"{REL}torch_train.c:{leak}: error: leaked 1.0 MiB in 1 allocation (cudaMalloc) [leak]\n"
                 f"    #0 leak_buffer at {REL}torch_train.c:{leak}\n"
                 f"    #1 main at {REL}torch_train.c:{leak_call}\n", "check text")
    check("note: PyTorch held 28.0 MiB in 2 segments at exit" in said(p), said(p))
    check(re.search(r"FAIL \S+ \(torch_train, pid \d+\): 1 violation; leaked 1.0 MiB in 1 allocation \(2.0 MiB in "
                    r"1 allocation suppressed\); peak 71.0 MiB on device 0\n$", said(p)), said(p))
    # report and check agree to the byte, with and without the defaults
    for opts, rp in (((), rep), (("--no-default-suppressions",), nodef)):
        ck = json.loads(cli_check(r.trace, "--format", "json", *opts).stdout)["traces"][0]["leaks"]
        eq((ck["bytes"], ck["count"], ck["suppressed_bytes"], ck["suppressed_count"]),
           (rp["leaks"]["bytes"], rp["leaks"]["count"], rp["leaks"]["suppressed"]["bytes"],
            rp["leaks"]["suppressed"]["count"]), f"check and report agree {opts}")
    junit = ET.fromstring(cli_check(r.trace, "--format", "junit").stdout)
    check(junit.find(".//failure").text.startswith(f"{REL}torch_train.c:{leak}: error: leaked 1.0 MiB"),
          "JUnit names the program's line")
    sarif = json.loads(cli_check(r.trace, "--format", "sarif").stdout)
    loc = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    eq((loc["artifactLocation"]["uri"], loc["region"]["startLine"]), (REL + "torch_train.c", leak), "SARIF")
    p = cli_check(r.trace, "--include-cached")
    eq(re.findall(r"^(\S+): error: leaked (.*) \[leak\]$", p.stdout, re.M),
       [(f"{REL}torch_train.c:{fwd}", "20.0 MiB in 1 allocation (cudaMalloc)"),
        ("libtorch_cpu.so", "8.0 MiB in 1 allocation (cudaMalloc)"),
        (f"{REL}torch_train.c:{leak}", "1.0 MiB in 1 allocation (cudaMalloc)")], "--include-cached")
    cmtest.cleanup(r)


def test_no_caching():
    r = run_train({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    fwd = line_of("torch_train.c", "forward: the tensor kept")
    leak = line_of("torch_train.c", "leak: never freed")
    out = text_report(r.trace)
    check("Held by" not in out, f"nothing is cache without caching:\n{out}")
    check(re.search(r"\n    PyTorch  28.0 MiB \(29360128 B\); own peak 28.0 MiB \(29360128 B\) in 2 allocations at "
                    r"[0-9.]+ (?:ns|us|ms|s)\n", out), out)
    p = cli_check(r.trace)
    eq(p.returncode, 1, f"check: {p.stderr}")
    eq(re.findall(r"^(\S+): error: leaked (.*) \[leak\]$", p.stdout, re.M),
       [(f"{REL}torch_train.c:{fwd}", "20.0 MiB in 1 allocation (cudaMalloc)"),
        ("libtorch_cpu.so", "8.0 MiB in 1 allocation (cudaMalloc)"),
        (f"{REL}torch_train.c:{leak}", "1.0 MiB in 1 allocation (cudaMalloc)")], "leaks without the cache")
    check("PyTorch held" not in said(p), said(p))
    cmtest.cleanup(r)


def test_no_caching_churn():
    """gen_pytorch_trace --uncached-churn: PyTorch with its cache off makes a
    tensor of 1 to 12 MiB a step, each freed at once. The allocation calls,
    the short-lived ones and the size churn are PyTorch's cudaMalloc per
    tensor: what to change is its cache being off, not its cache's settings
    ("PyTorch's caching allocator made these: ... expandable_segments") nor
    the program's buffers; said in full once."""
    d = Scratch()
    out = d("uncached_churn.bin")
    p = subprocess.run([GEN, out, "--uncached-churn"], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_pytorch_trace --uncached-churn: {p.stderr}")
    remedy = ("unset PYTORCH_NO_CUDA_MEMORY_CACHING (set it only to find leaks): PyTorch's cache then serves these "
              "tensors from the segments it keeps, without a cudaMalloc and cudaFree each")
    frames = ("      aten::addmm in libtorch_cpu.so\n      forward at /home/u/proj/model.py:42\n"
              "      train_step at /home/u/proj/train.py:55\n      <module> at /home/u/proj/train.py:80\n")
    full = f"    PyTorch ran with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1): a cudaMalloc and cudaFree per " \
           f"tensor; what to try: {remedy}\n"
    brief = "    PyTorch ran with its cache off: what to try is under Most allocation calls above\n"
    text = cmtest.cli("report", "--chart-width", "0", out).stdout
    check("\n  12 calls (cudaMalloc), 78.0 MiB in all; 11 short-lived\n" + frames + full in text, text)
    check("\n  11 of 12 calls (cudaMalloc), 66.0 MiB in all, live 100.0 us on average\n" + frames + brief in text,
          text)
    check("\n  12 distinct sizes (1.0 MiB to 12.0 MiB) in 12 allocations, 12 released during the run after 100.0 us "
          "on average: short-lived\n" + frames + brief in text, text)
    eq(text.count(remedy), 1, "the remedy said once")
    check("caching allocator made these" not in text and "expandable_segments:True (segments" not in text, text)
    frag = cmtest.cli("frag", out).stdout
    check(frames + "    PyTorch ran with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1): each of these is one "
          f"tensor's own cudaMalloc and cudaFree; what to try: {remedy}\n" in frag, frag)
    churn = cmtest.report(out)["churn"]
    eq([(c["distinct_sizes"], c["allocator"], c["what_to_try"]) for c in churn], [(12, "PyTorch", remedy)], "JSON")
    d.done()


# ---- diff applies report's suppressions --------------------------------------

def test_diff_suppressions():
    """diff's leaks per site are report's for each trace: cuBLAS's handle
    state, suppressed by the built-in list, is compared apart and not as
    leaked; --no-default-suppressions counts it, as report does."""
    r = run_train()
    nc = run_train({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    d = Scratch()
    py = python_trace(d)
    supp_line = line_of(os.path.join(ROOT, "analyzer", "check", "default.supp"), "leak:cublasCreate")

    def totals(p):
        eq(p.returncode, 0, f"diff: {p.stderr}")
        return p.stdout[p.stdout.index("\n\n") + 2:p.stdout.index("  allocation calls:")]

    # one program, with and without PyTorch's cache: the handle is the same
    # 2 MiB suppressed in both, no leak in either
    eq(totals(cmtest.cli("diff", r.trace, nc.trace)),
       "  device 0 peak:     71.0 MiB (unchanged)\n"
       "  leaked (at exit):  1.0 MiB -> 29.0 MiB (+28.0 MiB)\n"
       "  suppressed leaks:  2.0 MiB (unchanged); not counted as leaked\n", "totals")
    eq(totals(cmtest.cli("diff", "--no-default-suppressions", r.trace, nc.trace)),
       "  device 0 peak:     71.0 MiB (unchanged)\n"
       "  leaked (at exit):  3.0 MiB -> 31.0 MiB (+28.0 MiB)\n", "totals without the defaults")
    # a run without cuBLAS against one with: the handle is a suppressed
    # change, listed apart, named by the default list's line
    p = cmtest.cli("diff", py, r.trace)
    eq(totals(p), "  device 0 peak:     69.0 MiB -> 71.0 MiB (+2.0 MiB)\n"
                  "  leaked (at exit):  1.5 MiB -> 1.0 MiB (-512.0 KiB)\n"
                  "  suppressed leaks:  0 B -> 2.0 MiB (+2.0 MiB); not counted as leaked\n", "totals, two programs")
    main = p.stdout[p.stdout.index("\nCall sites that changed"):p.stdout.index("\nSuppressed leaks")]
    check("leaked 0 B -> 2.0 MiB" not in main and "leaked 0 B -> 1.0 MiB (+1.0 MiB)" in main, main)
    shown = [re.sub(r" at \S+/tests/e2e/programs/", " at ", s)
             for s in p.stdout[p.stdout.index("\nSuppressed leaks") + 1:].splitlines()]
    eq(shown, ["Suppressed leaks that changed (live at exit but matched by a leak suppression, as `cumemtrace report` "
               "and `check` apply them; not counted as leaked): 1 of 11",
               "    suppressed 0 B -> 2.0 MiB (+2.0 MiB) in 0 -> 1 (+1) allocations (cudaMalloc); suppressed by "
               f"default.supp:{supp_line} (cuBLAS handle state)",
               f"        allocate_handle_state at fake_cublas.c:{line_of('fake_cublas.c', 'cudaMalloc(&p, 2u << 20)')}",
               "        cublasCreate_v2 at "
               f"fake_cublas.c:{line_of('fake_cublas.c', 'handle_state = allocate_handle_state();')}",
               f"        setup at torch_train.c:{line_of('torch_train.c', 'get_blas_handle();')}",
               f"        main at torch_train.c:{line_of('torch_train.c', '    setup();')}"], "suppressed section")
    # JSON: each run's leaks, per site and in all, and its suppressed ones
    # are report's to the byte, with and without the defaults
    for opts in ((), ("--no-default-suppressions",)):
        q = cmtest.cli("diff", "--json", *opts, py, r.trace)
        eq(q.returncode, 0, f"diff --json: {q.stderr}")
        dj = json.loads(q.stdout)
        for side, trace in (("old", py), ("new", r.trace)):
            rep = cmtest.report(trace, "--no-forensics", *opts)
            eq((dj[side]["leak_bytes"], dj[side]["leak_count"], dj[side]["suppressed_bytes"],
                dj[side]["suppressed_count"]),
               (rep["leaks"]["bytes"], rep["leaks"]["count"], rep["leaks"]["suppressed"]["bytes"],
                rep["leaks"]["suppressed"]["count"]), f"{side} totals {opts}")
            eq(sorted(s["leak_bytes"][side] for s in dj["sites"] if s["leak_bytes"][side]),
               sorted(s["bytes"] for s in rep["leaks"]["sites"]), f"{side} leaks per site {opts}")
            eq(sorted(s["suppressed_bytes"][side] for s in dj["suppressed_sites"] if s["suppressed_bytes"][side]),
               sorted(s["bytes"] for s in rep["leaks"]["suppressed"]["sites"]), f"{side} suppressed per site {opts}")
        want = [] if opts else [{"api": "cudaMalloc",
                                 "suppressed_bytes": {"old": 0, "new": 2 * MiB, "change": 2 * MiB},
                                 "suppressed_count": {"old": 0, "new": 1, "change": 1},
                                 "suppression": {"pattern": "cublasCreate", "source": "default.supp",
                                                 "line": supp_line, "reason": "cuBLAS handle state",
                                                 "default": True}}]
        eq([{k: v for k, v in s.items() if k != "frames"} for s in dj["suppressed_sites"]], want,
           f"suppressed_sites {opts}")
        eq((dj["new"]["leak_bytes"], dj["new"]["suppressed_bytes"]),
           (3 * MiB, 0) if opts else (1 * MiB, 2 * MiB), f"NEW's leaks {opts}")
    # the same suppressions as report's: a file given, and the variable
    supp = d("mine.supp")
    with open(supp, "w") as f:
        f.write("# the program's own buffer\nleak:leak_buffer\n")
    for opts, env in ((("--suppressions", supp), None), ((), {"CUMEMTRACE_SUPPRESSIONS": supp})):
        q = cmtest.cli("diff", "--json", *opts, py, r.trace, env=env)
        eq(q.returncode, 0, f"diff --json {opts}: {q.stderr}")
        dj = json.loads(q.stdout)
        eq((dj["new"]["leak_bytes"], dj["new"]["suppressed_bytes"], dj["new"]["suppressed_count"]),
           (0, 3 * MiB, 2), f"the file's suppression too {opts} {env}")
        eq(sorted((s["suppressed_bytes"]["new"], s["suppression"]["source"], s["suppression"]["reason"])
                  for s in dj["suppressed_sites"]),
           [(1 * MiB, supp, "the program's own buffer"), (2 * MiB, "default.supp", "cuBLAS handle state")],
           f"named by their files {opts} {env}")
    q = cmtest.cli("diff", "--suppressions", d("absent.supp"), py, r.trace)
    eq((q.returncode, q.stdout), (2, ""), "a suppressions file that cannot be read")
    check(q.stderr.startswith(f"cumemtrace: diff: cannot read the suppressions file {d('absent.supp')}: "), q.stderr)
    d.done()
    cmtest.cleanup(r)
    cmtest.cleanup(nc)

if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
