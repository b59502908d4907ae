# SPDX-License-Identifier: MIT
"""The pytest plugin: each test judged on the GPU memory it leaves
(docs/python.md, "The pytest plugin").

    pytest --cumemtrace                        restarts pytest under the profiler
    @pytest.mark.limit_gpu_memory("2 GiB")     the test's own peak, per device
    @pytest.mark.gpu_leaks(warmups=2)          two calls first: what they keep is a cache
    @pytest.mark.no_gpu_leak_check             peaks only

Each test is a window: a phase named "pytest:NODEID" (so the report shows
each test as a phase) from the start of its setup to the end of its call.
A fixture's setup is a window of its own, whatever its scope, charged to
the fixture and never to the test that first asked for it. When the call
has ended, after gc.collect() and the framework's synchronisation, the
analyzer's follower says what the window's allocations still hold: device
memory and PyTorch's tensors allocated during the test and still alive
fail it as a GPU leak, with the line that allocated them."""
import gc
import inspect
import json
import os
import re
import shutil
import sys
import tempfile

import pytest

import cumemtrace

from . import _native
from ._follow import Follower
from ._report import CumemtraceError

PREFIX = "pytest:"
RESTARTED = "CUMEMTRACE_PYTEST_RESTARTED"
TRACE_DIR = "CUMEMTRACE_PYTEST_TRACE_DIR"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
          "t": 1 << 40, "tib": 1 << 40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_size(text):
    """'2 GiB', '512MiB', '1.5G' (binary), '100 MB' (decimal), 4096: bytes,
    as the command's sizes read (docs/check.md)."""
    if isinstance(text, int) and text >= 0:
        return text
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"cumemtrace: not a size: {text!r} (write 2GiB, 512 MiB, 1.5G, 100MB or a number of bytes)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def pytest_addoption(parser):
    group = parser.getgroup("cumemtrace", "GPU memory per test (cumemtrace)")
    group.addoption("--cumemtrace", action="store_true", default=False,
                    help="judge each test's GPU memory: leaks fail it, limit_gpu_memory caps its peak (restarts "
                         "pytest under the profiler when it is not loaded)")
    group.addoption("--cumemtrace-report", metavar="DIR", default=None,
                    help="keep the trace and a JSON file per test that failed on GPU memory in DIR")
    group.addoption("--cumemtrace-suppressions", metavar="FILE", action="append", default=[],
                    help="leak suppressions (leak:PATTERN lines, as for cumemtrace check; repeatable)")
    group.addoption("--cumemtrace-top", metavar="N", type=int, default=5,
                    help="tests listed by peak in the summary (default 5, 0 for every test, as --top 0 in the "
                         "cumemtrace commands)")


def pytest_configure(config):
    config.addinivalue_line("markers", "limit_gpu_memory(limit, device=None): fail the test when its own peak of "
                                       "device memory (by device, or on device) goes over limit ('2 GiB')")
    config.addinivalue_line("markers", "gpu_leaks(warmups=0): call the test function warmups more times first; "
                                       "what those calls leave alive is a cache, not a leak")
    config.addinivalue_line("markers", "no_gpu_leak_check: do not fail the test on GPU memory it leaves alive")
    if not config.getoption("cumemtrace"):
        return
    if not cumemtrace.is_active():
        raise pytest.UsageError(
            "cumemtrace: the profiler is not loaded in this process; run `cumemtrace run -- python -m pytest "
            "--cumemtrace ...` (pytest --cumemtrace restarts itself that way when started from the command line)")
    config.pluginmanager.register(GpuGate(config), "cumemtrace-gate")


