# SPDX-License-Identifier: MIT
"""End-to-end: the stack cache (preload/stacks/stack_cache.c) never changes a stack.

tests/e2e/programs/stack_shapes.c allocates from call paths made to trap a
cache that is not exact: callers with identical frames reaching one leaf,
recursion, alloca frames whose sizes make different paths meet at one stack
pointer, longjmp, a signal handler, threads, and a library replaced by another
at the same address. Each allocation's size names its path. Every case checks
the recorded stacks against the program's structure, that a run with
CUMEMTRACE_STACK_CACHE=check found no cached stack that differs from a full
unwind, and (where the run is deterministic) that a run without the cache
recorded the same stack ids and frames, allocation by allocation."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

REPEAT = 4  # stack_shapes.c


def tag(n):
    return n * 4096


def functions(site):
    return [f["function"] for f in site["frames"]]


def expected_shapes():
    """{functions: (bytes, count)} of stack_shapes without arguments."""
    sites = {}
    sites[("allocate", "leaf_alloc", "path_a", "run_paths", "main")] = (2 * REPEAT * tag(1), 2 * REPEAT)
    sites[("allocate", "leaf_alloc", "path_b", "run_paths", "main")] = (2 * REPEAT * tag(2), 2 * REPEAT)
    for level in range(6):
        sites[("allocate",) + ("recurse",) * (level + 1) + ("run_recursion", "main")] = (REPEAT * tag(10 + level),
                                                                                          REPEAT)
    for k in range(4):
        sites[("allocate", "with_alloca", f"caller_{k}", "run_alloca", "main")] = (
            2 * REPEAT * sum(tag(20 + 4 * k + m) for m in range(4)), 2 * REPEAT * 4)
        sites[("allocate", "fixed_leaf", "alloca_mid", f"outer_{k}", "run_alloca_deeper", "main")] = (
            2 * REPEAT * sum(tag(200 + 4 * k + m) for m in range(4)), 2 * REPEAT * 4)
    sites[("allocate", "before_jump", "run_longjmp", "main")] = (REPEAT * tag(40), REPEAT)
    sites[("allocate", "after_jump", "run_longjmp", "main")] = (REPEAT * tag(41), REPEAT)
    sites[("allocate", "on_signal", "signal_caller", "run_signals", "main")] = (REPEAT * tag(50), REPEAT)
    return sites


def run_checked(argv, env=None):
    """Runs argv under the shim with CUMEMTRACE_STACK_CACHE=check; returns the
    run and the number of cache hits that were compared with a full unwind."""
    r = cmtest.run(argv, env=dict(env or {}, CUMEMTRACE_STACK_CACHE="check"))
    eq(r.proc.returncode, 0, f"exit status of {argv}: {r.proc.stderr}")
    m = re.search(r"stack cache check: (\d+) hits compared with a full unwind, (\d+) wrong", r.proc.stderr)
    check(m, f"no stack cache check line in {r.proc.stderr!r}")
    eq(int(m.group(2)), 0, "cached stacks that differ from a full unwind")
    return r, int(m.group(1))


def dump(trace):
    p = subprocess.run([cmtest.program("stack_dump"), trace], capture_output=True, text=True,
                       env=cmtest.sim_env(preload=False))
    eq(p.returncode, 0, f"stack_dump: {p.stderr}")
    return p.stdout.splitlines()


def check_shapes(program):
    r, hits = run_checked([cmtest.program(program)])
    eq(r.proc.stdout, "stack_shapes done\n", "program output")
    # Every path but the signal handler's repeats with the same frames.
    check(hits >= 40, f"the cache served {hits} stacks, expected at least 40")
    rep = cmtest.report(r.trace, "--top", "1000")
    # Sites that differ only by a call line (the two calls of TWICE) are
    # added up: the expected figures are per sequence of functions.
    got = {}
    for s in rep["leaks"]["sites"]:
        b, c = got.get(tuple(functions(s)), (0, 0))
        got[tuple(functions(s))] = (b + s["bytes"], c + s["count"])
    eq(got, expected_shapes(), "leak sites: frames, bytes and count of every path")
    cmtest.cleanup(r)

    # Without the cache: the same ids and frames, allocation by allocation.
    on = cmtest.run([cmtest.program(program)])
    off = cmtest.run([cmtest.program(program)], env={"CUMEMTRACE_STACK_CACHE": "0"})
    a, b = dump(on.trace), dump(off.trace)
    eq(len(a), 2 * REPEAT * 2 + 6 * REPEAT + 2 * 4 * 4 * 2 * REPEAT + 3 * REPEAT, "allocations")
    eq(a, b, "stack ids and frames with and without the cache")
    cmtest.cleanup(on)
    cmtest.cleanup(off)


def test_shapes_frame_pointers():
    """-O0 with frame pointers: every frame's CFA is rbp-based."""
    check_shapes("stack_shapes_O0")


