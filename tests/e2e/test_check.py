# SPDX-License-Identifier: MIT
"""End-to-end: `cumemtrace check` and `cumemtrace run --check` on programs
run on the simulated device. Every status, message and figure asserted
follows from the programs' sources (tests/e2e/programs/gate.c says what each
action allocates)."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

SRC = os.path.join(os.path.dirname(__file__), "programs")
ROOT = os.environ["CMT_SOURCE_ROOT"]
GATE = cmtest.program("gate")
GATE_SHIFTED = os.environ["CMT_GATE_SHIFTED"]
REL = "tests/e2e/programs/"  # sources as printed with --source-root ROOT
LEAK_ONE = 'check(cudaMalloc(&p, 1 * MiB), "leak_one")'
LEAK_NEW = 'check(cudaMalloc(&p, 1 * MiB), "leak_new")'


def line_of(source, text, nth=1):
    """The line of the nth line of source containing text."""
    seen = 0
    with open(os.path.join(SRC, source)) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                seen += 1
                if seen == nth:
                    return i
    raise cmtest.Failure(f"{text!r} not in {source}")


def gate_line(text, nth=1, shifted=False):
    n = line_of("gate.c", text, nth)
    if shifted:  # "#line 1000" stands right after the line of its #ifdef
        n = 1000 + n - line_of("gate.c", "#line 1000") - 1
    return n


class Dir:
    """A scratch directory for traces and files of one test."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="cmt-check-")

    def __call__(self, name):
        return os.path.join(self.path, name)

    def traces(self, pattern="*.bin"):
        return sorted(glob.glob(os.path.join(self.path, pattern)))

    def write(self, name, text):
        with open(self(name), "w") as f:
            f.write(text)
        return self(name)

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)


def trace_of(d, argv, name, env=None, expect_status=0):
    """Runs argv under the shim; returns the path of its one trace."""
    extra = {"CUMEMTRACE_OUTPUT": d(name + ".%p.bin"), "CUMEMTRACE_QUIET": "1"}
    extra.update(env or {})
    p = subprocess.run(argv, env=cmtest.sim_env(extra), capture_output=True, text=True, timeout=120)
    eq(p.returncode, expect_status, f"status of {argv}: {p.stderr}")
    found = d.traces(name + ".*.bin")
    eq(len(found), 1, f"traces of {name}")
    return found[0]


def check_cmd(*args, env=None):
    return cmtest.cli("check", "--source-root", ROOT, *args, env=env)


def run_check(d, argv, *opts, env=None, template="t.%p.bin"):
    """`cumemtrace run -o DIR/TEMPLATE --check OPTS -- ARGV`."""
    extra = {"CUMEMTRACE_QUIET": "1"}
    extra.update(env or {})
    return subprocess.run([cmtest.CLI, "run", "-o", d(template), "--check", "--source-root", ROOT, *opts, "--",
                           *argv], env=cmtest.sim_env(extra, preload=False), capture_output=True, text=True,
                          timeout=120)


def pid_of(trace):
    return int(re.search(r"\.(\d+)\.bin$", trace).group(1))


def stack(*frames):
    return "".join(f"    #{i} {f}\n" for i, f in enumerate(frames))


def leak_peak_findings(level, suffix=""):
    """The three leak sites of leak_peak (64 MiB once, 3 x 1 MiB and 2 x 1 MiB),
    as check prints them."""
    keep = line_of("leak_peak.c", "cudaMalloc(&p, 64 * MiB)")
    per = line_of("leak_peak.c", "cudaMalloc(&p, 1 * MiB)")
    main_keep = line_of("leak_peak.c", "keep_forever();")
    calls = [i for i, l in enumerate(open(os.path.join(SRC, "leak_peak.c")), 1) if l.strip() == "leak_per_iteration();"]
    lp = REL + "leak_peak.c"
    return (f"{lp}:{keep}: {level}: leaked 64.0 MiB in 1 allocation (cudaMalloc){suffix} [leak]\n"
            + stack(f"keep_forever at {lp}:{keep}", f"main at {lp}:{main_keep}")
            + f"{lp}:{per}: {level}: leaked 3.0 MiB in 3 allocations (cudaMalloc){suffix} [leak]\n"
            + stack(f"leak_per_iteration at {lp}:{per}", f"main at {lp}:{calls[0]}")
            + f"{lp}:{per}: {level}: leaked 2.0 MiB in 2 allocations (cudaMalloc){suffix} [leak]\n"
            + stack(f"leak_per_iteration at {lp}:{per}", f"main at {lp}:{calls[1]}"))


def result(word, trace, name, rest):
    return f"cumemtrace check: {word} {trace} ({name}, pid {pid_of(trace)}): {rest}\n"


# ---- a clean program --------------------------------------------------------

def test_clean():
    d = Dir()
    p = run_check(d, [GATE, "clean"])
    eq(p.returncode, 0, f"status: {p.stderr}")
    eq(p.stdout, "gate done\n", "the program's stdout is untouched")
    traces = re.findall(r"PASS (\S+) ", p.stderr)
    eq(len(traces), 1, f"one trace checked: {p.stderr}")
    eq(p.stderr, result("PASS", traces[0], "gate clean", "no leaks; peak 2.0 MiB on device 0"), "stderr")
    eq(d.traces(), [], "a clean run leaves no trace behind")
    # 8 threads allocating and freeing: clean too.
    p = run_check(d, [cmtest.program("threads"), "8", "200"])
    eq(p.returncode, 0, f"threads: {p.stderr}")
    check(re.fullmatch(r"cumemtrace check: PASS \S+ \(threads 8 200, pid \d+\): no leaks; peak [0-9.]+ (KiB|MiB) "
                       r"on device 0\n", p.stderr), p.stderr)
    # --keep-traces keeps it, and `check` says the same of it.
    p = run_check(d, [GATE, "clean"], "--keep-traces")
    eq(p.returncode, 0, "kept")
    t = d.traces()
    eq(len(t), 1, "--keep-traces keeps the trace")
    c = check_cmd(t[0])
    eq((c.returncode, c.stdout, c.stderr), (0, result("PASS", t[0], "gate clean", "no leaks; peak 2.0 MiB on device 0"), ""),
       "check of a clean trace")
    d.cleanup()


# ---- leaks over and under each limit -----------------------------------------