def _started_from_command_line():
    """pytest's own entry: its script (pytest, py.test, Debian's pytest-3) or
    `python -m pytest`; not a program that called pytest.main()."""
    if not sys.argv:
        return False
    main = os.path.basename(sys.argv[0])
    return re.fullmatch(r"py\.?test(-?3)?", main) is not None or sys.argv[0].endswith(os.path.join("pytest", "__main__.py"))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before the conftests, and before pytest captures the output: a
    session asked for with --cumemtrace but without the profiler starts
    again under `cumemtrace run` (the same interpreter, arguments and
    directory)."""
    ns = early_config.known_args_namespace
    if getattr(ns, "cumemtrace", False) and not cumemtrace.is_active():
        if os.environ.get(RESTARTED) == "1":
            raise pytest.UsageError(
                "cumemtrace: pytest was restarted under `cumemtrace run` but the profiler is still not loaded "
                "(a static or setuid interpreter ignores LD_PRELOAD): run a dynamically linked python")
        if _started_from_command_line():
            _restart_under_profiler(early_config)
    yield


def _restart_under_profiler(config):
    try:
        cli = _native.cli()
    except _native.NativeNotFound as e:
        raise pytest.UsageError(str(e)) from None
    env = os.environ.copy()
    env[RESTARTED] = "1"
    env.setdefault("CUMEMTRACE_QUIET", "1")  # the summary names the trace
    argv = [cli, "run"]
    if "CUMEMTRACE_OUTPUT" not in env:
        trace_dir = tempfile.mkdtemp(prefix="cumemtrace-pytest-")
        env[TRACE_DIR] = trace_dir
        argv += ["-o", os.path.join(trace_dir, "cumemtrace.%p.bin")]
    argv += ["--", sys.executable, "-m", "pytest", *config.invocation_params.args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(str(config.invocation_params.dir))
    os.execve(cli, argv, env)


def _settle():
    """What a test released is released: Python's cycles collected, the
    device's queued work (and frees) done."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception:  # a broken CUDA state is the test's to report
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            cupy.cuda.runtime.deviceSynchronize()
        except Exception:
            pass


def _frame_text(f, root):
    where = f.get("file")
    if where and root and where.startswith(root + os.sep):
        where = where[len(root) + 1:]
    text = f.get("function") or "??"
    if where:
        text += f" at {where}:{f['line']}" if f.get("line") else f" at {where}"
    elif f.get("module"):
        text += f" in {f['module']}"
    return text


def _location(group, root):
    site = group.get("site") or {}
    where = site.get("file")
    if where and root and where.startswith(root + os.sep):
        where = where[len(root) + 1:]
    if where:
        return f"{where}:{site['line']}" if site.get("line") else where
    return site.get("function") or site.get("module") or "an unknown place"


class GpuRepr:
    """A test's GPU memory problems as pytest prints a failure: the first
    line is the short summary's message (and JUnit's failure message)."""

    def __init__(self, lines, path, lineno):
        self.lines = lines
        self.reprcrash = _Crash(lines[0], path, lineno)

    def toterminal(self, tw):
        for line in self.lines:
            tw.line(line, red=line.startswith("GPU"))

    def __str__(self):
        return "\n".join(self.lines)


class _Crash:
    def __init__(self, message, path, lineno):
        self.message, self.path, self.lineno = message, path, lineno


