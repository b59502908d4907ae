# SPDX-License-Identifier: MIT
"""Issue 8: the profiler never harms the host and never loses an event:
threads, signal handlers, fork, dlopen, crashes, full disks, other preloads,
start-up order, setuid programs."""
import json
import os
import random
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

SKIP = 77


def scale(normal, under_valgrind):
    return under_valgrind if cmtest.VALGRIND else normal


def trace_check(trace):
    p = subprocess.run([cmtest.program("trace_check"), trace], capture_output=True, text=True)
    check(p.returncode == 0, f"trace_check failed: {p.stderr}")
    lines = p.stdout.splitlines()
    eq(lines[-1], "merge ordered", "merged events in time order")
    threads = {}
    for line in lines[:-1]:
        tid, allocs, frees, state = line.split()
        threads[int(tid)] = (int(allocs), int(frees), state)
    return threads


def test_stress_64_threads():
    pairs = scale(100000, 1000)
    r = cmtest.run([cmtest.program("stress_threads"), "64", str(pairs)], timeout=900)
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, f"done 64 x {pairs}\n", "output")
    threads = trace_check(r.trace)
    eq(len(threads), 64, "threads in the trace")
    for tid, (allocs, frees, state) in threads.items():
        eq((allocs, frees, state), (pairs, pairs, "ok"), f"thread {tid}: every event, in order")
    rep = cmtest.report(r.trace, "--no-symbols")
    eq(rep["events_by_api"], {"cudaMalloc": 64 * pairs, "cudaFree": 64 * pairs}, "totals")
    eq((rep["leaks"]["count"], rep["unmatched_frees"]), (0, 0), "all matched")
    cmtest.cleanup(r)


def test_signal_handler():
    n = scale(200000, 5000)
    r = cmtest.run([cmtest.program("signal_reentry"), str(n)], timeout=600)
    eq(r.proc.returncode, 0, f"no deadlock, no crash: {r.proc.stderr}")
    main_pairs, handler_pairs = (int(x) for x in r.proc.stdout.split()[1::2])
    eq(main_pairs, n, "the program's own calls all succeed")
    check(handler_pairs > 0, "the timer fired")
    rep = cmtest.report(r.trace, "--no-symbols")
    mallocs = rep["events_by_api"]["cudaMalloc"]
    eq(rep["events_by_api"]["cudaFree"], mallocs, "every recorded allocation has its release")
    # A handler that lands inside a hook passes through unrecorded; one that
    # lands between hooks is recorded in full.
    check(n <= mallocs <= n + handler_pairs, f"{n} <= {mallocs} <= {n + handler_pairs}")
    # What passed through is counted: every call is recorded or counted.
    eq(rep["events"] + rep["unrecorded"]["total"], 2 * (n + handler_pairs), "recorded plus counted")
    eq((rep["leaks"]["count"], rep["unmatched_frees"]), (0, 0), "no half-recorded pair")
    cmtest.cleanup(r)
    # The timer keeps firing while the process exits and the shim closes the
    # trace holding its locks: a handler's hook must pass through, not wait.
    for i in range(scale(30, 3)):
        r = cmtest.run([cmtest.program("signal_reentry"), str(scale(2000, 200)), "keep"], timeout=120)
        eq(r.proc.returncode, 0, f"exit under fire, run {i}: {r.proc.stderr}")
        rep = cmtest.report(r.trace, "--no-symbols")
        eq(rep["clean_exit"], True, "trace closed")
        cmtest.cleanup(r)


def test_signals_reach_program_threads():
    """The shim's page-populating helper thread (CUMEMTRACE_POPULATE=thread,
    the default) never takes a signal sent to the process; it is one thread,
    not inherited by a fork child, which never starts one (a thread started
    in a child can wait for ever on a lock inherited locked: issue 15);
    inline and off start none. Under a sanitizer runtime (the asan setup)
    none is started at all."""
    n = scale(200, 50)
    h = 0 if cmtest.PRELOAD_PREFIX else 1
    for mode, helpers, child_helpers in ((None, h, "0 0"), ("thread", h, "0 0"), ("inline", 0, "0 0"),
                                         ("off", 0, "0 0"), ("sideways", h, "0 0")):
        env = threaded_fork_env({"CUMEMTRACE_POPULATE": mode} if mode else None)
        r = run_with_pid([cmtest.program("signal_target"), str(n)], env=env)
        eq(r.proc.returncode, 0, f"exit status ({mode}): {r.err}")
        eq(r.out, f"signals {n} on-receiver {n} elsewhere 0 helpers {helpers}\nchild helpers {child_helpers}\n",
           f"output ({mode})")
        if mode == "sideways":
            check("ignoring CUMEMTRACE_POPULATE=sideways: expected thread, inline or off" in r.err,
                  f"a warning for a bad value: {r.err}")
        parent, children = reports_by_role(r)
        eq(parent["events_by_api"], {"cudaMalloc": 1000 + 10 * n, "cudaFree": 1000 + 10 * n},
           f"the parent's events ({mode})")
        eq(len(children), 1, "one child trace")
        eq(children[0]["events_by_api"], {"cudaMalloc": 1000, "cudaFree": 1000}, f"the child's events ({mode})")
        cmtest.cleanup(r)