def test_leak_limits():
    d = Dir()
    t = trace_of(d, [cmtest.program("leak_peak")], "lp")
    totals = "leaked 69.0 MiB in 6 allocations; peak 115.0 MiB on device 0"
    fail = result("FAIL", t, "leak_peak", "3 violations; " + totals)
    ok = result("PASS", t, "leak_peak", totals)
    # Nothing may leak by default.
    c = check_cmd(t)
    eq((c.returncode, c.stderr), (1, ""), "default limits")
    eq(c.stdout, leak_peak_findings("error") + fail, "default limits: output")
    tolerated = leak_peak_findings("warning", ", within the leak limits") + ok
    # Bytes: 69 MiB exactly is allowed, one byte less is not; the count limit is lifted.
    c = check_cmd("--max-leak-bytes", "69MiB", t)
    eq((c.returncode, c.stdout), (0, tolerated), "--max-leak-bytes 69MiB")
    c = check_cmd("--max-leak-bytes", str(69 * MiB - 1), t)
    eq((c.returncode, c.stdout), (1, leak_peak_findings("error") + fail), "--max-leak-bytes 69 MiB - 1")
    # Count: 6 allocations allowed, 5 not; the byte limit is lifted.
    c = check_cmd("--max-leak-count", "6", t)
    eq((c.returncode, c.stdout), (0, tolerated), "--max-leak-count 6")
    c = check_cmd("--max-leak-count", "5", t)
    eq((c.returncode, c.stdout), (1, leak_peak_findings("error") + fail), "--max-leak-count 5")
    # Both given: both apply.
    c = check_cmd("--max-leak-bytes", "69MiB", "--max-leak-count", "5", t)
    eq(c.returncode, 1, "69 MiB allowed but 5 allocations not")
    c = check_cmd("--max-leak-bytes", "1GiB", "--max-leak-count", "6", t)
    eq(c.returncode, 0, "both within")
    # The status of a violation can be chosen.
    c = check_cmd("--error-exitcode", "23", t)
    eq(c.returncode, 23, "--error-exitcode")
    # run --check: the same limits on the program's own trace.
    p = run_check(d, [cmtest.program("leak_peak")], "--max-leak-bytes", "68MiB")
    eq(p.returncode, 1, "run --check over the limit")
    eq(p.stdout, "leak_peak done\n", "program output")
    check(p.stderr.endswith("cumemtrace run: leak_peak exited with status 0; exiting with status 1: the check found "
                            "violations\n"), p.stderr)
    p = run_check(d, [cmtest.program("leak_peak")], "--max-leak-bytes", "69MiB")
    eq(p.returncode, 0, f"run --check within the limit: {p.stderr}")
    d.cleanup()


# ---- peaks ----------------------------------------------------------------

def test_peak_budget():
    d = Dir()
    t = trace_of(d, [cmtest.program("leak_peak")], "lp")
    lp = REL + "leak_peak.c"
    keep = line_of("leak_peak.c", "cudaMalloc(&p, 64 * MiB)")
    lift = ["--max-leak-bytes", "1GiB"]
    c = check_cmd(*lift, "--max-peak", "115MiB", t)
    eq(c.returncode, 0, "a peak equal to the budget passes")
    c = check_cmd(*lift, "--max-peak", "114MiB", t)
    eq(c.returncode, 1, "peak over the budget")
    expect = (f"{lp}:{keep}: error: device 0 peaked at 115.0 MiB (120586240 B), over --max-peak 114.0 MiB (119537664 B); the "
              "largest call site live then: 64.0 MiB in 1 allocation (cudaMalloc) [peak]\n"
              + stack(f"keep_forever at {lp}:{keep}", f"main at {lp}:{line_of('leak_peak.c', 'keep_forever();')}")
              + f"    also live at the peak: 48.0 MiB in 3 allocations (cudaMalloc) at {lp}:"
              f"{line_of('leak_peak.c', 'cudaMalloc(&p[i], 16 * MiB)')}\n"
              f"    also live at the peak: 3.0 MiB in 3 allocations (cudaMalloc) at {lp}:"
              f"{line_of('leak_peak.c', 'cudaMalloc(&p, 1 * MiB)')}\n")
    check(c.stdout.startswith(expect), c.stdout)
    check(c.stdout.endswith(result("FAIL", t, "leak_peak", "1 violation; leaked 69.0 MiB in 6 allocations; peak "
                                   "115.0 MiB on device 0")), c.stdout)
    # A limit for device 1 does not apply to device 0; a device's own limit
    # wins over the one for every device.
    c = check_cmd(*lift, "--max-peak", "1=1MiB", t)
    eq(c.returncode, 0, "limit for another device")
    # ... and says that it checked nothing (the trace has no device 1).
    check("--max-peak 1=1.0 MiB (1048576 B) checked nothing: the trace allocated no device memory on device 1"
          in c.stdout, c.stdout)
    c = check_cmd(*lift, "--max-peak", "0=100MiB", "--max-peak", "1GiB", t)
    eq(c.returncode, 1, "device 0's own limit")
    c = check_cmd(*lift, "--max-peak", "0=1GiB", "--max-peak", "1MiB", t)
    eq(c.returncode, 0, "device 0's own limit, larger than the general one")
    c = check_cmd(*lift, "--max-peak", "120586239", t)
    eq(c.returncode, 1, "one byte over")
    # run --check with a budget.
    p = run_check(d, [GATE, "peak:12"], "--max-peak", "11.5MiB")
    eq(p.returncode, 1, f"run --check over budget: {p.stderr}")
    check(f"{REL}gate.c:{gate_line('cudaMalloc(&p, (size_t)mib * MiB)')}: error: device 0 peaked at 12.0 MiB "
          "(12582912 B), over --max-peak 11.5 MiB (12058624 B); the largest call site live then: 12.0 MiB in 1 allocation "
          "(cudaMalloc) [peak]\n" in p.stderr, p.stderr)
    p = run_check(d, [GATE, "peak:12"], "--max-peak", "12MiB")
    eq(p.returncode, 0, "run --check within budget")
    d.cleanup()


# ---- failed allocations ------------------------------------------------------

def test_failed_allocations():
    """A failed allocation fails the check when the program did not survive
    it (nothing allocated after it, and an exit status other than 0, or no
    exit); one it caught is a note; --failed-allocations all|none."""
    d = Dir()
    line = gate_line("cudaMalloc(&p, (size_t)1 << 40)")
    where = stack(f"try_too_big at {REL}gate.c:{line}", f"run_action at {REL}gate.c:{gate_line('try_too_big();')}",
                  f"main at {REL}gate.c:{gate_line('run_action(argv[i]);')}")
    error = (f"{REL}gate.c:{line}: error: cudaMalloc of 1.0 TiB failed with cudaErrorMemoryAllocation (2) on "
             "device 0: capacity (rule R4){fate} [failed-allocation]\n")
    # Caught: the program exits with status 0 after it.
    t = trace_of(d, [GATE, "oom"], "oom")
    c = check_cmd(t)
    eq(c.returncode, 0, "a failure the program survived is not checked by default")
    # the time of the failure, as the report's forensics give it
    case = json.loads(cmtest.cli("report", "--format", "json", t).stdout)["oom"]["cases"][0]
    eq((case["verdict"], case["rule"]), ("capacity", "R4"), "the report's verdict")

    def verdict(trace):
        when = next(x.split(" failed at ")[1].split(" with ")[0] for x in cmtest.cli("report", trace).stdout.splitlines()
                    if " failed at " in x)
        return (f"{trace}: note: the failure at {when} (cudaMalloc of 1.0 TiB on device 0): capacity (rule R4), the "
                "verdict of the report's out-of-memory forensics (which says what to try)\n")
    eq(c.stdout, verdict(t) + f"{t}: note: 1 allocation call failed and the program went on (it exited with status 0): "
       "not checked (--failed-allocations all fails on them)\n"
       + result("PASS", t, "gate oom", "no leaks; no device memory used"), "note: the report's verdict, then the count")
    c = check_cmd("--failed-allocations", "all", t)
    eq(c.returncode, 1, "--failed-allocations all")
    eq(c.stdout, error.format(fate="") + where + verdict(t)
       + result("FAIL", t, "gate oom", "1 violation; no leaks; no device memory used"), "failure")
    # The old name, documented before: the same, with a deprecation line.
    c = check_cmd("--no-failed-allocations", t)
    eq((c.returncode, c.stderr), (1, "cumemtrace: check: --no-failed-allocations is deprecated (it fails on every "
                                     "failed allocation): use --failed-allocations all\n"), "deprecated")
    # Caught and gone on: it allocated after the failure.
    t = trace_of(d, [GATE, "oom", "leak:1"], "went_on")
    c = check_cmd("--max-leak-bytes", "1MiB", t)
    eq(c.returncode, 0, c.stdout)
    check(f"{t}: note: 1 allocation call failed and the program went on (it allocated again after them): not "
          "checked (--failed-allocations all fails on them)\n" in c.stdout, c.stdout)
    # Not survived: nothing allocated after it, then exit(3) or a crash.
    t = trace_of(d, [GATE, "oom", "exit:3"], "fatal", expect_status=3)
    c = check_cmd(t)
    eq(c.returncode, 1, "a failure the program did not survive fails by default")
    eq(c.stdout, error.format(fate="; the program allocated nothing after it and exited with status 3") + where
       + verdict(t) + result("FAIL", t, "gate oom exit:3", "1 violation; no leaks; no device memory used"), "fatal")
    c = check_cmd("--failed-allocations", "none", t)
    eq(c.returncode, 0, "--failed-allocations none")
    check(f"{t}: note: 1 allocation call failed; not checked (--failed-allocations none)\n" in c.stdout, c.stdout)
    t = trace_of(d, [GATE, "oom", "segv"], "crash", expect_status=-signal.SIGSEGV)
    c = check_cmd(t)
    eq(c.returncode, 1, "a crash after the failure")
    check(error.format(fate="; the program allocated nothing after it and did not exit normally") in c.stdout,
          c.stdout)
    c = check_cmd("--failed-allocations", "some", t)
    eq((c.returncode, c.stderr), (2, "cumemtrace: check: --failed-allocations takes fatal, all or none; got 'some'\n"),
       "bad value")
    d.cleanup()


