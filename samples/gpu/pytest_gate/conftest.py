# SPDX-License-Identifier: MIT
"""Gates a pytest session with cumemtrace (docs/guide.md, "Gating a test
suite in CI"). With CUMEMTRACE_GATE=1 in the environment, a plain
`python -m pytest ...` starts itself again under `cumemtrace run --check`:
the session's exit status is then 1 when the session leaked device memory,
failed an allocation or went over a --max-peak given in CUMEMTRACE_GATE_ARGS,
and the tests' own status otherwise. The leak's stack has the test's Python
frames (file and line), so the report says which test leaked.

The cumemtrace command is $CUMEMTRACE (default `cumemtrace` on PATH)."""
import os
import shlex
import sys


def pytest_configure(config):
    if os.environ.get("CUMEMTRACE_GATE") != "1" or os.environ.get("CUMEMTRACE_GATED") == "1":
        return
    os.environ["CUMEMTRACE_GATED"] = "1"
    cli = os.environ.get("CUMEMTRACE", "cumemtrace")
    extra = shlex.split(os.environ.get("CUMEMTRACE_GATE_ARGS", ""))
    args = [cli, "run", "--check", *extra, "--", sys.executable, "-m", "pytest", *config.invocation_params.args]
    sys.stdout.flush()
    os.execvp(cli, args)