def reports_by_role(r):
    """(parent report, [child reports]) of a run that forked."""
    reps = [cmtest.report(t, "--no-symbols") for t in r.traces]
    parent_pid = r.proc_pid
    parents = [x for x in reps if x["process"]["pid"] == parent_pid]
    children = [x for x in reps if x["process"]["ppid"] == parent_pid]
    eq(len(parents), 1, "one parent trace")
    return parents[0], children


def threaded_fork_env(extra=None):
    """The environment of forker threaded. In the asan setup without the leak
    check: GCC 12's LeakSanitizer locks the sanitizer's allocator at exit,
    and a child forked while another thread of the parent was inside that
    allocator waits for it for ever (the sanitizer has no fork handlers: an
    ASan build of main hung so in 5 runs of 8 on the development machine).
    Address and UB checks stay."""
    env = dict(extra or {})
    if cmtest.PRELOAD_PREFIX:
        env["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def run_with_pid(argv, env=None):
    """Like cmtest.run, but learns the pid of the program (a shell exec)."""
    tmpdir = tempfile.mkdtemp(prefix="cmt-e2e-")
    extra = {"CUMEMTRACE_OUTPUT": os.path.join(tmpdir, "trace.%p.bin")}
    extra.update(env or {})
    wrapped = cmtest.VALGRIND_CMD + list(argv) if cmtest.VALGRIND else list(argv)
    proc = subprocess.Popen(wrapped, env=cmtest.sim_env(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out, err = proc.communicate(timeout=900)
    proc.stdout_text, proc.stderr_text = out, err
    r = cmtest.Run(proc, tmpdir)
    r.proc_pid = proc.pid
    r.out, r.err = out, err
    return r


def test_fork_simple():
    r = run_with_pid([cmtest.program("forker"), "simple"])
    eq(r.proc.returncode, 0, f"exit status: {r.err}")
    eq(r.out, "child ok 1\n", "output")
    parent, children = reports_by_role(r)
    eq(parent["events_by_api"], {"cudaMalloc": 3}, "the parent's own events only")
    eq(parent["leaks"]["bytes"], 12 * MiB, "parent leaks")
    eq(len(children), 1, "one child trace")
    child = children[0]
    eq(child["events_by_api"], {"cudaMalloc": 2, "cudaFree": 1}, "the child's own events only")
    eq(child["leaks"]["bytes"], 1 * MiB, "child leaks")
    eq(child["clean_exit"], True, "child closed its trace")
    cmtest.cleanup(r)


def test_fork_threaded():
    r = run_with_pid([cmtest.program("forker"), "threaded"], env=threaded_fork_env())
    eq(r.proc.returncode, 0, f"exit status: {r.err}")
    eq(r.out, "children ok 20\n", "every child ran")
    parent, children = reports_by_role(r)
    eq(parent["events_by_api"], {"cudaMalloc": 80000, "cudaFree": 80000}, "parent's trace intact")
    threads = trace_check([t for t in r.traces if f".{r.proc_pid}." in t][0])
    eq(sorted(v for v in threads.values()), [(20000, 20000, "ok")] * 4, "each thread complete and in order")
    eq(len(children), 20, "a trace per child")
    for c in children:
        eq(c["events_by_api"], {"cudaMalloc": 2, "cudaFree": 1}, "child events")
        eq(c["leaks"]["bytes"], 1 * MiB, "child leak")
    cmtest.cleanup(r)


def test_fork_racing():
    """Eight threads make their first CUDA calls (the runtime's set-up and
    the profiler's) while the main thread forks 20 children: no hang, every
    child's trace, the parent's complete. The simulated driver registers its
    fork handlers when it is loaded, with the runtime, not at a thread's
    first call (issue 32); run 50 times under load by scripts/stress.sh.

    Not in the asan setup: GCC 12's AddressSanitizer has no fork handlers
    for its allocator (they came with LLVM 18, llvm-project pull request
    75290), so a child forked while another thread was inside the
    sanitizer's malloc waits for its lock for ever, with or without the
    shim. This test makes that likely by design (eight threads' first
    calls, the main thread's first touch of the driver's thread variables in
    the child): under ASan a child hung so in round 13 of 50, stuck in
    SizeClassAllocator64::GetFromAllocator from glibc's allocation of the
    simulated driver's dynamic TLS. It runs natively and under valgrind;
    forker threaded (the main thread's calls made before the threads) stays
    in the asan setup."""
    if cmtest.PRELOAD_PREFIX:
        print("skipped: GCC 12's ASan allocator is not fork-safe (no atfork handlers before LLVM 18): "
              "a child forked while another thread is in malloc can hang in the sanitizer")
        sys.exit(77)
    r = run_with_pid([cmtest.program("forker"), "racing"], env=threaded_fork_env())
    eq(r.proc.returncode, 0, f"exit status: {r.err}")
    eq(r.out, "children ok 20\n", "every child ran")
    parent, children = reports_by_role(r)
    eq(parent["events_by_api"], {"cudaMalloc": 40000, "cudaFree": 40000}, "parent's trace intact")
    threads = trace_check([t for t in r.traces if f".{r.proc_pid}." in t][0])
    eq(sorted(v for v in threads.values()), [(5000, 5000, "ok")] * 8, "each thread complete and in order")
    eq(len(children), 20, "a trace per child")
    for c in children:
        eq(c["events_by_api"], {"cudaMalloc": 2, "cudaFree": 1}, "child events")
    cmtest.cleanup(r)


def test_fork_not_followed():
    r = run_with_pid([cmtest.program("forker"), "threaded"], env=threaded_fork_env({"CUMEMTRACE_FOLLOW_FORK": "0"}))
    eq(r.proc.returncode, 0, f"exit status: {r.err}")
    eq(len(r.traces), 1, "only the parent writes a trace")
    cmtest.cleanup(r)


def test_atfork_handlers():
    r = run_with_pid([cmtest.program("atfork_alloc")])
    eq(r.proc.returncode, 0, f"no deadlock: {r.err}")
    eq(r.out, "child status 0\n", "output")
    parent, children = reports_by_role(r)
    eq(parent["leaks"]["bytes"], 3 * MiB, "prepare (1 MiB) and parent (2 MiB) handlers recorded")
    eq(len(children), 1, "child trace")
    eq(children[0]["leaks"]["bytes"], 3 * MiB, "child handler recorded in the child")
    cmtest.cleanup(r)


def test_dlopen_constructor():
    lib = cmtest.program("libctor_alloc.so")
    r = cmtest.run([cmtest.program("dlopen_ctor"), lib], timeout=600)
    eq(r.proc.returncode, 0, f"no deadlock: {r.proc.stderr}")
    eq(r.proc.stdout, "loaded 20 churned>0 1\n", "output")
    rep = cmtest.report(r.trace)
    sites = [s for s in rep["leaks"]["sites"] if s["frames"] and s["frames"][0]["function"] == "ctor_allocate"]
    eq(sum(s["count"] for s in sites), 20, "each constructor's allocation, symbolized in the library")
    eq({os.path.basename(s["frames"][0]["module"]) for s in sites}, {"libctor_alloc.so"},
       "a library loaded after start-up is in the module map")
    eq(rep["leaks"]["bytes"], 20 * MiB, "only the constructors' buffers leak")
    cmtest.cleanup(r)


def header_committed(directory):
    """Whether a trace in directory has its header's magic (written last)."""
    for name in os.listdir(directory):
        if name.endswith(".bin"):
            try:
                with open(os.path.join(directory, name), "rb") as f:
                    if f.read(8) == b"CUMEMTRC":
                        return True
            except OSError:
                pass
    return False


def test_crash_trials():
    trials = scale(100, 4)
    sigs = [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT]
    rng = random.Random(8)
    threads = 4
    for trial in range(trials):
        tmpdir = tempfile.mkdtemp(prefix="cmt-crash-")
        counters = os.path.join(tmpdir, "counters")
        env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(tmpdir, "trace.%p.bin"), "CUMEMTRACE_QUIET": "1"})
        argv = [cmtest.program("crash_stress"), counters, str(threads)]
        if cmtest.VALGRIND:
            argv = cmtest.VALGRIND_CMD + argv
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        eq(p.stdout.readline(), b"running\n", "started")
        # The random moment is counted from the trace's creation (the first
        # allocation): on a loaded machine, under a sanitizer, the threads'
        # first calls can come later than the shortest delay. Created means
        # its header committed (the magic, stored last): the file appears a
        # few steps earlier (open, fallocate, mmap), and under load a kill
        # 5 ms after it appeared found no header yet (scripts/stress.sh).
        # As long as it takes (meson's timeout catches a program that never
        # starts); a program that died first is a failure of its own.
        while not header_committed(tmpdir):
            check(p.poll() is None, f"trial {trial}: exited ({p.returncode}) before its trace was created")
            time.sleep(0.001)
        time.sleep(rng.uniform(0.005, 0.08) * (20 if cmtest.VALGRIND else 1))
        sig = sigs[trial % 3]
        os.kill(p.pid, sig)
        p.wait(timeout=120)
        check(p.returncode == -sig, f"trial {trial}: killed by {sig}, got {p.returncode}")
        with open(counters, "rb") as f:
            data = f.read(64 * threads)
        completed = sum(struct.unpack_from("<Q", data, 64 * t)[0] for t in range(threads))
        traces = [os.path.join(tmpdir, x) for x in os.listdir(tmpdir) if x.endswith(".bin")]
        eq(len(traces), 1, f"trial {trial}: one trace")
        per_thread = trace_check(traces[0])
        for tid, (allocs, frees, state) in per_thread.items():
            eq(state, "ok", f"trial {trial}: thread {tid} in order")
        recorded = sum(a + f for a, f, _ in per_thread.values())
        # Every call that returned is in the trace; at most one more per
        # thread was recorded but had not yet returned when the signal hit.
        check(completed <= recorded <= completed + threads,
              f"trial {trial} ({sig}): {completed} completed, {recorded} recorded")
        rep = cmtest.report(traces[0], "--no-symbols")
        eq(rep["clean_exit"], False, "not a clean exit")
        shutil.rmtree(tmpdir, ignore_errors=True)


def in_private_mount(script, env):
    """Runs a shell script in a private mount namespace; None when not allowed."""
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return None
    return subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True,
                          timeout=600)