# ---- suppressions ------------------------------------------------------------

def test_suppressions():
    d = Dir()
    t = trace_of(d, [GATE, "leak:1", "vendor"], "v")
    vendor_line = line_of("vendor_lib.c", "cudaMalloc(&p, bytes)")
    c = check_cmd(t)
    eq(c.returncode, 1, "two leaks")
    check(c.stdout.startswith(f"{REL}vendor_lib.c:{vendor_line}: error: leaked 4.0 MiB in 1 allocation (cudaMalloc) "
                              f"[leak]\n" + stack(f"vendor_alloc at {REL}vendor_lib.c:{vendor_line}",
                                                  f"vendor_init_workspace at {REL}vendor_lib.c:"
                                                  f"{line_of('vendor_lib.c', 'workspace = vendor_alloc')}")), c.stdout)
    # A file with comments and blank lines; the pattern names the library's
    # entry point, one frame above the allocation.
    supp = d.write("app.supp", "# the vendor keeps its workspace until exit\n\n   leak:vendor_init_workspace  \n"
                               "leak:never_called_anywhere\n")
    c = check_cmd("--suppressions", supp, t)
    eq(c.returncode, 1, "leak_one still fails")
    only_leak_one = (f"{REL}gate.c:{gate_line(LEAK_ONE)}: error: leaked 1.0 MiB "
                     "in 1 allocation (cudaMalloc) [leak]\n")
    check(c.stdout.startswith(only_leak_one), c.stdout)
    eq(c.stdout.count(": error: "), 1, "one violation left")
    check(c.stdout.endswith(result("FAIL", t, "gate leak:1 vendor", "1 violation; leaked 1.0 MiB in 1 allocation "
                                   "(4.0 MiB in 1 allocation suppressed); peak 5.0 MiB on device 0")), c.stdout)
    # Every field a pattern may match, LeakSanitizer's anchors and wildcards.
    matching = ["vendor_init_workspace", "vendor_alloc", "vendor_lib.c", REL + "vendor_lib.c", "libcmt_vendor",
                "^libcmt_vendor.so$", "^vendor_init", "workspace$", "vendor*space", "^vendor_*_workspace$",
                "^_start$",  # a folded frame: matching sees the whole stack
                ]
    for pattern in matching:
        s = d.write("one.supp", f"leak:{pattern}\n")
        c = check_cmd("--suppressions", s, t)
        check("(4.0 MiB in 1 allocation suppressed)" in c.stdout or "(5.0 MiB in 2 allocations suppressed)"
              in c.stdout, f"leak:{pattern} suppresses the vendor's leak: {c.stdout}")
    for pattern in ["^init_workspace", "vendor_init$", "libcmt_vendor.so.2", "vendor_lib.cc", "libcumemtrace",
                    "^cudaMalloc$"]:
        s = d.write("one.supp", f"leak:{pattern}\n")
        c = check_cmd("--suppressions", s, t)
        check("suppressed" not in c.stdout, f"leak:{pattern} matches nothing: {c.stdout}")
        eq(c.returncode, 1, f"leak:{pattern}")
    # Both suppressed, one through CUMEMTRACE_SUPPRESSIONS (two files, ':').
    second = d.write("second.supp", "leak:leak_one\n")
    c = check_cmd(t, env={"CUMEMTRACE_SUPPRESSIONS": f"{supp}:{second}"})
    eq(c.returncode, 0, "everything suppressed")
    eq(c.stdout, result("PASS", t, "gate leak:1 vendor", "no leaks (5.0 MiB in 2 allocations suppressed); peak 5.0 "
                        "MiB on device 0"), "suppressed through the environment")
    # --print-suppressions: what was used, and the unused ones (the default
    # list's entries among them).
    c = check_cmd("--suppressions", supp, "--suppressions", second, "--print-suppressions", t)
    eq(c.returncode, 0, "print-suppressions")
    default_lines = [(n, l.strip()) for n, l in enumerate(open(os.path.join(ROOT, "analyzer", "check", "default.supp")), 1)
                     if l.startswith("leak:")]
    expect = (result("PASS", t, "gate leak:1 vendor", "no leaks (5.0 MiB in 2 allocations suppressed); peak 5.0 MiB "
                     "on device 0")
              + f"cumemtrace check: suppressions used: 2 of {3 + len(default_lines)}\n"
              "  allocations       bytes  suppression\n"
              f"            1     4.0 MiB  leak:vendor_init_workspace ({supp}:3)\n"
              f"            1     1.0 MiB  leak:leak_one ({second}:1)\n"
              "cumemtrace check: suppressions not used:\n"
              f"  leak:never_called_anywhere ({supp}:4)\n"
              + "".join(f"  {l} (default list, line {n})\n" for n, l in default_lines))
    eq(c.stdout, expect, "--print-suppressions")
    # Broken files are usage errors (status 2), before anything is checked.
    for text, message in [
        ("# ok\nleak\n", "{f}:2: expected leak:PATTERN, got 'leak'"),
        ("race:foo\n", "{f}:1: unknown suppression type 'race' (cumemtrace understands leak:PATTERN)"),
        ("leak:   \n", "{f}:1: empty pattern after 'leak:'; write leak:PATTERN, such as leak:libfoo.so"),
        ("{\n   name\n   Memcheck:Leak\n}\n", "{f}:1: this looks like a valgrind suppression; cumemtrace reads "
                                              "lines of the form leak:PATTERN"),
    ]:
        bad = d.write("bad.supp", text)
        c = check_cmd("--suppressions", bad, t)
        eq((c.returncode, c.stdout, c.stderr), (2, "", "cumemtrace: check: " + message.format(f=bad) + "\n"),
           f"bad suppressions {text!r}")
    c = check_cmd("--suppressions", d("missing.supp"), t)
    eq((c.returncode, c.stderr), (2, f"cumemtrace: check: cannot read the suppressions file {d('missing.supp')}: No "
                                     "such file or directory; check the path\n"), "missing suppressions file")
    c = check_cmd(t, env={"CUMEMTRACE_SUPPRESSIONS": d("missing.supp")})
    eq((c.returncode, c.stderr), (2, f"cumemtrace: check: cannot read the suppressions file {d('missing.supp')}: No "
                                     "such file or directory; check the path (named in CUMEMTRACE_SUPPRESSIONS)\n"),
       "missing, env")
    d.cleanup()


