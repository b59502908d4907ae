# SPDX-License-Identifier: MIT
"""The shim never harms its host: special output paths, file-size limits,
CUMEMTRACE_MAX_SIZE that records what fits (issue 15)."""
import json
import os
import socket
import subprocess
import sys
import tempfile

import cmtest
from cmtest import check, eq

KiB = 1024


def native(argv):
    return subprocess.run(argv, env=cmtest.sim_env(preload=False), capture_output=True, text=True, timeout=300)


def test_output_special_paths():
    """A device, a fifo, a socket, a directory and a path in /proc are
    refused with one warning; the program runs unchanged and no file
    appears beside them (/dev/null.1 was created before)."""
    prog = [cmtest.program("leak_peak")]
    ref = native(prog)
    d = tempfile.mkdtemp(prefix="cmt-special-")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    sock_path = os.path.join(d, "sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(sock_path)
    outdir = os.path.join(d, "dir")
    os.mkdir(outdir)
    cases = [("/dev/null", "a character device"), (fifo, "a fifo"), (sock_path, "a socket"), (outdir, "a directory"),
             ("/proc/self/cmt.bin", "in /proc")]

    def beside(path):
        """What the O_EXCL retries would have created: PATH.1, ... (other
        tests use the same directories meanwhile: only these count)."""
        base = os.path.basename(path)
        return sorted(f for f in os.listdir(os.path.dirname(path)) if f.startswith(base) and f != base)

    for path, what in cases:
        p = subprocess.run(prog, env=cmtest.sim_env({"CUMEMTRACE_OUTPUT": path}), capture_output=True, text=True,
                           timeout=300)
        eq((p.returncode, p.stdout), (ref.returncode, ref.stdout), f"program unchanged with {path}")
        eq(p.stderr, f"cumemtrace: warning: CUMEMTRACE_OUTPUT {path} is {what}, not a place for a trace file; "
                     "running without tracing: set CUMEMTRACE_OUTPUT to a file path such as trace.%p.bin\n",
           f"one warning for {path}")
        cmtest.check_catalogued(p.stderr)
        eq(beside(path), [], f"nothing created beside {path}")
    check(not os.path.exists("/dev/null.1"), "no /dev/null.1")
    sock.close()
    for f in (fifo, sock_path):
        os.unlink(f)
    os.rmdir(outdir)
    os.rmdir(d)


def test_file_size_limit():
    """Under `ulimit -f` the trace stops at the limit with one warning: no
    SIGXFSZ (status 153 before), the output intact, the trace readable and
    marked as stopped early."""
    argv = [cmtest.program("stress_threads"), "1", "20000"]
    ref = native(argv)
    d = tempfile.mkdtemp(prefix="cmt-fsize-")
    trace = os.path.join(d, "t.bin")
    env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": trace})
    prog = " ".join(cmtest.VALGRIND_CMD + argv) if cmtest.VALGRIND else " ".join(argv)
    # 128 blocks of 1 KiB (bash's unit): 131072 bytes.
    p = subprocess.run(["bash", "-c", f"ulimit -f 128; exec {prog}"], env=env, capture_output=True, text=True,
                       timeout=600)
    eq((p.returncode, p.stdout), (ref.returncode, ref.stdout), f"status and output unchanged: {p.stderr}")
    lines = p.stderr.splitlines()
    eq(lines, [f"cumemtrace: writing trace to {trace}",
               f"cumemtrace: warning: trace {trace} reached the file size limit (RLIMIT_FSIZE, 131072 bytes); "
               "recording stopped, the program continues: raise `ulimit -f` to record the whole run"],
       "the path line and one warning")
    cmtest.check_catalogued(p.stderr)
    eq(os.path.getsize(trace), 128 * KiB, "the trace fills the limit")
    rep = cmtest.report(trace, "--no-symbols")
    check(rep["events"] > 1000, f"events before the limit are kept: {rep['events']}")
    eq(rep["events"] + rep["events_dropped"], 40000, "recorded plus dropped is every call")
    check(any(w.startswith("recording stopped early: the trace file could not grow") for w in rep["warnings"]),
          rep["warnings"])
    os.unlink(trace)
    os.rmdir(d)


def test_max_size_sweep():
    """A larger CUMEMTRACE_MAX_SIZE never records fewer events; a tiny one
    records what fits after the header; each fills its limit."""
    argv = [cmtest.program("stress_threads"), "1", "20000"]
    total = 40000
    last = -1
    # 68 KiB and less recorded nothing, 160 KiB fewer than 128 KiB. An
    # event's size follows the time since the previous one (a varint): under
    # valgrind only limits far enough apart that its slower clock cannot
    # turn the order.
    limits = (12, 24, 48, 96, 192) if cmtest.VALGRIND else (12, 16, 24, 32, 48, 64, 68, 72, 96, 128, 160, 192, 224)
    for kib in limits:
        r = cmtest.run(argv, env={"CUMEMTRACE_MAX_SIZE": f"{kib}KiB"})
        eq(r.proc.returncode, 0, f"exit status at {kib} KiB: {r.proc.stderr}")
        eq(os.path.getsize(r.trace), kib * KiB, f"the trace fills {kib} KiB")
        rep = cmtest.report(r.trace, "--no-symbols")
        events = rep["events"]
        eq(events + rep["events_dropped"], total, f"recorded plus dropped at {kib} KiB")
        check(events > 0, f"{kib} KiB records something")
        check(events >= last, f"{kib} KiB records {events} events, fewer than the {last} of a smaller limit")
        last = events
        cmtest.cleanup(r)


def run_cli_plain(args, tmpdir, extra=None, timeout=300):
    """`cumemtrace run ARGS` with no LD_PRELOAD of the user's: the sanitizer
    runtime must be found by `run` itself (the asan setup's prefix is
    dropped too)."""
    env = {"LD_PRELOAD": None, "CUMEMTRACE_OUTPUT": os.path.join(tmpdir, "trace.%p.bin")}
    env.update(extra or {})
    return subprocess.run([cmtest.CLI, "run", *args], env=cmtest.sim_env(env, preload=False), capture_output=True,
                          text=True, timeout=timeout)


def asan_fork_checked(n, tmpdir, timeout=300):
    p = run_cli_plain(["--", cmtest.program("asan_fork"), str(n)], tmpdir, timeout=timeout)
    eq((p.returncode, p.stdout), (0, f"parent threads 1 children ok {n}\n"),
       f"status and output (no thread of the shim's in parent or children): {p.stderr}")
    traces = sorted(os.path.join(tmpdir, f) for f in os.listdir(tmpdir))
    eq(len(traces), n + 1, "a trace per process")
    return traces


def test_run_sanitizer_runtime():
    """`cumemtrace run` of an ASan-built program puts libasan first in
    LD_PRELOAD by itself (it failed at once: "ASan runtime does not come
    first in initial library list"); a preload of the user's stays after
    the shim."""
    if cmtest.VALGRIND:
        print("skipped: an ASan program does not run under valgrind")
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="cmt-asan-run-")
    traces = asan_fork_checked(2, d)
    reps = [cmtest.report(t, "--no-symbols") for t in traces]
    eq(sorted(str(r["events_by_api"]) for r in reps),
       ["{'cudaMalloc': 1}"] + ["{'cudaMalloc': 2, 'cudaFree': 1}"] * 2, "the parent's and each child's events")
    eq([r["clean_exit"] for r in reps], [True] * 3, "every trace closed")
    for t in traces:
        os.unlink(t)
    # With a preload of the user's: the runtime first, then the shim, then it.
    interposer = os.path.join(cmtest.PROGRAMS, "libinterposer.so")
    # In the asan setup the CLI is an ASan program too: the user's preload
    # must then start with the runtime for the CLI itself to start.
    user = ":".join(p for p in (cmtest.PRELOAD_PREFIX, interposer) if p)
    p = run_cli_plain(["--", cmtest.program("asan_fork"), "0"], d, {"LD_PRELOAD": user})
    eq((p.returncode, p.stdout), (0, "parent threads 1 children ok 0\n"), f"with a user preload: {p.stderr}")
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


