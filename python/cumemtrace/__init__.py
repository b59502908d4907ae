# SPDX-License-Identifier: MIT
"""cumemtrace from Python (docs/python.md).

Name the phases and steps of a program for the report, where the profiler
is loaded (`cumemtrace run -- python train.py`, LD_PRELOAD); without it
each call does nothing, at the cost of a Python call:

    import cumemtrace

    with cumemtrace.phase("forward"):       # also @cumemtrace.phase("forward")
        loss = model(x)
    cumemtrace.step()                       # step 1, 2, ... starts here
    cumemtrace.mark("checkpoint saved")
    cumemtrace.is_active(), cumemtrace.trace_path()

Read a trace with the analyzer's own report (the same JSON as `cumemtrace
report --format json`):

    report = cumemtrace.load("cumemtrace.1234.bin")
    report.devices[0].peak_bytes, report.leaks.sites[0].frames
    report.to_pandas()["peak_sites"]        # with pandas installed

The pytest plugin (`pytest --cumemtrace`) is cumemtrace.pytest_plugin."""
import contextlib
import ctypes
import itertools

from ._report import CumemtraceError, Node, Report, load

__all__ = ["phase", "step", "mark", "is_active", "trace_path", "load", "Report", "Node", "CumemtraceError"]
__version__ = "0.1.0"


def _shim_functions():
    """The shim's exports (include/cumemtrace/cumemtrace.h), or None each:
    the process's global scope holds them when the shim is preloaded."""
    try:
        scope = ctypes.CDLL(None)
    except OSError:
        return None, None, None, None, None
    found = []
    for name, args in (("cumemtrace_phase_push", [ctypes.c_char_p]), ("cumemtrace_phase_pop", []),
                       ("cumemtrace_mark", [ctypes.c_char_p]), ("cumemtrace_step", [ctypes.c_uint64]),
                       ("cumemtrace_trace_path", [ctypes.c_char_p, ctypes.c_size_t])):
        fn = getattr(scope, name, None)
        if fn is not None:
            fn.argtypes = args
            fn.restype = ctypes.c_size_t if name == "cumemtrace_trace_path" else None
        found.append(fn)
    return tuple(found)


_push, _pop, _mark, _step, _path = _shim_functions()
_steps = itertools.count(1)


def is_active():
    """Whether the profiler is loaded in this process (its calls record)."""
    return _push is not None


def trace_path():
    """The path of the trace this process writes, or None: without the
    profiler, or before the first CUDA call or phase created it."""
    if _path is None:
        return None
    buf = ctypes.create_string_buffer(4096)
    n = _path(buf, len(buf))
    return buf.value.decode("utf-8", "surrogateescape") if 0 < n < len(buf) else None


def _encode(name):
    return name.encode("utf-8", "replace") if isinstance(name, str) else bytes(name)


if _push is not None:

    class phase(contextlib.ContextDecorator):
        """A phase of this thread, as a context manager or a decorator: the
        allocations made inside count in it (docs/report.md, "Phases and
        steps"). Phases nest, per thread, like NVTX ranges."""

        __slots__ = ("_name",)

        def __init__(self, name):
            self._name = _encode(name)

        def __enter__(self):
            _push(self._name)
            return self

        def __exit__(self, *exc):
            _pop()
            return False

    def step(n=None):
        """Step n starts now for the whole process (the previous one ends);
        without n, the next number after the last one this function gave."""
        _step(next(_steps) if n is None else n)

    def mark(name):
        """An instant with a name, shown where it happened."""
        _mark(_encode(name))

else:

    class _NoPhase:
        """What phase() gives without the profiler: one shared object, a
        context manager that does nothing and a decorator that returns the
        function itself (no wrapper to call through)."""

        __slots__ = ()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, func):
            return func

    _NO_PHASE = _NoPhase()

    def phase(name):
        """A phase of this thread (does nothing: the profiler is not loaded)."""
        return _NO_PHASE

    def step(n=None):
        """Step n starts now (does nothing: the profiler is not loaded)."""

    def mark(name):
        """An instant with a name (does nothing: the profiler is not loaded)."""