def test_default_suppressions():
    d = Dir()
    t = trace_of(d, [GATE, "cublas"], "cublas")
    c = check_cmd(t)
    eq((c.returncode, c.stdout), (0, result("PASS", t, "gate cublas", "no leaks (2.0 MiB in 1 allocation suppressed); "
                                            "peak 2.0 MiB on device 0")), "the default list suppresses the cuBLAS handle state")
    c = check_cmd("--no-default-suppressions", t)
    eq(c.returncode, 1, "--no-default-suppressions")
    line = line_of("fake_cublas.c", "cudaMalloc(&p, 2u << 20)")
    check(c.stdout.startswith(f"{REL}fake_cublas.c:{line}: error: leaked 2.0 MiB in 1 allocation (cudaMalloc) [leak]\n"),
          c.stdout)
    c = check_cmd("--print-suppressions", t)
    n = line_of(os.path.join(ROOT, "analyzer", "check", "default.supp"), "leak:cublasCreate")
    check(f"            1     2.0 MiB  leak:cublasCreate (default list, line {n})\n" in c.stdout, c.stdout)
    c = check_cmd("--print-suppressions", "--no-default-suppressions", t)
    check("cumemtrace check: suppressions used: 0 of 0\n" in c.stdout, c.stdout)
    d.cleanup()


# ---- baselines -----------------------------------------------------------

def test_baseline():
    d = Dir()
    base = trace_of(d, [GATE, "leak:2"], "base")
    one = gate_line(LEAK_ONE)
    new = gate_line(LEAK_NEW)
    # A new call site leaks (and the stack ids differ from the baseline's:
    # leak_new is interned first here).
    t = trace_of(d, [GATE, "new:1", "leak:2"], "new")
    c = check_cmd("--baseline", base, t)
    eq(c.returncode, 1, "new leak")
    eq(c.stdout,
       f"{REL}gate.c:{new}: error: leaked 1.0 MiB in 1 allocation (cudaMalloc), a new leak: this call site does not "
       "leak in the baseline [new-leak]\n"
       + stack(f"leak_new at {REL}gate.c:{new}", f"run_action at {REL}gate.c:{gate_line('leak_new();')}",
               f"main at {REL}gate.c:{gate_line('run_action(argv[i]);')}")
       + f"{REL}gate.c:{one}: warning: leaked 2.0 MiB in 2 allocations (cudaMalloc), known from the baseline (2.0 MiB "
       "in 2 allocations there) [leak]\n"
       + stack(f"leak_one at {REL}gate.c:{one}", f"run_action at {REL}gate.c:{gate_line('leak_one();')}",
               f"main at {REL}gate.c:{gate_line('run_action(argv[i]);')}")
       + result("FAIL", t, "gate new:1 leak:2", "1 violation; leaked 3.0 MiB in 3 allocations; peak 3.0 MiB on device 0"),
       "new leak output")
    # The same site leaking more.
    t = trace_of(d, [GATE, "leak:3"], "more")
    c = check_cmd("--baseline", base, t)
    eq(c.returncode, 1, "larger leak")
    check(c.stdout.startswith(f"{REL}gate.c:{one}: error: leaked 3.0 MiB in 3 allocations (cudaMalloc), more than the "
                              "baseline's 2.0 MiB in 2 allocations [leak-growth]\n"), c.stdout)
    # The same or less: known, not a violation.
    for actions, status in [(["leak:2"], 0), (["leak:1"], 0), (["clean"], 0)]:
        t = trace_of(d, [GATE, *actions], "same" + actions[0].replace(":", ""))
        c = check_cmd("--baseline", base, t)
        eq(c.returncode, status, f"baseline vs {actions}: {c.stdout}")
    # An edit moved every line (the shifted build): still known, matched by
    # function; a larger leak there still fails.
    t = trace_of(d, [GATE_SHIFTED, "leak:2"], "shifted")
    c = check_cmd("--baseline", base, t)
    eq(c.returncode, 0, f"moved lines: {c.stdout}")
    check(f"{REL}gate.c:{gate_line(LEAK_ONE, shifted=True)}: warning: leaked "
          "2.0 MiB in 2 allocations (cudaMalloc), known from the baseline (2.0 MiB in 2 allocations there; matched "
          "by function: the lines moved) [leak]\n" in c.stdout, c.stdout)
    t = trace_of(d, [GATE_SHIFTED, "leak:3"], "shifted3")
    c = check_cmd("--baseline", base, t)
    eq(c.returncode, 1, "moved lines, larger")
    check("more than the baseline's 2.0 MiB in 2 allocations (matched by function: the lines moved) [leak-growth]"
          in c.stdout, c.stdout)
    # Explicit limits still cap the total.
    t = trace_of(d, [GATE, "leak:2"], "capped")
    c = check_cmd("--baseline", base, "--max-leak-bytes", "1MiB", t)
    eq(c.returncode, 1, "baseline and an explicit limit")
    check(f"{t}: error: leaked 2.0 MiB in 2 allocations in all, over --max-leak-bytes 1.0 MiB [leak]\n" in c.stdout,
          c.stdout)
    # Peak growth: 10 MiB in the baseline; 12 MiB is 20% more (allowed), 13 MiB is not.
    pbase = trace_of(d, [GATE, "peak:10"], "pbase")
    t12 = trace_of(d, [GATE, "peak:12"], "p12")
    t13 = trace_of(d, [GATE, "peak:13"], "p13")
    c = check_cmd("--baseline", pbase, "--max-peak-growth", "20", t12)
    eq(c.returncode, 0, f"peak grew 20%: {c.stdout}")
    c = check_cmd("--baseline", pbase, "--max-peak-growth", "20%", t13)
    eq(c.returncode, 1, "peak grew 30%")
    pline = gate_line("cudaMalloc(&p, (size_t)mib * MiB)")
    check(c.stdout.startswith(f"{REL}gate.c:{pline}: error: device 0 peaked at 13.0 MiB (13631488 B), 30.0% above the "
                              "baseline's 10.0 MiB (--max-peak-growth 20%); the largest call site live then: 13.0 MiB "
                              "in 1 allocation (cudaMalloc) [peak-growth]\n"), c.stdout)
    c = check_cmd("--baseline", pbase, t13)
    eq(c.returncode, 0, "peaks are not compared without --max-peak-growth")
    # Several baselines: the largest leak of each site counts.
    c = check_cmd("--baseline", pbase, "--baseline", base, trace_of(d, [GATE, "leak:2", "peak:10"], "both"))
    eq(c.returncode, 0, "two baselines")
    # Baselines that cannot serve.
    c = check_cmd("--max-peak-growth", "10", t12)
    eq((c.returncode, c.stderr), (2, "cumemtrace: check: --max-peak-growth compares with a baseline: give --baseline "
                                     "TRACE too\n"), "growth without a baseline")
    killed = trace_of(d, [cmtest.program("killed"), "2", "9"], "killed", expect_status=-9)
    c = check_cmd("--baseline", killed, t12)
    eq((c.returncode, c.stdout), (2, ""), "an incomplete baseline")
    eq(c.stderr, f"cumemtrace: check: baseline {killed}: the process did not exit normally or recording stopped "
                 "early, so its leaks are unknown; record the baseline from a complete run (or pass "
                 "--check-incomplete)\n", "incomplete baseline message")
    c = check_cmd("--baseline", d("none.bin"), t12)
    eq((c.returncode, c.stderr), (2, f"cumemtrace: check: baseline {d('none.bin')}: cannot open: No such file or "
                                     "directory; check the path\n"), "a missing baseline")
    d.cleanup()