def test_fork_asan_program():
    """An ASan-built program that forks children which exit normally (ASan's
    leak check runs in each): no thread of the shim's is started in a child
    (one was, and hung there on ASan's allocator lock) nor, under a
    sanitizer, in the parent; every child's trace is whole."""
    if cmtest.VALGRIND:
        print("skipped: an ASan program does not run under valgrind")
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="cmt-asan-fork-")
    traces = asan_fork_checked(20, d)
    reps = [cmtest.report(t, "--no-symbols") for t in traces]
    children = [r for r in reps if r["events_by_api"] == {"cudaMalloc": 2, "cudaFree": 1}]
    eq(len(children), 20, "every child's events")
    eq([r["leaks"]["bytes"] for r in children], [1 << 20] * 20, "each child leaks its 1 MiB")
    eq(all(r["clean_exit"] for r in reps), True, "every trace closed")
    for t in traces:
        os.unlink(t)
    os.rmdir(d)


def test_fork_asan_stress():
    """The same, 50 runs in a row beside two busy loops."""
    if cmtest.VALGRIND:
        print("skipped: an ASan program does not run under valgrind")
        sys.exit(77)
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        for i in range(50):
            d = tempfile.mkdtemp(prefix="cmt-asan-stress-")
            for t in asan_fork_checked(5, d, timeout=120):
                os.unlink(t)
            os.rmdir(d)
    finally:
        for p in loops:
            p.kill()
            p.wait()