def test_shapes_optimized():
    """-O2 without frame pointers: rsp-based frames, rbp-based where alloca."""
    check_shapes("stack_shapes_O2")


def test_shapes_static_runtime():
    """Static runtime: the driver hooks' path into the shim."""
    check_shapes("stack_shapes_static")


def truncated_shapes(depth):
    """expected_shapes() with every stack cut at depth frames (depth <= 3).
    The signal handler's third frame is the signal trampoline, which the
    report folds away."""
    sites = {}
    for frames, (size, count) in expected_shapes().items():
        cut = frames[:min(depth, 2)] if "on_signal" in frames else frames[:depth]
        b, c = sites.get(cut, (0, 0))
        sites[cut] = (b + size, c + count)
    return sites


def test_depth_limit():
    """Stacks cut at the depth limit: the cache verifies only the frames it
    keeps, so paths that differ below the cut share an id, and paths that
    differ above it do not. Exact sites at depths 2 and 3, no wrong hit, and
    the same ids and frames as without the cache."""
    program = cmtest.program("stack_shapes_O0")
    for depth in (2, 3):
        env = {"CUMEMTRACE_STACK_DEPTH": str(depth)}
        r, hits = run_checked([program], env)
        check(hits >= 40, f"depth {depth}: the cache served {hits} stacks, expected at least 40")
        rep = cmtest.report(r.trace, "--top", "1000")
        got = {}
        for site in rep["leaks"]["sites"]:
            b, c = got.get(tuple(functions(site)), (0, 0))
            got[tuple(functions(site))] = (b + site["bytes"], c + site["count"])
        eq(got, truncated_shapes(depth), f"leak sites at depth {depth}")
        off = cmtest.run([program], env=dict(env, CUMEMTRACE_STACK_CACHE="0"))
        on = cmtest.run([program], env=env)
        eq(dump(on.trace), dump(off.trace), f"stack ids and frames with and without the cache, depth {depth}")
        for x in (r, on, off):
            cmtest.cleanup(x)


def sites_by_functions(trace):
    got = {}
    for site in cmtest.report(trace, "--top", "1000")["leaks"]["sites"]:
        b, c = got.get(tuple(functions(site)), (0, 0))
        got[tuple(functions(site))] = (b + site["bytes"], c + site["count"])
    return got


def test_fork():
    """A forked child inherits the parent's cached stacks but starts a trace
    whose stack ids restart: its path_b gets id 1 (path_a's id in the
    parent), and its path_a, from the very frames the parent cached, a stack
    of its own."""
    r = cmtest.run([cmtest.program("stack_shapes_O0"), "fork"], env={"CUMEMTRACE_STACK_CACHE": "check"})
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, "fork done\n", "program output")
    checks = re.findall(r"stack cache check: (\d+) hits compared with a full unwind, (\d+) wrong", r.proc.stderr)
    eq(len(checks), 2, f"a check line per process in {r.proc.stderr!r}")
    eq([int(w) for _, w in checks], [0, 0], "cached stacks that differ from a full unwind")
    eq(len(r.traces), 2, "a trace per process")
    by_role = {}
    for t in r.traces:
        lines = dump(t)
        by_role["child" if any(int(x.split()[0]) == tag(62) for x in lines) else "parent"] = (t, lines)
    a = ("allocate", "leaf_alloc", "path_a", "run_fork", "main")
    b = ("allocate", "leaf_alloc", "path_b", "run_fork", "main")
    eq(sites_by_functions(by_role["parent"][0]), {a: (REPEAT * (tag(60) + tag(63)), 2 * REPEAT)}, "parent's sites")
    eq(sites_by_functions(by_role["child"][0]), {a: (REPEAT * tag(61), REPEAT), b: (tag(62), 1)}, "child's sites")
    eq([(int(x.split()[0]), x.split()[2]) for x in by_role["child"][1]],
       [(tag(62), "1")] + [(tag(61), "2")] * REPEAT, "child's allocations and their stack ids")
    cmtest.cleanup(r)