# ---- crashes and the program's own status --------------------------------------

def test_crashed_program():
    d = Dir()
    p = run_check(d, [GATE, "leak:1", "segv"])
    eq(p.returncode, -signal.SIGSEGV, f"killed by the same signal: {p.stderr}")
    traces = d.traces()
    eq(len(traces), 1, "the trace of a failed run is kept")
    t = traces[0]
    error = ("the process did not exit normally (killed, crashed, or ended with _exit): leaks were not checked "
             "(--check-incomplete checks what was live when recording ended)")
    check(result("ERROR", t, "gate leak:1 segv", error + "; peak 1.0 MiB on device 0") in p.stderr, p.stderr)
    check(p.stderr.endswith("cumemtrace run: gate was killed by signal 11 (Segmentation fault); ending the same way, "
                            "whatever the check found\n"), p.stderr)
    c = check_cmd(t)
    eq(c.returncode, 2, "an incomplete trace cannot be judged")
    check(c.stdout.endswith(result("ERROR", t, "gate leak:1 segv", error + "; peak 1.0 MiB on device 0")), c.stdout)
    c = check_cmd("--check-incomplete", t)
    eq(c.returncode, 1, "--check-incomplete judges what was live")
    check(": error: leaked 1.0 MiB in 1 allocation (cudaMalloc) [leak]\n" in c.stdout, c.stdout)
    # A peak over budget is a violation even in an incomplete trace.
    c = check_cmd("--max-peak", "1KiB", t)
    eq(c.returncode, 1, "violation wins over an incomplete trace")
    # The program's own failure wins; the check still reports.
    p = run_check(d, [GATE, "leak:1", "exit:3"])
    eq(p.returncode, 3, "the program's status")
    check("cumemtrace check: FAIL " in p.stderr, p.stderr)
    check(p.stderr.endswith("cumemtrace run: gate exited with status 3; exiting with that status, whatever the check "
                            "found\n"), p.stderr)
    p = run_check(d, [GATE, "clean", "exit:3"])
    eq(p.returncode, 3, "the program's status, clean check")
    # _exit(0), the usual end of a forked worker: the shim closes the trace
    # with the status as exit() would (issue 33), so it is judged as any
    d.cleanup()
    d = Dir()
    p = run_check(d, [GATE, "clean", "_exit"])
    eq(p.returncode, 0, f"a clean run ended with _exit(0) passes: {p.stderr}")
    p = run_check(d, [GATE, "leak:1", "_exit"], "--keep-traces")
    eq(p.returncode, 1, f"its leak is checked without --check-incomplete: {p.stderr}")
    check(": error: leaked 1.0 MiB in 1 allocation (cudaMalloc) [leak]\n" in p.stderr, p.stderr)
    rep = cmtest.report(d.traces()[-1])
    eq((rep["clean_exit"], rep["exit_status"], rep["trace_state"]), (True, 0, "complete"), "closed by _exit")
    d.cleanup()


# ---- options ---------------------------------------------------------------

def test_bad_options():
    d = Dir()
    t = trace_of(d, [GATE, "clean"], "c")
    cases = [
        ([], "cumemtrace: check: no trace given\n"),
        (["--max-peak", "lots", t], "cumemtrace: check: --max-peak needs a size such as 40GiB, or DEVICE=SIZE such as "
                                    "1=40GiB; got 'lots'\n"),
        (["--max-peak", "x=1GiB", t], "cumemtrace: check: --max-peak needs a size such as 40GiB, or DEVICE=SIZE such "
                                      "as 1=40GiB; got 'x=1GiB'\n"),
        (["--max-leak-bytes", "-1", t], "cumemtrace: check: --max-leak-bytes needs a size such as 0, 4096 or 64MiB; "
                                        "got '-1'\n"),
        (["--max-leak-count", "1.5", t], "cumemtrace: check: --max-leak-count needs a number of allocations; got "
                                         "'1.5'\n"),
        (["--max-peak-growth", "ten", "--baseline", t, t], "cumemtrace: check: --max-peak-growth needs a percentage "
                                                           "such as 10 or 12.5%; got 'ten'\n"),
        (["--format", "xml", t], "cumemtrace: check: --format is one of text, json, junit, sarif; got 'xml'\n"),
        (["--error-exitcode", "0", t], "cumemtrace: check: --error-exitcode needs a status from 1 to 255; got '0'\n"),
        (["--keep-traces", t], "cumemtrace: check: --keep-traces only applies to `cumemtrace run --check`\n"),
        (["--source-root", d("nowhere"), t], f"cumemtrace: check: --source-root {d('nowhere')}: No such file or "
                                             "directory; give an existing directory\n"),
    ]
    for args, message in cases:
        c = cmtest.cli("check", *args)
        eq((c.returncode, c.stdout), (2, ""), f"check {args}")
        check(c.stderr.startswith(message), f"check {args}: {c.stderr!r}")
        cmtest.check_catalogued(c.stderr)
    c = cmtest.cli("check", "--frobnicate", t)
    eq(c.returncode, 2, "unknown option")
    eq(c.stderr, "cumemtrace: check: unknown option '--frobnicate'\ntry `cumemtrace check --help`\n", "unknown option")
    cmtest.check_catalogued(c.stderr)
    c = cmtest.cli("check", t, "--max-peak")
    eq((c.returncode, c.stderr.splitlines()[0]), (2, "cumemtrace: check: option '--max-peak' needs a value"),
       "missing value")
    # run: check options without --check, bad ones before the program runs.
    marker = d("ran")
    for args, message in [
        (["--max-peak", "1GiB"], "cumemtrace: run: --max-peak is an option of --check: add --check\n"),
        (["--check", "--format", "yaml"], "cumemtrace: run: --format is one of text, json, junit, sarif; got 'yaml'\n"),
        (["--check", "--suppressions", d("none.supp")], f"cumemtrace: run: cannot read the suppressions file "
                                                        f"{d('none.supp')}: No such file or directory; check the path\n"),
        (["--check", "--baseline", d("none.bin")], f"cumemtrace: run: baseline {d('none.bin')}: cannot open: No "
                                                   "such file or directory; check the path\n"),
    ]:
        p = subprocess.run([cmtest.CLI, "run", *args, "--", "touch", marker], capture_output=True, text=True,
                           env=cmtest.sim_env(preload=False))
        eq((p.returncode, p.stderr), (2, message), f"run {args}")
        cmtest.check_catalogued(p.stderr)
        check(not os.path.exists(marker), f"run {args} did not run the program")
    d.cleanup()


# ---- traces that cannot be read ---------------------------------------------------

