#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Terminal manners (docs/cli.md, "Terminal"): `report` colours its headline
lines only on a terminal and never with NO_COLOR; the progress line goes to
stderr only when stderr is a terminal and not in CI, and is erased.

  test_terminal.py CUMEMTRACE GEN_GOLDEN"""
import os
import pty
import subprocess
import sys
import tempfile

cumemtrace, gen_golden = sys.argv[1:3]
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok: " if ok else "FAIL: ") + what)
    passed, failed = passed + ok, failed + (not ok)


def on_terminal(args, env):
    """Runs with stdout and stderr on one pseudo-terminal; returns its bytes."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(args[0], args, env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out


base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI", "TERM")}
base["TERM"] = "xterm"
with tempfile.TemporaryDirectory() as d:
    subprocess.run([gen_golden, d], check=True)
    mixed = os.path.join(d, "mixed.bin")
    tty = on_terminal([cumemtrace, "report", mixed], base)
    check(b"\x1b[1;33mDevice 0: peak 613.0 MiB (642777088 B)\x1b[0m" in tty, "the peak line in colour on a terminal")
    check(b"\x1b[1;35mLeaks (live at exit): 484.0 MiB (507510784 B)\x1b[0m" in tty, "the leaks line in colour")
    check(b"\x1b[1;31mFailed allocations: 1\x1b[0m" in tty, "the failures line in colour")
    check(b"\rcumemtrace: reading " in tty and b"\r\x1b[K" in tty, "a progress line on the terminal, erased")
    tty = on_terminal([cumemtrace, "report", mixed], dict(base, NO_COLOR="1"))
    check(b"\x1b[1;" not in tty and b"Device 0: peak 613.0 MiB" in tty, "NO_COLOR: no colour")
    tty = on_terminal([cumemtrace, "report", mixed], dict(base, CI="true"))
    check(b"cumemtrace: reading" not in tty, "CI: no progress line")
    r = subprocess.run([cumemtrace, "report", mixed], capture_output=True, env=base)
    check(b"\x1b" not in r.stdout and b"\x1b" not in r.stderr, "in pipes: no colour, no progress")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
