# SPDX-License-Identifier: MIT
"""Where the package's native parts are (docs/python.md, "The wheel").

In a wheel they lie inside the package: bin/cumemtrace (the command),
lib/libcumemtrace.so (the shim), lib/libcumemtrace_torch.so (the PyTorch
bridge), lib/libcumemtrace_analysis.so (the analyzer as a library) and the
libraries they need, vendored with their licences. CUMEMTRACE_CLI and
CUMEMTRACE_ANALYSIS_LIB name other ones (a build tree: the test suite does
so), as CUMEMTRACE_SHIM does for `cumemtrace run`."""
import os
import shutil

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NativeNotFound(RuntimeError):
    """A native part of cumemtrace is not where the package looks for it."""


def cli():
    """The cumemtrace command's path."""
    env = os.environ.get("CUMEMTRACE_CLI")
    if env:
        return env
    own = os.path.join(PACKAGE_DIR, "bin", "cumemtrace")
    if os.access(own, os.X_OK):
        return own
    found = shutil.which("cumemtrace")
    if found and os.path.realpath(found) != os.path.realpath(os.path.join(PACKAGE_DIR, "__main__.py")):
        return found
    raise NativeNotFound(
        f"cumemtrace: the command is not in {own}: install the cumemtrace wheel, or set CUMEMTRACE_CLI to its path")


def analysis_library():
    """libcumemtrace_analysis.so's path."""
    env = os.environ.get("CUMEMTRACE_ANALYSIS_LIB")
    if env:
        return env
    own = os.path.join(PACKAGE_DIR, "lib", "libcumemtrace_analysis.so")
    if os.path.exists(own):
        return own
    raise NativeNotFound(
        f"cumemtrace: libcumemtrace_analysis.so is not in {os.path.dirname(own)}: install the cumemtrace wheel, "
        "or set CUMEMTRACE_ANALYSIS_LIB to its path")