def test_bad_traces():
    d = Dir()
    good = trace_of(d, [GATE, "clean"], "good")
    bad = trace_of(d, [GATE, "leak:1"], "bad")
    missing = d("missing.bin")
    c = check_cmd(missing)
    eq((c.returncode, c.stdout, c.stderr),
       (2, f"cumemtrace check: ERROR {missing}: cannot open: No such file or directory; check the path\n", ""),
       "missing trace")
    c = check_cmd(GATE)
    eq((c.returncode, c.stdout), (2, f"cumemtrace check: ERROR {GATE}: not a cumemtrace trace (no CUMEMTRC magic at "
                                     "the start): give a file the profiler wrote\n"), "not a trace")
    empty = d.write("empty.bin", "")
    c = check_cmd(empty)
    eq(c.returncode, 2, "empty file")
    check(c.stdout.startswith(f"cumemtrace check: ERROR {empty}: ") and "empty file" in c.stdout, c.stdout)
    # Truncated: what came before the cut is checked, leaks are not.
    lp = trace_of(d, [cmtest.program("leak_peak")], "lp")
    data = open(lp, "rb").read()
    cut = d("lp.cut.bin")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 200])
    c = check_cmd(cut)
    eq(c.returncode, 2, "truncated")
    check(re.search(r"cumemtrace check: ERROR \S+ \(leak_peak, pid \d+\): the trace is truncated \(the file ends "
                    rf"at offset {len(data) - 200}\): it could not be checked; leaks were not checked, peaks and "
                    r"failed allocations only up to the cut; peak [0-9.]+ MiB on device 0\n$", c.stdout), c.stdout)
    # A violation before the cut is listed, but a cut trace could not be
    # checked: status 2, never a verdict on half the run.
    c = check_cmd("--max-peak", "1MiB", cut)
    eq(c.returncode, 2, "a truncated trace is in error even with a violation before the cut")
    check("over --max-peak" in c.stdout and "ERROR" in c.stdout, c.stdout)
    # Several traces: each is judged on its own; a violation wins over an error.
    c = check_cmd(good, missing)
    eq(c.returncode, 2, "pass + error")
    check(c.stdout.endswith("cumemtrace check: 2 traces: 1 passed, 0 failed, 1 in error\n"), c.stdout)
    c = check_cmd(good, missing, bad)
    eq(c.returncode, 1, "pass + error + fail")
    check(c.stdout.endswith("cumemtrace check: 3 traces: 1 passed, 1 failed, 1 in error\n"), c.stdout)
    d.cleanup()


# ---- machine-readable formats --------------------------------------------------

