# SPDX-License-Identifier: MIT
"""A trace followed while this process writes it: the analyzer's follower
(analyzer/follow/follow.h) through libcumemtrace_analysis.so. Each poll
reads only what was committed since the last; windows are the phases whose
name starts with the prefix (docs/python.md, "How the plugin knows what a
test left")."""
import ctypes
import json

from ._report import CumemtraceError, library, take_string


class Follower:
    def __init__(self, trace, prefix, suppressions=(), no_default_suppressions=False):
        lib = library()
        files = [str(f).encode() for f in suppressions]
        argv = (ctypes.c_char_p * max(len(files), 1))(*files)
        err = ctypes.c_void_p()
        self._lib = lib
        self._h = lib.cumemtrace_follow_open(str(trace).encode(), prefix.encode(), argv, len(files),
                                             1 if no_default_suppressions else 0, ctypes.byref(err))
        if not self._h:
            raise CumemtraceError("cumemtrace: " + (take_string(err.value) or f"cannot follow {trace}"))
        self.trace = str(trace)

    def poll(self):
        """Reads what was committed since the last poll; the windows closed
        since the last call: a dict with the trace's state and "windows"."""
        err = ctypes.c_void_p()
        if self._lib.cumemtrace_follow_poll(self._h, ctypes.byref(err)) != 0:
            raise CumemtraceError("cumemtrace: " + (take_string(err.value) or "the trace could not be followed"))
        text = take_string(self._lib.cumemtrace_follow_take(self._h))
        if text is None:
            raise CumemtraceError("cumemtrace: out of memory while following the trace")
        return json.loads(text)

    def held(self, window_id):
        """What window window_id still holds now, by call site."""
        text = take_string(self._lib.cumemtrace_follow_held(self._h, window_id))
        return json.loads(text) if text else None

    def close(self):
        if self._h:
            self._lib.cumemtrace_follow_close(self._h)
            self._h = None

    def __del__(self):
        self.close()