def test_full_filesystem():
    mnt = tempfile.mkdtemp(prefix="cmt-full-")
    native = cmtest.run([cmtest.program("stress_threads"), "2", "50000"], preload=False)
    env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(mnt, "t.bin")})
    prog = " ".join(cmtest.VALGRIND_CMD) + " " if cmtest.VALGRIND else ""
    script = (f"mount -t tmpfs -o size=256k tmpfs {mnt} || exit {SKIP}; "
              f"{prog}{cmtest.program('stress_threads')} 2 50000 > {mnt}/out 2> {mnt}/err; echo status $? >> {mnt}/out; "
              f"cat {mnt}/out; echo ---; cat {mnt}/err; echo ---; "
              # Straight to the pipe: the full file system has no room left for it (a report written
              # there was cut short in 1 run of 12).
              f"LD_PRELOAD= {cmtest.CLI} report --json --no-symbols {mnt}/t.bin 2>&1")
    p = in_private_mount(script, env)
    if p is None or p.returncode == SKIP:
        print("skipped: cannot mount a private tmpfs here")
        sys.exit(SKIP)
    out, err, report = p.stdout.split("---\n")
    eq(out, native.proc.stdout + "status 0\n", "output and status unchanged")
    lines = err.splitlines()
    eq(len(lines), 2, f"the path line and one warning: {lines}")
    eq(lines[1], f"cumemtrace: warning: cannot grow trace {mnt}/t.bin (No space left on device); recording stopped, "
                 "the program continues: free disk space, or set CUMEMTRACE_OUTPUT to a file system with room",
       "the catalogued warning (docs/messages.md)")
    cmtest.check_catalogued("\n".join(lines))
    rep = json.loads(report)
    check(any("recording stopped early: the trace file could not grow" in w for w in rep["warnings"]),
          rep["warnings"])
    check(rep["events_dropped"] > 0, "dropped events counted")
    check(rep["events"] > 0, "events before the disk filled are kept")
    cmtest.cleanup(native)


