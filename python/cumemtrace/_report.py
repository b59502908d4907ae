# SPDX-License-Identifier: MIT
"""cumemtrace.load(): the report the analyzer builds, as Python objects.

The analyzer itself builds it: libcumemtrace_analysis.so runs the code of
`cumemtrace report --format json` and returns its JSON (docs/report.md has
every key), which this module only wraps for attribute access. No trace is
parsed in Python."""
import ctypes
import json
import threading
import warnings

from . import _native


class CumemtraceError(RuntimeError):
    """The analyzer could not read a trace or take the options given."""


_lib = None
_lib_lock = threading.Lock()


def library():
    """libcumemtrace_analysis.so, loaded once, its functions typed."""
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(_native.analysis_library())
            lib.cumemtrace_analysis_version.restype = ctypes.c_char_p
            lib.cumemtrace_report_json.restype = ctypes.c_int
            lib.cumemtrace_report_json.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                                   ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
            lib.cumemtrace_follow_open.restype = ctypes.c_void_p
            lib.cumemtrace_follow_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
            lib.cumemtrace_follow_poll.restype = ctypes.c_int
            lib.cumemtrace_follow_poll.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
            lib.cumemtrace_follow_take.restype = ctypes.c_void_p
            lib.cumemtrace_follow_take.argtypes = [ctypes.c_void_p]
            lib.cumemtrace_follow_held.restype = ctypes.c_void_p
            lib.cumemtrace_follow_held.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
            lib.cumemtrace_follow_close.restype = None
            lib.cumemtrace_follow_close.argtypes = [ctypes.c_void_p]
            lib.cumemtrace_free.restype = None
            lib.cumemtrace_free.argtypes = [ctypes.c_void_p]
            _lib = lib
        return _lib


def take_string(ptr):
    """The library's malloc'd string as str, given back to it."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        library().cumemtrace_free(ptr)


def _wrap(v):
    if isinstance(v, dict):
        return Node(v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


class Node:
    """One object of the report's JSON: its keys as attributes (and items)."""

    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    def __getattr__(self, key):
        try:
            return _wrap(self._data[key])
        except KeyError:
            raise AttributeError(key) from None

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def keys(self):
        return self._data.keys()

    def get(self, key, default=None):
        return _wrap(self._data.get(key, default))

    def to_dict(self):
        """The JSON object itself (shared, not copied)."""
        return self._data

    def __eq__(self, other):
        return isinstance(other, Node) and self._data == other._data

    def __repr__(self):
        keys = ", ".join(list(self._data)[:6])
        return f"<{type(self).__name__} {keys}{', ...' if len(self._data) > 6 else ''}>"


def _location(frames, site):
    """'file:line' (or the function, or the module) of a site's frame."""
    if site is None or not frames or site >= len(frames):
        return None
    f = frames[site]
    if f.get("file"):
        return f"{f['file']}:{f['line']}" if f.get("line") else f["file"]
    return f.get("function") or f.get("module")


class Report(Node):
    """The report of one trace (docs/report.md, "JSON"): attributes are its
    keys (report.devices[0].peak_bytes, report.leaks.sites, report.phases,
    report.blocks ...)."""

    def to_pandas(self):
        """The report's tables as pandas DataFrames, for notebooks: a dict
        with "devices", "peak_sites" (the call sites live at each device's
        peak), "leaks", "phases" and "steps"."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("cumemtrace: to_pandas() needs pandas (pip install pandas)") from e
        d = self._data
        devices = [{k: v for k, v in dev.items() if not isinstance(v, (list, dict))} for dev in d.get("devices", [])]
        peak_sites = []
        for dev in d.get("devices", []):
            for s in dev.get("top_sites_at_peak", []):
                peak_sites.append({"device": dev["ordinal"], "bytes": s["bytes"], "count": s["count"],
                                   "api": s.get("api"), "location": _location(s.get("frames"), s.get("site_frame")),
                                   "stack_id": s.get("stack_id")})
        leaks = [{"bytes": s["bytes"], "count": s["count"], "kind": s.get("kind"), "api": s.get("api"),
                  "pattern": s.get("pattern"), "location": _location(s.get("frames"), s.get("site_frame")),
                  "stack_id": s.get("stack_id")} for s in d.get("leaks", {}).get("sites", [])]
        phases = d.get("phases") or {}
        phase_rows = [{k: v for k, v in p.items() if not isinstance(v, (list, dict))} for p in phases.get("list", [])]
        step_rows = [{k: v for k, v in p.items() if not isinstance(v, (list, dict))} for p in phases.get("steps", [])]
        return {"devices": pd.DataFrame(devices), "peak_sites": pd.DataFrame(peak_sites), "leaks": pd.DataFrame(leaks),
                "phases": pd.DataFrame(phase_rows), "steps": pd.DataFrame(step_rows)}


def _option_args(options):
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args


def load(path, **options):
    """The report of the trace at path, as `cumemtrace report --format json`
    builds it, with the same options given as keywords: load(path, top=20,
    full_stacks=True, suppressions=["ci.supp"], at="2s"). A damaged or
    truncated trace gives the report of the events before the damage with
    a warning; a file that cannot be read raises CumemtraceError."""
    lib = library()
    args = [a.encode() for a in _option_args(options)]
    argv = (ctypes.c_char_p * max(len(args), 1))(*args)
    out, msg = ctypes.c_void_p(), ctypes.c_void_p()
    status = lib.cumemtrace_report_json(str(path).encode(), argv, len(args), ctypes.byref(out), ctypes.byref(msg))
    text, messages = take_string(out.value), take_string(msg.value)
    if text is None:
        raise CumemtraceError((messages or f"cumemtrace: {path}: no report (status {status})").strip())
    if messages:
        warnings.warn(messages.strip(), stacklevel=2)
    return Report(json.loads(text))