def sarif_check(doc, n_results):
    """The parts of SARIF 2.1.0 that consumers require, checked by hand."""
    eq(doc["version"], "2.1.0", "SARIF version")
    check(doc["$schema"].endswith("sarif-2.1.0.json"), doc["$schema"])
    eq(len(doc["runs"]), 1, "one run")
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    eq(driver["name"], "cumemtrace", "tool name")
    rule_ids = [r["id"] for r in driver["rules"]]
    eq(rule_ids, ["leak", "new-leak", "leak-growth", "peak", "peak-growth", "failed-allocation", "mapping-leak"], "rules")
    for r in driver["rules"]:
        check(r["shortDescription"]["text"], r)
    eq(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file://" + ROOT + "/", "SRCROOT")
    eq(len(run["results"]), n_results, "one result per violation")
    for res in run["results"]:
        eq(rule_ids[res["ruleIndex"]], res["ruleId"], "ruleIndex names ruleId")
        eq(res["level"], "error", "level")
        check(res["message"]["text"], res)
        eq(len(res["locations"]), 1, "one location")
        phys = res["locations"][0]["physicalLocation"]
        check(phys["artifactLocation"]["uri"], phys)
        if "region" in phys:
            check(phys["region"]["startLine"] >= 1, phys)
        check(re.fullmatch(r"[0-9a-f]{16}", res["partialFingerprints"]["cumemtraceSite/v1"]), res)
    return run


def test_formats():
    d = Dir()
    lp = trace_of(d, [cmtest.program("leak_peak")], "lp")
    ok = trace_of(d, [GATE, "clean"], "ok")
    missing = d("missing.bin")
    keep = line_of("leak_peak.c", "cudaMalloc(&p, 64 * MiB)")
    per = line_of("leak_peak.c", "cudaMalloc(&p, 1 * MiB)")

    # JSON
    c = check_cmd("--format", "json", lp, ok, missing)
    eq(c.returncode, 1, "json status (a violation wins over an error)")
    doc = json.loads(c.stdout)
    eq((doc["status"], doc["check_exit_status"], doc["exit_status"]), ("fail", 1, 1), "json status")
    eq(doc["summary"], {"traces": 3, "passed": 1, "failed": 1, "errors": 1}, "json summary")
    eq([t["status"] for t in doc["traces"]], ["fail", "pass", "error"], "json trace statuses")
    t0 = doc["traces"][0]
    eq((t0["leaks"]["bytes"], t0["leaks"]["count"], t0["violations"]), (69 * MiB, 6, 3), "json leaks")
    eq(t0["devices"], [{"ordinal": 0, "peak_bytes": 115 * MiB, "live_at_exit_bytes": 69 * MiB}], "json devices")
    eq([(f["rule"], f["level"], f["bytes"], f["count"], f["api"], f["location"]["file"], f["location"]["line"],
         f["location"]["function"]) for f in t0["findings"]],
       [("leak", "error", 64 * MiB, 1, "cudaMalloc", REL + "leak_peak.c", keep, "keep_forever"),
        ("leak", "error", 3 * MiB, 3, "cudaMalloc", REL + "leak_peak.c", per, "leak_per_iteration"),
        ("leak", "error", 2 * MiB, 2, "cudaMalloc", REL + "leak_peak.c", per, "leak_per_iteration")], "json findings")
    eq([f["function"] for f in t0["findings"][0]["frames"]], ["keep_forever", "main"], "json frames")
    eq(doc["traces"][2]["error"], "cannot open: No such file or directory; check the path", "json error")
    eq(doc["traces"][1]["process"]["argv"], [GATE, "clean"], "json argv")
    check(all(s["default"] for s in doc["suppressions"]) and doc["suppressions"], "json suppressions")
    eq([l.split(" ")[2] for l in c.stderr.splitlines()], ["FAIL", "PASS", "ERROR", "3"],
       f"one result line per trace and a total on stderr: {c.stderr}")

    # JUnit: one test case per trace.
    c = check_cmd("--format", "junit", lp, ok, missing)
    eq(c.returncode, 1, "junit status")
    root = ET.fromstring(c.stdout)
    eq(root.tag, "testsuites", "junit root")
    suite = root.find("testsuite")
    eq({k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")},
       {"tests": "3", "failures": "1", "errors": "1", "skipped": "0"}, "junit counts")
    cases = suite.findall("testcase")
    eq([tc.get("name") for tc in cases], ["leak_peak", "gate clean", "missing.bin"], "junit test names")
    eq([tc.get("file") for tc in cases], [lp, ok, missing], "junit files")
    failure = cases[0].find("failure")
    eq((failure.get("type"), failure.get("message")),
       ("leak", "3 violations; first: leaked 64.0 MiB in 1 allocation (cudaMalloc)"), "junit failure")
    check(f"{REL}leak_peak.c:{keep}: error: leaked 64.0 MiB" in failure.text, failure.text)
    eq((cases[1].find("failure"), cases[1].find("error")), (None, None), "junit pass")
    eq(cases[2].find("error").get("message"), "cannot open: No such file or directory; check the path",
       "junit error")

    # SARIF: one result per violation, at the source line.
    c = check_cmd("--format", "sarif", lp, ok, missing)
    eq(c.returncode, 1, "sarif status")
    run = sarif_check(json.loads(c.stdout), 3)
    eq([(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"],
         r["locations"][0]["logicalLocations"][0]["name"]) for r in run["results"]],
       [("leak", REL + "leak_peak.c", "SRCROOT", keep, "keep_forever"),
        ("leak", REL + "leak_peak.c", "SRCROOT", per, "leak_per_iteration"),
        ("leak", REL + "leak_peak.c", "SRCROOT", per, "leak_per_iteration")], "sarif locations")
    eq(run["results"][0]["message"]["text"], "leaked 64.0 MiB in 1 allocation (cudaMalloc) (leak_peak)", "message")
    eq([f["location"]["message"]["text"] for f in run["results"][0]["stacks"][0]["frames"]],
       [f"keep_forever at {REL}leak_peak.c:{keep}",
        f"main at {REL}leak_peak.c:{line_of('leak_peak.c', 'keep_forever();')}"], "sarif stack")
    inv = run["invocations"][0]
    eq((inv["executionSuccessful"], inv["exitCode"]), (False, 1), "sarif invocation")
    eq([n["message"]["text"] for n in inv["toolExecutionNotifications"]],
       [f"{missing}: cannot open: No such file or directory; check the path"], "sarif notifications")
    # Other rules: peak, failed allocation, new leak, each at its own line.
    oom = trace_of(d, [GATE, "oom", "peak:3"], "oom")
    base = trace_of(d, [GATE, "clean"], "base")
    newer = trace_of(d, [GATE, "new:1"], "newer")
    c = check_cmd("--format", "sarif", "--failed-allocations", "all", "--max-peak", "2MiB", oom)
    run = sarif_check(json.loads(c.stdout), 2)
    eq([(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]],
       [("peak", gate_line("cudaMalloc(&p, (size_t)mib * MiB)")),
        ("failed-allocation", gate_line("cudaMalloc(&p, (size_t)1 << 40)"))], "sarif peak and failure")
    c = check_cmd("--format", "sarif", "--baseline", base, newer)
    run = sarif_check(json.loads(c.stdout), 1)
    eq((run["results"][0]["ruleId"], run["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"]),
       ("new-leak", gate_line(LEAK_NEW)), "sarif new leak")
    # Outside the source root: absolute file URIs.
    c = cmtest.cli("check", "--format", "sarif", "--source-root", d.path, lp)
    run = json.loads(c.stdout)["runs"][0]
    eq(run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"],
       {"uri": "file://" + os.path.normpath(os.path.join(SRC, "leak_peak.c"))}, "absolute URI outside the source root")

    # --report-file: the report in the file, the result lines on the terminal.
    out = d("report.xml")
    c = check_cmd("--format", "junit", "--report-file", out, lp)
    eq(c.returncode, 1, "report file status")
    eq(c.stdout, "", "nothing on stdout")
    eq(c.stderr, result("FAIL", lp, "leak_peak", "3 violations; leaked 69.0 MiB in 6 allocations; peak 115.0 MiB on "
                        "device 0"), "result line on the terminal")
    eq(len(ET.parse(out).getroot().find("testsuite").findall("testcase")), 1, "report file written")
    c = check_cmd("--report-file", d("no/such/dir/r.txt"), lp)
    eq(c.returncode, 2, "unwritable report file")
    eq(c.stderr, f"cumemtrace: check: cannot create {d('no/such/dir/r.txt')}: No such file or directory; check "
                 "that its directory exists and is writable\n", "unwritable report message")
    d.cleanup()


# ---- run --check and child processes -------------------------------------------------

def test_child_processes():
    d = Dir()
    # A forked child writes its own trace; both are checked.
    out = d("report.xml")
    p = run_check(d, [GATE, "clean", "fork"], "--format", "junit", "--report-file", out)
    eq(p.returncode, 1, f"the child leaks: {p.stderr}")
    cases = ET.parse(out).getroot().find("testsuite").findall("testcase")
    eq([tc.get("name") for tc in cases], ["gate clean fork", "gate clean fork (2)"], "two processes, two test cases")
    eq([tc.find("failure") is not None for tc in cases], [False, True], "only the child fails")
    eq(len(d.traces()), 2, "the traces of a failed run are kept")
    # Processes started by a shell, one of them in another directory.
    sh = d("sh")
    os.mkdir(sh)
    p = run_check(d, ["sh", "-c", f"'{GATE}' clean && cd '{sh}' && '{GATE}' leak:2"], template="s.%p.bin")
    eq(p.returncode, 1, f"sh: {p.stderr}")
    eq(len(re.findall(r"cumemtrace check: (PASS|FAIL) ", p.stderr)), 2, f"two traces checked: {p.stderr}")
    check(p.stderr.count("cumemtrace check: FAIL ") == 1 and "leaked 2.0 MiB in 2 allocations" in p.stderr, p.stderr)
    eq(len(d.traces("s.*.bin")), 2, "relative template resolved where run started")
    # No CUDA at all: nothing to check.
    p = run_check(d, ["true"])
    eq((p.returncode, p.stderr), (0, "cumemtrace run: no trace was written: true made no CUDA allocation call, or the "
                                     "profiler was not loaded into it (static executables and setuid programs ignore "
                                     "LD_PRELOAD)\n"), "no trace")
    p = run_check(d, ["true"], "--format", "junit", "--report-file", d("none.xml"))
    eq(p.returncode, 0, "no trace, report file")
    suite = ET.parse(d("none.xml")).getroot().find("testsuite")
    eq((suite.get("tests"), suite.findall("testcase")), ("0", []), "the report file is written anyway")
    p = run_check(d, ["true"], "--require-trace")
    eq(p.returncode, 2, "--require-trace")
    check(p.stderr.endswith("cumemtrace run: true exited with status 0; exiting with status 2: no trace was written\n"),
          p.stderr)
    # JSON of run --check names the program and both statuses.
    p = run_check(d, [GATE, "leak:1", "exit:5"], "--format", "json", "--report-file", d("r.json"))
    eq(p.returncode, 5, "program status")
    doc = json.load(open(d("r.json")))
    eq((doc["status"], doc["check_exit_status"], doc["exit_status"]), ("fail", 1, 5), "json statuses")
    eq(doc["program"], {"argv": [GATE, "leak:1", "exit:5"], "exit_status": 5, "signal": None,
                        "status_passed_through": True}, "json program")
    d.cleanup()


# ---- when no trace can be written (issue 32) ----------------------------------

def test_unwritable_output():
    """A trace that cannot be created or kept never lets the gate pass: the
    directory is checked before the program runs, and what only the shim can
    know comes back through the manifest. Each case would exit 1 (a leak) with
    a trace; without one it is status 2, never 0."""
    d = Dir()
    gate = [GATE, "leak:1"]
    env = cmtest.sim_env({"CUMEMTRACE_QUIET": "1"}, preload=False)

    def run(template, *opts, argv=gate, extra=None):
        e = dict(env)
        e.update(extra or {})
        return subprocess.run([cmtest.CLI, "run", "-o", template, *opts, "--", *argv], env=e, capture_output=True,
                              text=True, timeout=120)

    # Before the program runs: a missing directory, a file where the
    # directory should be; with --check and without, with -o and with
    # CUMEMTRACE_OUTPUT.
    missing = d("missing")
    for opts in (["--check"], []):
        p = run(os.path.join(missing, "t.%p.bin"), *opts)
        eq((p.returncode, p.stdout, p.stderr),
           (2, "", f"cumemtrace: run: cannot write traces in {missing}: it does not exist; create it, or give -o a "
                   "path in a writable directory with free space\n"), f"missing directory {opts}")
    p = subprocess.run([cmtest.CLI, "run", "--check", "--", *gate], capture_output=True, text=True, timeout=120,
                       env=dict(env, CUMEMTRACE_OUTPUT=os.path.join(missing, "t.bin")))
    eq((p.returncode, p.stdout), (2, ""), f"CUMEMTRACE_OUTPUT is checked too: {p.stderr}")
    check(p.stderr.startswith(f"cumemtrace: run: cannot write traces in {missing}: it does not exist"), p.stderr)
    a_file = d.write("a_file", "x")
    p = run(os.path.join(a_file, "t.bin"), "--check")
    eq((p.returncode, p.stdout, p.stderr),
       (2, "", f"cumemtrace: run: cannot write traces in {a_file}: it is not a directory; create it, or give -o a "
               "path in a writable directory with free space\n"), "not a directory")
    cmtest.check_catalogued(p.stderr)
    # A directory this user may not write: root may write anywhere, so as
    # root the run is made as nobody (the scratch directory opened to it).
    ro = d("ro")
    os.mkdir(ro, 0o555)
    as_user = None
    if os.geteuid() == 0:
        os.chmod(d.path, 0o755)

        def as_user():
            os.setgid(65534)
            os.setuid(65534)
    probe = subprocess.run([cmtest.CLI, "version"], env=env, capture_output=True, text=True, timeout=120,
                           preexec_fn=as_user)
    if probe.returncode != 0:
        print(f"skipped the unwritable directory: nobody cannot run {cmtest.CLI} ({probe.returncode})")
    else:
        p = subprocess.run([cmtest.CLI, "run", "-o", os.path.join(ro, "t.bin"), "--check", "--", *gate], env=env,
                           capture_output=True, text=True, timeout=120, preexec_fn=as_user)
        eq((p.returncode, p.stdout, p.stderr),
           (2, "", f"cumemtrace: run: cannot write traces in {ro}: it is not writable by this user; create it, or "
                   "give -o a path in a writable directory with free space\n"), "unwritable directory")
    os.chmod(ro, 0o755)

    # A read-only file system and a full one: small tmpfs mounts, where this
    # user may mount (root with CAP_SYS_ADMIN, as on CI's machine).
    mnt = d("mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], capture_output=True).returncode:
        print("skipped the full and read-only file systems: cannot mount a tmpfs here")
    else:
        try:
            fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b"x" * 4096):
                    pass
            except OSError:
                pass  # full
            os.close(fd)
            p = run(os.path.join(mnt, "t.bin"), "--check")
            eq((p.returncode, p.stdout), (2, ""), f"full file system: {p.stderr}")
            check(p.stderr.startswith(f"cumemtrace: run: cannot write traces in {mnt}: its file system is full ("),
                  p.stderr)
            cmtest.check_catalogued(p.stderr)
            os.unlink(os.path.join(mnt, "filler"))
            eq(subprocess.run(["mount", "-o", "remount,ro", mnt], capture_output=True).returncode, 0, "remount ro")
            p = run(os.path.join(mnt, "t.bin"), "--check")
            eq((p.returncode, p.stdout, p.stderr),
               (2, "", f"cumemtrace: run: cannot write traces in {mnt}: it is on a read-only file system; create "
                       "it, or give -o a path in a writable directory with free space\n"), "read-only file system")
        finally:
            subprocess.run(["umount", mnt], capture_output=True)

    # What only the shim knows. A directory the shim expands (%p) that does
    # not exist: the program runs, the shim cannot create the trace, the
    # manifest says so, and the report has the process in error.
    tmpl = os.path.join(missing + "-%p", "t.bin")
    p = run(tmpl, "--check", "--format", "json", "--report-file", d("r.json"))
    eq((p.returncode, p.stdout), (2, "gate done\n"), f"the program ran: {p.stderr}")
    doc = json.load(open(d("r.json")))
    eq((doc["status"], doc["check_exit_status"], doc["summary"]["errors"]), ("error", 2, 1), "json verdict")
    t = doc["traces"][0]
    pid = int(re.search(r"-(\d+)/t\.bin$", t["trace"]).group(1))
    eq((t["trace"], t["status"], t["trace_state"], t["leaks_checked"]),
       (tmpl.replace("%p", str(pid)), "error", None, False), "the trace in error")
    eq(t["error"], f"the profiler could not create this trace for process {pid} (No such file or directory): that "
                   "process was not checked; give -o a writable directory with free space and a name not taken",
       "why")
    check(p.stderr.endswith("cumemtrace run: gate exited with status 0; exiting with status 2: a trace could not be "
                            "written\n"), p.stderr)
    # Every candidate name taken (t.bin, t.1.bin ... t.1000.bin).
    taken = d("taken")
    os.mkdir(taken)
    for name in ["t.bin"] + [f"t.{i}.bin" for i in range(1, 1001)]:
        open(os.path.join(taken, name), "w").close()
    p = run(os.path.join(taken, "t.bin"), "--check")
    eq(p.returncode, 2, f"every name taken: {p.stderr}")
    check(re.search(rf"cumemtrace check: ERROR {re.escape(taken)}/t\.bin: the profiler could not create this "
                    r"trace for process \d+ \(every candidate name is taken\)", p.stderr), p.stderr)
    # One process traced and failing, another without a trace: still 2,
    # never a verdict on half the run.
    sh = f"'{GATE}' leak:1; CUMEMTRACE_OUTPUT='{missing}-%p/x.bin' '{GATE}' leak:1"
    p = run(d("t.%p.bin"), "--check", argv=["sh", "-c", sh])
    eq(p.returncode, 2, f"a failing trace and an unwritten one: {p.stderr}")
    check("cumemtrace check: FAIL " in p.stderr and "cumemtrace check: 2 traces: 0 passed, 1 failed, 1 in error"
          in p.stderr, p.stderr)
    check(p.stderr.endswith("exiting with status 2: a trace could not be written\n"), p.stderr)
    # A trace that stopped on a write error later (ulimit -f): the shim's
    # reason is a note of the trace; status 2 as for any trace that stopped.
    fs = d("fs")
    os.mkdir(fs)
    argv = [cmtest.CLI, "run", "-o", os.path.join(fs, "t.bin"), "--check", "--",
            cmtest.program("stress_threads"), "1", "20000"]
    p = subprocess.run(["bash", "-c", "ulimit -f 128; exec " + " ".join(f"'{a}'" for a in argv)], env=env,
                       capture_output=True, text=True, timeout=300)
    eq(p.returncode, 2, f"ulimit -f: {p.stderr}")
    trace = os.path.join(fs, "t.bin")
    check(f"{trace}: note: the profiler said why the trace file could not grow: it reached the file size limit "
          "(ulimit -f)\n" in p.stderr, p.stderr)
    check(p.stderr.endswith("exiting with status 2: a trace could not be checked\n"), p.stderr)
    d.cleanup()


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
