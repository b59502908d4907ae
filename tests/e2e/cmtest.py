# SPDX-License-Identifier: MIT
"""Helpers for end-to-end tests: run a program under the shim on the
simulated device, then analyse its trace with the real CLI."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

SHIM = os.environ["CMT_SHIM"]
CLI = os.environ["CMT_CLI"]
SIM_DIR = os.environ["CMT_SIM_DIR"]
PROGRAMS = os.environ["CMT_PROGRAMS"]

MiB = 1024 * 1024


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise Failure(f"{what}: expected {expected!r}, got {actual!r}")


def program(name):
    return os.path.join(PROGRAMS, name)


# docs/messages.md: each row's message as a pattern, a <PLACEHOLDER> for any
# text; a <MESSAGE> is itself a catalogued message (the wrappers that name
# the trace or the command before what the reader or check said).
_CATALOGUE = None
_PREFIXES = ("cumemtrace: warning: ", "cumemtrace run: ", "cumemtrace: ")


def _catalogue():
    global _CATALOGUE
    if _CATALOGUE is None:
        import re
        _CATALOGUE = []
        with open(os.path.join(os.environ["CMT_SOURCE_ROOT"], "docs", "messages.md")) as f:
            for line in f:
                m = re.match(r"\| (`+) ?(.*?) ?\1 \|", line)
                if not m or re.fullmatch(r"<[A-Z_ -]+>", m.group(2).strip()):
                    continue
                parts = re.split(r"(<[A-Z][A-Z0-9_ -]*>)", m.group(2).replace("\\|", "|"))
                pattern = "".join("(.+?)" if re.fullmatch(r"<.*>", p) else re.escape(p) for p in parts)
                _CATALOGUE.append((re.compile(pattern), [p for p in parts if re.fullmatch(r"<.*>", p)]))
    return _CATALOGUE


def _is_catalogued(text):
    for pattern, holes in _catalogue():
        m = pattern.fullmatch(text)
        if m and all(_is_catalogued(g) for g, h in zip(m.groups(), holes) if h == "<MESSAGE>"):
            return True
    return False


def check_catalogued(stderr):
    """Every line cumemtrace printed on stderr is a message of
    docs/messages.md (the `try ... --help` line aside)."""
    for line in stderr.splitlines():
        if line.startswith("try `cumemtrace"):
            continue
        prefix = next((p for p in _PREFIXES if line.startswith(p)), None)
        check(prefix is not None, f"not a cumemtrace message: {line!r}")
        check(_is_catalogued(line[len(prefix):]), f"not in docs/messages.md: {line!r}")


class Run:
    def __init__(self, proc, tmpdir):
        self.proc = proc
        self.dir = tmpdir
        self.traces = sorted(glob.glob(os.path.join(tmpdir, "*.bin")))

    @property
    def trace(self):
        check(len(self.traces) == 1, f"expected one trace, found {self.traces}")
        return self.traces[0]


# Sanitizer runtimes must come first in LD_PRELOAD (test setup 'asan').
PRELOAD_PREFIX = os.environ.get("CMT_PRELOAD_PREFIX", "")
# Test setup 'valgrind': traced programs and the CLI run under memcheck.
VALGRIND = os.environ.get("CMT_VALGRIND") == "1"
VALGRIND_CMD = ["valgrind", "--quiet", "--error-exitcode=99",
                "--suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "valgrind.supp"), "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect"]


def sim_env(extra=None, preload=True, foreign=False):
    """The environment of a program under test. foreign: the program is not
    ours (python, meson, cmake, compilers): in the asan setup the sanitizer
    runtime is preloaded into it too, and its own leaks are not our concern."""
    env = dict(os.environ)
    if foreign and PRELOAD_PREFIX:
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    env["LD_LIBRARY_PATH"] = SIM_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    if PRELOAD_PREFIX:
        env["LD_PRELOAD"] = PRELOAD_PREFIX
    if preload:
        env["LD_PRELOAD"] = ":".join(p for p in (PRELOAD_PREFIX, SHIM) if p)
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def run(argv, env=None, preload=True, timeout=300, template="trace.%p.bin", input=None):
    """Runs argv under the shim with traces going to a fresh directory."""
    tmpdir = tempfile.mkdtemp(prefix="cmt-e2e-")
    extra = {"CUMEMTRACE_OUTPUT": os.path.join(tmpdir, template)}
    extra.update(env or {})
    if VALGRIND:
        argv = VALGRIND_CMD + list(argv)
        timeout *= 10
    proc = subprocess.run(argv, env=sim_env(extra, preload), capture_output=True, text=True, timeout=timeout,
                          input=input)
    return Run(proc, tmpdir)


def cli(*args, env=None, timeout=300):
    argv = [CLI, *args]
    if VALGRIND:
        argv = VALGRIND_CMD + argv
        timeout *= 10
    return subprocess.run(argv, env=sim_env(env, preload=False), capture_output=True, text=True,
                          timeout=timeout)


def report(trace, *opts):
    p = cli("report", "--json", *opts, trace)
    check(p.returncode == 0, f"report failed ({p.returncode}): {p.stderr}")
    return json.loads(p.stdout)


def device(rep, ordinal):
    for d in rep["devices"]:
        if d["ordinal"] == ordinal:
            return d
    raise Failure(f"no device {ordinal} in report: {[d['ordinal'] for d in rep['devices']]}")


def first_function(site):
    check(site["frames"], "site without frames")
    return site["frames"][0]["function"]


def site_by_function(sites, function):
    found = [s for s in sites if s["frames"] and s["frames"][0]["function"] == function]
    check(len(found) == 1, f"expected one site named {function}, found {len(found)} in "
                           f"{[first_function(s) if s['frames'] else None for s in sites]}")
    return found[0]


def cleanup(r):
    shutil.rmtree(r.dir, ignore_errors=True)


def main(module):
    """Runs test_<name> from module for each name in argv (default: all)."""
    names = sys.argv[1:] or [n[5:] for n in dir(module) if n.startswith("test_")]
    for name in names:
        fn = getattr(module, "test_" + name, None)
        if fn is None:
            print(f"no test named {name}", file=sys.stderr)
            sys.exit(2)
        try:
            fn()
        except Failure as e:
            print(f"FAIL {name}: {e}", file=sys.stderr)
            sys.exit(1)
        print(f"ok {name}")