def traced_summary(argv, extra):
    r = cmtest.run(argv, env=extra)
    rep = cmtest.report(r.trace, "--no-symbols")
    out = (r.proc.returncode, r.proc.stdout, r.proc.stderr.splitlines()[1:], rep["events_by_api"],
           rep["leaks"]["bytes"], rep["unmatched_frees"], rep["unrecorded"]["total"])
    cmtest.cleanup(r)
    return out


def test_driver_loaded_locally_without_symbolic():
    """A driver built without -Bsymbolic, loaded RTLD_LOCAL by the runtime
    (dlopen's default): its cuGetProcAddress table and its own calls bind
    to the shim's exports, and no definition lies behind the shim in the
    global scope. The shim finds the real functions through the library
    the runtime looked them up in: the program runs as without the shim
    ("cuGetProcAddress_v2: no definition found after the shim; the call
    fails" before) and the trace is the same as with the ordinary driver,
    for the dynamic runtime and the static one (through cuGetProcAddress)."""
    nosym = os.environ["CMT_SIM_NOSYMBOLIC_DIR"]
    devices = {"SIMCUDA_DEVICES": "2"}  # runtime_calls uses device 1
    local = dict(devices, LD_LIBRARY_PATH=nosym + ":" + cmtest.SIM_DIR + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    for name in ("leak_peak", "runtime_calls", "runtime_calls_static"):
        argv = [cmtest.program(name)]
        ref = subprocess.run(argv, env=cmtest.sim_env(local, preload=False), capture_output=True, text=True,
                             timeout=300)
        ordinary = traced_summary(argv, devices)
        got = traced_summary(argv, local)
        eq(got[:3], (ref.returncode, ref.stdout, []), f"{name}: status and output unchanged, no warning")
        eq(got, ordinary, f"{name}: the same trace as with the ordinary driver")
        eq(got[-1], 0, f"{name}: the driver's calls into its own exports are not taken for unrecorded calls")


def test_no_real_function():
    """A hook that finds no real function anywhere answers as a library
    that cannot initialise (CUDA_ERROR_NOT_INITIALIZED,
    cudaErrorInitializationError), warns once per name, never aborts."""
    code = ("import ctypes, sys\n"
            f"shim = ctypes.CDLL({cmtest.SHIM!r})\n"
            "p = ctypes.c_void_p()\n"
            "print(shim.cuMemAlloc_v2(ctypes.byref(p), 4096), shim.cuMemAlloc_v2(ctypes.byref(p), 4096),\n"
            "      shim.cudaMalloc(ctypes.byref(p), 4096), shim.cudaMalloc(ctypes.byref(p), 4096))\n")
    env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": "/tmp/cmt-no-real-%p.bin", "CUMEMTRACE_DISABLE": None},
                         preload=False, foreign=True)
    env["LD_LIBRARY_PATH"] = ""
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    eq((p.returncode, p.stdout), (0, "3 3 3 3\n"), f"error codes: {p.stderr}")
    warnings = [l for l in p.stderr.splitlines() if "no definition found" in l]
    remedy = ": check that the CUDA library is loaded, and that no other preload hides it"
    eq(warnings, ['cumemtrace: warning: cuMemAlloc_v2: no definition found after the shim; the call returns the '
                  'library\'s "not initialized" error' + remedy,
                  'cumemtrace: warning: cudaMalloc: no definition found after the shim; the call returns the '
                  'library\'s "not initialized" error' + remedy], "one warning per name")
    cmtest.check_catalogued("\n".join(warnings))