def test_read_only_target():
    mnt = tempfile.mkdtemp(prefix="cmt-ro-")
    native = cmtest.run([cmtest.program("leak_peak")], preload=False)
    env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(mnt, "t.bin")})
    prog = " ".join(cmtest.VALGRIND_CMD) + " " if cmtest.VALGRIND else ""
    script = (f"mount -t tmpfs -o ro tmpfs {mnt} || exit {SKIP}; {prog}{cmtest.program('leak_peak')}; "
              "echo status $?")
    p = in_private_mount(script, env)
    if p is None or p.returncode == SKIP:
        print("skipped: cannot mount a private tmpfs here")
        sys.exit(SKIP)
    eq(p.stdout, native.proc.stdout + "status 0\n", "output and status unchanged")
    eq(p.stderr, f"cumemtrace: warning: cannot create trace file {mnt}/t.bin: Read-only file system; running "
                 "without tracing: set CUMEMTRACE_OUTPUT to a path in a writable directory\n", "one warning")
    cmtest.check_catalogued(p.stderr)
    cmtest.cleanup(native)


def test_max_size():
    native = cmtest.run([cmtest.program("stress_threads"), "2", "100000"], preload=False)
    r = cmtest.run([cmtest.program("stress_threads"), "2", "100000"], env={"CUMEMTRACE_MAX_SIZE": "256KiB"})
    eq((r.proc.returncode, r.proc.stdout), (native.proc.returncode, native.proc.stdout), "unchanged")
    lines = r.proc.stderr.splitlines()
    eq(len(lines), 2, f"path and one warning: {lines}")
    eq(lines[1], f"cumemtrace: warning: trace {r.trace} reached CUMEMTRACE_MAX_SIZE (262144 bytes); recording "
                 "stopped, the program continues: raise CUMEMTRACE_MAX_SIZE to record the whole run", "warning")
    cmtest.check_catalogued(r.proc.stderr)
    check(os.path.getsize(r.trace) <= 256 * 1024, "file within the limit")
    rep = cmtest.report(r.trace, "--no-symbols")
    dropped = rep["events_dropped"]
    check(dropped > 0, "dropped events counted")
    eq(rep["events"] + dropped, 400000, "recorded plus dropped is every call")
    check(any(w.startswith("recording stopped early: the trace reached CUMEMTRACE_MAX_SIZE (256.0 KiB); "
                           f"{dropped} later events were not recorded") for w in rep["warnings"]), rep["warnings"])
    cmtest.cleanup(r)
    cmtest.cleanup(native)