class GpuGate:
    """The plugin's state for one session (one traced process)."""

    def __init__(self, config):
        self.config = config
        self.root = str(config.rootpath) if hasattr(config, "rootpath") else str(config.rootdir)
        self.follower = None
        self.trace = None  # made absolute when the first test starts: a test may change directory
        self.closing = []  # windows popped whose results the next poll brings, in order
        self.results = {}  # nodeid -> the test's window
        self.fixtures = []  # (fixture, scope, window) in the order they were set up
        self.failed = {}  # nodeid -> what failed it
        self.warmups = {}  # nodeid -> the warm-up window
        self.open_tests = set()
        self.block_layer = None
        self.error = None

    # -- windows ---------------------------------------------------------------

    def push(self, name):
        cumemtrace._push((PREFIX + name).encode("utf-8", "replace"))

    def pop(self, kind, key):
        cumemtrace._pop()
        self.closing.append((kind, key))

    def collect(self):
        """Polls the follower; files the windows closed since."""
        if self.follower is None:
            path = self.trace or cumemtrace.trace_path()
            if path is None:
                raise CumemtraceError("cumemtrace: the profiler writes no trace (CUMEMTRACE_DISABLE? a full disk? "
                                      "its warning on stderr says why)")
            self.follower = Follower(path, PREFIX, self.config.getoption("cumemtrace_suppressions"))
        state = self.follower.poll()
        self.block_layer = state.get("block_layer")
        for w in state["windows"]:
            kind, key = self.closing.pop(0) if self.closing else ("other", None)
            if kind == "test":
                self.results[key] = w
            elif kind == "fixture":
                key.append(w)
            elif kind == "warm-up":
                self.warmups[key] = w

    # -- hooks -------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.push(item.nodeid)
        self.open_tests.add(item.nodeid)
        if self.trace is None and cumemtrace.trace_path():
            self.trace = os.path.abspath(cumemtrace.trace_path())
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        self.push(f"fixture {fixturedef.argname} ({fixturedef.scope})")
        try:
            yield
        finally:
            entry = [fixturedef.argname, fixturedef.scope]
            self.fixtures.append(entry)
            self.pop("fixture", entry)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        marker = pyfuncitem.get_closest_marker("gpu_leaks")
        warmups = int(marker.kwargs.get("warmups", marker.args[0] if marker and marker.args else 0)) if marker else 0
        if warmups > 0 and not inspect.iscoroutinefunction(pyfuncitem.obj):
            args = {a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames}
            self.push(f"warm-up {pyfuncitem.nodeid}")
            try:
                for _ in range(warmups):
                    pyfuncitem.obj(**args)
            finally:
                _settle()
                self.pop("warm-up", pyfuncitem.nodeid)
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        ends = call.when == "call" or (call.when == "setup" and not report.passed)
        if not ends or item.nodeid not in self.open_tests:
            return
        self.open_tests.discard(item.nodeid)
        _settle()
        self.pop("test", item.nodeid)
        try:
            self.collect()
        except CumemtraceError as e:
            self.error = str(e)
            if report.passed:
                report.outcome = "failed"
                report.longrepr = str(e)
            return
        window = self.results.get(item.nodeid)
        if window is None:
            return
        self._properties(item, window)
        if call.when != "call" or not report.passed or hasattr(report, "wasxfail"):
            return  # a test that failed, skipped or xfailed on its own keeps its outcome
        problems = self._judge(item, window)
        if problems:
            self.failed[item.nodeid] = {"window": window, "problems": problems}
            report.outcome = "failed"
            path, lineno, _ = item.location
            report.longrepr = GpuRepr(problems, path, (lineno or 0) + 1)
            report.sections.append(("cumemtrace", self._window_text(window)))

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_report_teststatus(self, report, config):
        outcome = yield
        if report.when == "call" and report.failed and report.nodeid in self.failed:
            outcome.force_result(("failed", "G", "FAILED"))

    # -- judgement -------------------------------------------------------------------

    def _properties(self, item, window):
        left = [g for g in window["left"] if g["suppressed_by"] is None]
        for d in window["devices"]:
            item.user_properties.append((f"cumemtrace_peak_bytes_device{d['device']}", d["peak_bytes"]))
        item.user_properties.append(("cumemtrace_leaked_bytes", sum(g["bytes"] for g in left)))
        item.user_properties.append(("cumemtrace_leaked_count", sum(g["count"] for g in left)))

    def _judge(self, item, window):
        problems = []
        for marker in item.iter_markers("limit_gpu_memory"):
            limit = parse_size(marker.args[0] if marker.args else marker.kwargs["limit"])
            device = marker.kwargs.get("device")
            for d in window["devices"]:
                if device is not None and d["device"] != device:
                    continue
                if d["peak_bytes"] > limit:
                    problems.append(f"GPU memory: the test peaked at {format_bytes(d['peak_bytes'])} "
                                    f"({d['peak_bytes']} B) on device {d['device']}, over its limit of "
                                    f"{format_bytes(limit)} ({limit} B)")
            break  # the closest marker decides
        if item.get_closest_marker("no_gpu_leak_check") is None:
            for g in window["left"]:
                if g["suppressed_by"] is not None:
                    continue
                plural = "s" if g["count"] != 1 else ""
                if g["memory"] == "tensor":
                    what, kind = f"tensor{plural}", f"PyTorch's allocator, device {g['device']}"
                else:
                    what, kind = f"allocation{plural}", f"{g['api']}, {g['memory']} memory, device {g['device']}"
                problems.append(f"GPU leak: {format_bytes(g['bytes'])} ({g['bytes']} B) in {g['count']} {what} "
                                f"({kind}) still alive after the test, allocated at {_location(g, self.root)}")
                for i, f in enumerate(g["frames"][:8]):
                    problems.append(f"    #{i} {_frame_text(f, self.root)}")
        return problems

    def _window_text(self, window):
        lines = [f"peak {format_bytes(d['peak_bytes'])} on device {d['device']}" for d in window["devices"]]
        suppressed = [g for g in window["left"] if g["suppressed_by"]]
        for g in suppressed:
            lines.append(f"suppressed: {format_bytes(g['bytes'])} at {_location(g, self.root)} by {g['suppressed_by']}")
        if window.get("cached_bytes"):
            lines.append(f"caching allocators reserved {format_bytes(window['cached_bytes'])} during the test "
                         "(their cache, not counted)")
        return "\n".join(lines) or "no GPU memory"

    # -- end of the session ------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("=", "cumemtrace: GPU memory per test")
        if self.error:
            tr.write_line(self.error)
        if self.follower is None:
            tr.write_line("no test used the GPU (no trace was followed)")
            return
        tr.write_line(f"trace: {self.follower.trace}")
        if self.block_layer == "off":
            tr.write_line("PyTorch's block layer is off in this trace: tensors kept alive inside its cache are not "
                          "seen (the trace's notes say why; PYTORCH_NO_CUDA_MEMORY_CACHING=1 makes each one visible)")
        for nodeid, f in self.failed.items():
            tr.write_line(f"FAILED {nodeid}: {f['problems'][0]}")
        top = self.config.getoption("cumemtrace_top")
        peaks = sorted(((max((d["peak_bytes"] for d in w["devices"]), default=0), n) for n, w in self.results.items()),
                       reverse=True)
        peaks = [(b, n) for b, n in peaks if b]
        if top > 0:
            peaks = peaks[:top]
        if peaks:
            tr.write_line("largest peaks:")
            for b, n in peaks:
                tr.write_line(f"  {format_bytes(b):>10}  {n}")
        held = [(name, scope, w[0]) for name, scope, *w in self.fixtures if w and w[0]["left"]]
        if held:
            tr.write_line("fixtures holding GPU memory after their setup (charged to them, not to the tests):")
            for name, scope, w in held:
                total = sum(g["bytes"] for g in w["left"])
                tr.write_line(f"  {format_bytes(total):>10}  {name} ({scope})")
        tr.write_line(f"{len(self.results)} tests judged, {len(self.failed)} failed on GPU memory")

    def pytest_sessionfinish(self, session):
        directory = self.config.getoption("cumemtrace_report")
        if directory and self.failed and self.follower is not None:
            os.makedirs(directory, exist_ok=True)
            kept = os.path.join(directory, os.path.basename(self.follower.trace))
            shutil.copyfile(self.follower.trace, kept)
            for nodeid, f in self.failed.items():
                name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_") + ".json"
                w = f["window"]
                with open(os.path.join(directory, name), "w") as out:
                    json.dump({"test": nodeid, "trace": kept, "problems": f["problems"], "window": w,
                               "see": f"cumemtrace report --at {w['end_ns']}ns {kept}"}, out, indent=1)
                    out.write("\n")

    def pytest_unconfigure(self, config):
        if self.follower is not None:
            self.follower.close()
        # A trace this plugin's restart asked for goes with the session; the
        # user's own CUMEMTRACE_OUTPUT stays.
        trace_dir = os.environ.get(TRACE_DIR)
        path = cumemtrace.trace_path()
        if trace_dir and path and os.path.dirname(os.path.abspath(path)) == trace_dir:
            try:
                os.unlink(path)
                os.rmdir(trace_dir)
            except OSError:
                pass