UNRECORDED = ("{n} allocation or release calls were not recorded: they were made inside another CUDA call of the "
              "same thread (a signal handler) or during the profiler's own exit or fork work; live bytes and leaks "
              "miss them")


def test_signal_handler_counted():
    """Allocations made by a signal handler that runs inside a CUDA call
    cannot be recorded: they are counted exactly, every view says so, and
    `check` cannot judge leaks (status 2; 49,517 such leaks went unseen,
    with no word, before)."""
    n = 2000
    r = cmtest.run([cmtest.program("signal_in_call"), str(n)])
    eq((r.proc.returncode, r.proc.stdout), (0, f"main {n} handler {n}\n"), f"program: {r.proc.stderr}")
    rep = cmtest.report(r.trace, "--no-symbols")
    eq(rep["events_by_api"], {"cudaMalloc": n, "cudaFree": n}, "the main thread's calls recorded")
    eq(rep["unrecorded"], {"total": n, "after_recording_stopped": 0, "nested_calls": n}, "the handler's counted")
    check(UNRECORDED.format(n=n) in rep["warnings"], rep["warnings"])
    text = cmtest.cli("report", "--no-symbols", r.trace)
    eq(text.returncode, 0, "report status")
    check(f"  - {UNRECORDED.format(n=n)}\n" in text.stdout, text.stdout)
    frag = cmtest.cli("frag", "--no-symbols", r.trace)
    eq(frag.returncode, 0, "frag status")
    check(f"  - {UNRECORDED.format(n=n)}\n" in frag.stdout, frag.stdout)
    chk = cmtest.cli("check", r.trace)
    eq(chk.returncode, 2, f"check cannot judge leaks: {chk.stdout}{chk.stderr}")
    check(f"ERROR {r.trace} " in chk.stdout + chk.stderr, chk.stdout + chk.stderr)
    check(f"{n} allocation or release calls were not recorded (made inside another CUDA call of the same thread, "
          "such as in a signal handler): leaks were not checked (--check-incomplete checks what was recorded)"
          in chk.stdout + chk.stderr, chk.stdout + chk.stderr)
    js = cmtest.cli("check", "--format", "json", r.trace)
    eq(json.loads(js.stdout)["traces"][0]["complete"], False, "check's JSON: not complete")
    inc = cmtest.cli("check", "--check-incomplete", r.trace)
    eq(inc.returncode, 0, f"--check-incomplete checks what was recorded: {inc.stdout}{inc.stderr}")
    cmtest.cleanup(r)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