def test_no_cuda_no_trace():
    script = "echo hi; ls / >/dev/null; printf '%s\\n' done"
    native = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    r = cmtest.run(["sh", "-c", script])
    eq((r.proc.returncode, r.proc.stdout, r.proc.stderr), (0, native.stdout, ""), "unchanged, silent")
    eq(r.traces, [], "no trace file for a program that never allocates CUDA memory")
    cmtest.cleanup(r)


def test_python_untouched():
    code = "import json, hashlib; print(json.dumps({'x': hashlib.sha256(b'abc').hexdigest()[:8]}))"
    native = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    r = cmtest.run([sys.executable, "-c", code],
                   env={"ASAN_OPTIONS": cmtest.sim_env(foreign=True).get("ASAN_OPTIONS")})
    eq((r.proc.returncode, r.proc.stdout, r.proc.stderr), (0, native.stdout, ""), "python unchanged")
    eq(r.traces, [], "no trace")
    cmtest.cleanup(r)


def find_jemalloc():
    for d in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]:
        p = os.path.join(d, "libjemalloc.so.2")
        if os.path.exists(p):
            return p
    return None


def test_other_preloads():
    others = [x for x in [find_jemalloc(), cmtest.program("liblockfree_rt.so")] if x]
    check(len(others) >= 1, "another preload library")
    if find_jemalloc() is None:
        print("note: libjemalloc2 not installed; testing with another preload library only")
    for other in others:
        for order in ([other, cmtest.SHIM], [cmtest.SHIM, other]):
            tmpdir = tempfile.mkdtemp(prefix="cmt-pre-")
            env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(tmpdir, "t.bin"),
                                  "LD_PRELOAD": ":".join(([cmtest.PRELOAD_PREFIX] if cmtest.PRELOAD_PREFIX else [])
                                                         + order)}, preload=False)
            p = subprocess.run([cmtest.program("leak_peak")], env=env, capture_output=True, text=True)
            what = f"LD_PRELOAD={':'.join(order)}"
            if other.endswith("liblockfree_rt.so") and order[0] == other:
                # lockfree_rt defines cudaMalloc itself: placed first it is the
                # program's runtime and the shim is never reached. Nothing to
                # record, and nothing may break.
                eq(p.returncode, 0, f"{what}: status")
                shutil.rmtree(tmpdir, ignore_errors=True)
                continue
            eq((p.returncode, p.stdout), (0, "leak_peak done\n"), f"{what}: program unchanged")
            rep = cmtest.report(os.path.join(tmpdir, "t.bin"))
            if other.endswith("liblockfree_rt.so"):
                eq(rep["events_by_api"], {"cudaMalloc": 12, "cudaFree": 6}, f"{what}: events")
            else:
                eq(cmtest.device(rep, 0)["peak_bytes"], 115 * MiB, f"{what}: peak")
                eq(rep["leaks"]["bytes"], 69 * MiB, f"{what}: leaks")
            shutil.rmtree(tmpdir, ignore_errors=True)