def nm_functions(path):
    """Sorted (address, name) of the functions of an executable."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return sorted(syms)


def function_at(syms, offset):
    name = None
    for addr, sym in syms:
        if addr > offset:
            break
        name = sym
    return name


def test_threads():
    """Eight threads run the same paths at once, each with its own cache: each
    allocation's path (its size) matches its recorded frames."""
    threads = 8
    program = cmtest.program("stack_shapes_O2")
    r, hits = run_checked([program, "threads", str(threads)])
    per_thread = 50 * REPEAT * 4
    check(hits >= threads * (per_thread - 8), f"the cache served only {hits} stacks")
    syms = nm_functions(program)
    lines = dump(r.trace)
    eq(len(lines), threads * per_thread, "allocations")
    exe = os.path.basename(program)
    seen = {}
    for line in lines:
        size, _, frames = line.partition(" stack ")
        frames = frames.split(":", 1)[1]
        names = [function_at(syms, int(f.split("+0x")[1], 16) - 1) for f in frames.split()
                 if f.startswith(exe + "+")]
        index = int(size) // 4096 - 100
        eq(names[:4], ["leaf_alloc", "path_a" if index % 2 == 0 else "path_b", "run_paths", "thread_body"],
           f"frames of an allocation of tag {index + 100}")
        seen[index] = seen.get(index, 0) + 1
    eq(seen, {i: per_thread // 2 for i in range(2 * threads)}, "allocations per thread and path")
    cmtest.cleanup(r)


def test_library_replaced():
    """A library unloaded and another loaded at its address, reached through
    identical frames: the second library's allocations get a stack of their
    own that names the second library, not the first's cached one."""
    lib_a = cmtest.program("libcmt_shape_a.so")
    lib_b = cmtest.program("libcmt_shape_b.so")
    r, hits = run_checked([cmtest.program("stack_shapes_O2"), "dl", lib_a, lib_b])
    # glibc maps the second library where the first was: the frames are the
    # same numbers, which is what makes this case a trap.
    eq(r.proc.stdout, "same base: yes\n", "program output")
    eq(hits, 2 * (REPEAT - 1), "cache hits: all but the first call of each library")
    lines = dump(r.trace)
    eq(len(lines), 2 * REPEAT, "allocations")
    stacks = {}
    for line in lines:
        size, _, rest = line.partition(" stack ")
        head, frames = rest.split(":", 1)
        stack_id = head.split()[0]
        stacks.setdefault(int(size), set()).add((stack_id, frames.split()[0].split("+")[0]))
    eq(stacks, {tag(70): {("1", "libcmt_shape_a.so")}, tag(71): {("2", "libcmt_shape_b.so")}},
       "stack id and first module per library")
    cmtest.cleanup(r)


def test_cache_off_is_the_reference():
    """CUMEMTRACE_STACK_CACHE=0 records every stack with a full unwind, and
    check mode compares every hit with one: both agree with the cache on the
    frames of a program whose stacks never repeat (leak_peak)."""
    on = cmtest.run([cmtest.program("leak_peak")])
    off = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_STACK_CACHE": "0"})
    eq(dump(on.trace), dump(off.trace), "stacks of leak_peak with and without the cache")
    bad = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_STACK_CACHE": "sometimes"})
    check("ignoring CUMEMTRACE_STACK_CACHE=sometimes: expected 1, 0 or check" in bad.proc.stderr, bad.proc.stderr)
    eq(dump(bad.trace), dump(on.trace), "a malformed value keeps the default (on)")
    for r in (on, off, bad):
        cmtest.cleanup(r)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