def test_early_constructor():
    tmpdir = tempfile.mkdtemp(prefix="cmt-early-")
    early = cmtest.program("libearly_alloc.so")
    env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(tmpdir, "t.%p.bin"),
                          "LD_PRELOAD": ":".join(([cmtest.PRELOAD_PREFIX] if cmtest.PRELOAD_PREFIX else [])
                                                 + [early, cmtest.SHIM])}, preload=False)
    p = subprocess.run([cmtest.program("leak_peak")], env=env, capture_output=True, text=True)
    eq((p.returncode, p.stdout), (0, "leak_peak done\n"), "program unchanged")
    traces = os.listdir(tmpdir)
    eq(len(traces), 1, f"one trace, where CUMEMTRACE_OUTPUT says: {traces}")
    rep = cmtest.report(os.path.join(tmpdir, traces[0]))
    eq(rep["leaks"]["bytes"], 69 * MiB + 5 * MiB, "the constructor's allocation is recorded too")
    eq(cmtest.site_by_function(rep["leaks"]["sites"], "early_allocate")["bytes"], 5 * MiB, "its site")
    shutil.rmtree(tmpdir, ignore_errors=True)


def test_setuid_ignores_environment():
    if os.geteuid() != 0:
        print("skipped: needs root to make a setuid program")
        sys.exit(SKIP)
    tmpdir = tempfile.mkdtemp(prefix="cmt-suid-")
    os.chmod(tmpdir, 0o777)
    prog = os.path.join(tmpdir, "secure_env")
    shutil.copy(cmtest.program("secure_env"), prog)
    evil = os.path.join(tmpdir, "evil")
    os.mkdir(evil)
    os.chmod(evil, 0o777)
    env = {"CUMEMTRACE_OUTPUT": os.path.join(evil, "t.%p.bin"), "PATH": os.environ.get("PATH", "")}
    # Control: not setuid, the variable is honoured.
    p = subprocess.run([prog], env=env, cwd=tmpdir, capture_output=True, text=True)
    eq(p.returncode, 0, f"control run: {p.stderr}")
    eq(len(os.listdir(evil)), 1, "without setuid the variable is honoured")
    for f in os.listdir(evil):
        os.unlink(os.path.join(evil, f))
    os.chown(prog, 65534, 65534)
    os.chmod(prog, 0o4755)
    p = subprocess.run([prog], env=env, cwd=tmpdir, capture_output=True, text=True)
    st = os.stat(prog)
    if not (st.st_mode & stat.S_ISUID) or "cudaMalloc" not in p.stdout:
        print(f"skipped: setuid programs cannot run here ({p.stderr.strip()})")
        sys.exit(SKIP)
    eq(p.stdout, "cudaMalloc 0 device 0\n", "program unchanged")
    eq(os.listdir(evil), [], "a setuid program ignores CUMEMTRACE_OUTPUT")
    defaults = [f for f in os.listdir(tmpdir) if f.startswith("cumemtrace.") and f.endswith(".bin")]
    eq(len(defaults), 1, f"the default path is used instead: {os.listdir(tmpdir)}")
    shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
