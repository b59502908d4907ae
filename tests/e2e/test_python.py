# SPDX-License-Identifier: MIT
"""End-to-end: Python frames in the recorded stacks (preload/python/), and
the runtime called through ctypes (recorded as the API the program called).

tests/e2e/programs/py_alloc.py allocates through ctypes on the simulated
device from lines marked `# @name`; each allocation's size names the path.
The cases check, from the report's full stacks, the file, function and line
of every Python frame, where they sit among the native frames (each frame of
the evaluation loop replaced by the Python frames it ran), a C thread that
allocates while Python holds the GIL, Python threads, the stack cache with
two Python paths over one native path, the depth limit, the switch, a
program without Python and interpreters the shim does not know."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

MiB = cmtest.MiB
PROGRAM = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "programs", "py_alloc.py")
HELPER = cmtest.program("libpy_helper.so")
SYNTHETIC = 1 << 63


def markers():
    lines = {}
    with open(PROGRAM) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"# @(\w+)", text)
            if m:
                lines[m.group(1)] = number
    return lines


L = markers()


def here(function, marker):
    return (function, "py_alloc.py", L[marker])


def python_env(extra=None):
    # The interpreter is not ours: under the sanitizer its leaks are not our
    # concern. (PYTHONMALLOC=malloc would make valgrind report the
    # interpreter's own collector at exit, shim or not.)
    env = {"ASAN_OPTIONS": cmtest.sim_env(foreign=True).get("ASAN_OPTIONS")}
    env.update(extra or {})
    return env


def run_python(mode, *args, env=None, python=None):
    argv = [python or sys.executable, PROGRAM, mode, *args]
    r = cmtest.run(argv, env=python_env(env))
    eq(r.proc.returncode, 0, f"exit status of {mode}: {r.proc.stderr}")
    check(f"done {mode}" in r.proc.stdout, f"{mode} did not finish: {r.proc.stdout!r}")
    return r


def report(r):
    return cmtest.report(r.trace, "--full-stacks", "--top", "1000")


def physical(site):
    return [f for f in site["frames"] if not f.get("inlined")]


def is_python(frame):
    return frame["address"] >= SYNTHETIC


def python_frames(site):
    return [(f["function"], os.path.basename(f["file"] or ""), f["line"]) for f in site["frames"] if is_python(f)]


def functions(site):
    return [f["function"] for f in site["frames"]]


def sites_of(rep, size):
    return [s for s in rep["leaks"]["sites"] if s["count"] and s["bytes"] == size * s["count"]]


def one_site(rep, size, count=1):
    found = sites_of(rep, size)
    eq(len(found), 1, f"sites of {size} bytes")
    eq(found[0]["count"], count, f"allocations of {size} bytes")
    return found[0]


def innermost_in_libffi(site, what):
    """The event is the program's call, cudaMalloc through ctypes: its stack
    starts where libffi called it, as a C program's starts at its call, and
    nothing of the runtime below it is in it."""
    eq(site["api"], "cudaMalloc", f"{what}: the API the program called")
    module = os.path.basename(site["frames"][0]["module"] or "")
    check(module.startswith("libffi"), f"{what}: innermost frame in libffi, not {module}")
    check("cudaMalloc" not in functions(site), f"{what}: the runtime's own frames in {functions(site)}")


def check_merged(site, what):
    """The stack starts at ctypes' call into cudaMalloc, reaches the Python
    frames through ctypes' native frames, and no evaluation-loop frame is
    left where Python frames replaced it; the Python frames of one loop
    call are consecutive."""
    names = functions(site)
    innermost_in_libffi(site, what)
    first = next(i for i, f in enumerate(site["frames"]) if is_python(f))
    check("PyCFuncPtr_call" in names[:first], f"{what}: ctypes' frames before the Python ones: {names[:first]}")
    check("_PyEval_EvalFrameDefault" not in names, f"{what}: an evaluation-loop frame left in {names}")


def test_known_lines():
    r = run_python("lines")
    rep = report(r)
    expect = {
        1 * MiB: [here("allocate", "allocate"), here("Model.forward", "forward"), here("lines", "lines_forward"),
                  here("<module>", "module_call")],
        2 * MiB: [here("allocate", "allocate"), here("lines", "lines_direct"), here("<module>", "module_call")],
        3 * MiB: [here("allocate", "allocate"), here("nested", "nested_leaf")] + [here("nested", "nested")] * 3 +
                 [here("lines", "lines_nested"), here("<module>", "module_call")],
    }
    for size, frames in expect.items():
        site = one_site(rep, size)
        eq(python_frames(site), frames, f"Python frames of the {size >> 20} MiB allocation")
        check_merged(site, f"{size >> 20} MiB")
        check(all(f["file"] == PROGRAM for f in site["frames"] if is_python(f)), "the script's full path")
    eq(rep["notes"], [], "notes")
    cmtest.cleanup(r)


def test_other_executable():
    """The interpreter found in the executable itself (Debian's python3.11
    exports _PyRuntime from the program), not in a libpython."""
    other = "/usr/bin/python3.11"
    check(os.path.exists(other), f"{other} is needed (scripts/setup.sh installs python3)")
    if os.path.realpath(other) == os.path.realpath(sys.executable):
        print(f"note: {sys.executable} is {other}; the libpython case is the one not covered")
    r = run_python("lines", python=other)
    rep = report(r)
    site = one_site(rep, 1 * MiB)
    eq(python_frames(site), [here("allocate", "allocate"), here("Model.forward", "forward"),
                             here("lines", "lines_forward"), here("<module>", "module_call")], "Python frames")
    innermost_in_libffi(site, "other executable")
    cmtest.cleanup(r)


def test_callback_order():
    """Python -> C -> Python -> allocation: the inner Python frames, then the
    native frames of ctypes' callback and the C function, then the outer
    Python frames."""
    r = run_python("callback", HELPER)
    rep = report(r)
    site = one_site(rep, 6 * MiB)
    eq(python_frames(site), [here("allocate", "allocate"), here("inner", "inner"),
                             here("on_callback", "on_callback"), here("callback", "callback_call"),
                             here("<module>", "module_call")], "Python frames")
    check_merged(site, "callback")
    names = functions(site)
    inner = names.index("on_callback")
    outer = names.index("callback")
    c_function = names.index("cmt_py_call_back")
    check(inner < c_function < outer, f"the C function between the inner and outer Python frames: {names}")
    between = names[inner + 1:c_function]
    check("_CallPythonObject" in between or "closure_fcn" in between,
          f"ctypes' callback frames between the callback and the C function: {between}")
    eq(names[outer + 1:].count("_PyEval_EvalFrameDefault"), 0, "evaluation-loop frames after the outer frames")
    cmtest.cleanup(r)


CTYPES = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "programs", "ctypes_runtime.py")
LIBCUDART = os.path.join(os.environ["CMT_SIM_DIR"], "libcudart.so.13")


def test_ctypes_runtime_named():
    """Issue 33, item 4: cudaMalloc called through ctypes on a libcudart the
    program opened itself (RTLD_LOCAL) is recorded as cudaMalloc, the API
    the program called, not as the cuMemAlloc the runtime makes inside it:
    dlsym on that handle hands out the shim's hook, which calls the very
    function dlsym found."""
    r = cmtest.run([sys.executable, CTYPES, "local", LIBCUDART], env=python_env())
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout.splitlines()[-1], "done", "the program finished")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {"cudaMalloc": 13, "cudaFree": 5}, "events by API")
    eq(rep["leaks"]["bytes"], sum(i * MiB for i in range(6, 14)), "bytes live at exit")
    cmtest.cleanup(r)


def test_ctypes_other_runtime_untouched():
    """The hook is handed out only in place of the function it calls: with
    one libcudart loaded globally (the hooks forward to it) and another file
    of it opened locally, the local one's cudaMalloc is passed through as
    dlsym found it (its call recorded where the driver sees it), and both
    calls succeed with their own pointers."""
    tmp = tempfile.mkdtemp(prefix="cmt-ctypes-")
    copy = os.path.join(tmp, "libcudart_copy.so.13")
    shutil.copyfile(LIBCUDART, copy)
    r = cmtest.run([sys.executable, CTYPES, "two", LIBCUDART, copy], env=python_env())
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout.splitlines()[-1], "done", "the program finished")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {"cudaMalloc": 1, "cudaFree": 1, "cuMemAlloc": 1, "cuMemFree": 1}, "events by API")
    eq(rep["leaks"]["bytes"], 0, "bytes live at exit")
    shutil.rmtree(tmp)
    cmtest.cleanup(r)


def test_c_thread_with_gil_held():
    """A thread of C code allocates while the main thread runs Python code
    and holds the GIL: native frames only, every allocation recorded, no
    deadlock (the run finishes)."""
    r = run_python("c_thread", HELPER)
    rep = report(r)
    site = one_site(rep, 7 * 65536, count=200)
    eq(python_frames(site), [], "Python frames of the C thread")
    names = functions(site)
    eq(names[:2], ["c_thread_allocate", "c_thread_main"], "the C thread's frames")
    main = one_site(rep, 8 * MiB)
    eq(python_frames(main), [here("allocate", "allocate"), here("c_thread", "c_thread_main"),
                             here("<module>", "module_call")], "the main thread's Python frames")
    cmtest.cleanup(r)


def test_python_threads():
    """Each Python thread's allocation holds its own Python frames."""
    r = run_python("python_threads")
    rep = report(r)
    worker = python_frames(one_site(rep, 9 * MiB))
    eq(worker[:2], [here("allocate", "allocate"), here("thread_worker", "thread_worker")], "worker's own frames")
    eq([(f, file) for f, file, _ in worker[2:]],
       [("Thread.run", "threading.py"), ("Thread._bootstrap_inner", "threading.py"),
        ("Thread._bootstrap", "threading.py")], "threading's frames below the worker")
    eq(python_frames(one_site(rep, 10 * MiB)), [here("allocate", "allocate"), here("python_threads", "threads_main"),
                                                here("<module>", "module_call")], "main thread's frames")
    cmtest.cleanup(r)


def test_cache_tells_paths_apart():
    """Two Python lines reach the allocation through one native path: the
    stack cache must not give one the other's stack; the check mode compares
    every hit with a full unwind and merge."""
    for mode in ("1", "check"):
        r = run_python("paths", env={"CUMEMTRACE_STACK_CACHE": mode})
        rep = report(r)
        eq(python_frames(one_site(rep, 4 * MiB, count=6)),
           [here("allocate", "allocate"), here("paths", "paths_odd"), here("<module>", "module_call")],
           f"odd iterations (cache {mode})")
        eq(python_frames(one_site(rep, 5 * MiB, count=6)),
           [here("allocate", "allocate"), here("paths", "paths_even"), here("<module>", "module_call")],
           f"even iterations (cache {mode})")
        if mode == "check":
            m = re.search(r"stack cache check: (\d+) hits compared with a full unwind, (\d+) wrong", r.proc.stderr)
            check(m, f"no stack cache check line in {r.proc.stderr!r}")
            eq(int(m.group(2)), 0, "cached stacks that differ from a full unwind")
            check(int(m.group(1)) >= 10, f"the cache served the repeated paths: {m.group(1)} hits")
        cmtest.cleanup(r)


def test_deep_stack_depth_limit():
    """The depth limit is the native walk's; Python frames come on top, up
    to 256 frames in all: 50 and 80 Python frames all kept (80 at the
    default limit of 64), 300 cut to the innermost ones at 256."""
    for depth, env in ((50, {"CUMEMTRACE_STACK_DEPTH": "256"}), (80, None)):
        r = run_python("deep", str(depth), "3", env=env)
        site = one_site(report(r), MiB, count=3)
        eq(python_frames(site), [here("allocate", "allocate"), here("deep", "deep_leaf")] +
           [here("deep", "deep")] * depth + [here("<module>", "module_deep")], f"all {depth} Python frames")
        native = [f for f in physical(site) if not is_python(f)]
        check(len(native) <= 64, f"at most 64 native frames: {len(native)}")
        cmtest.cleanup(r)
    r = run_python("deep", "300", "3")
    site = one_site(report(r), MiB, count=3)
    frames = physical(site)
    eq(len(frames), 256, "frames in all at most 256")
    first = next(i for i, f in enumerate(frames) if is_python(f))
    eq(python_frames(site), [here("allocate", "allocate"), here("deep", "deep_leaf")] +
       [here("deep", "deep")] * (256 - first - 2), "the innermost Python frames")
    cmtest.cleanup(r)


def test_native_stack_past_depth_limit():
    """Native frames deeper than the depth limit between the interpreter and
    the allocation (a framework's C++): the innermost native frames up to the
    limit, then the Python frames all the same."""
    for limit in (64, 16):
        r = run_python("deep_native", HELPER, "100", env={"CUMEMTRACE_STACK_DEPTH": str(limit)})
        site = one_site(report(r), 9 * MiB)
        eq(len(physical(site)), limit + 2, f"native frames at the limit of {limit}, then the Python frames")
        eq(functions(site)[:limit], ["cmt_py_deep_native"] * limit, f"the innermost {limit} native frames first")
        eq(python_frames(site), [here("deep_native", "deep_native_call"), here("<module>", "module_call")],
           f"the script's frames at a limit of {limit}")
        cmtest.cleanup(r)


def test_switched_off():
    """CUMEMTRACE_PYTHON=0: native frames only (so the three allocations of
    `lines`, whose native paths differ only in how deep the loop frames
    are, fall into fewer sites), the evaluation loop's frames kept."""
    r = run_python("lines", env={"CUMEMTRACE_PYTHON": "0"})
    rep = report(r)
    sites = rep["leaks"]["sites"]
    eq((rep["leaks"]["count"], rep["leaks"]["bytes"]), (3, 6 * MiB), "allocations recorded")
    for site in sites:
        eq(python_frames(site), [], "Python frames with CUMEMTRACE_PYTHON=0")
        check("_PyEval_EvalFrameDefault" in functions(site), "the evaluation loop's native frames")
    eq(rep["notes"], [], "notes")
    cmtest.cleanup(r)


def stack_dump(trace):
    p = subprocess.run([cmtest.program("stack_dump"), trace], capture_output=True, text=True,
                       env=cmtest.sim_env(preload=False))
    eq(p.returncode, 0, f"stack_dump: {p.stderr}")
    return p.stdout


def test_no_python():
    """A program without Python records the very stacks it records with the
    Python frames switched off, and no FRAME record or note."""
    dumps = []
    for value in (None, "0"):
        r = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_PYTHON": value})
        eq(r.proc.returncode, 0, f"leak_peak: {r.proc.stderr}")
        dumps.append(stack_dump(r.trace))
        rep = report(r)
        check(all(not is_python(f) for s in rep["leaks"]["sites"] for f in s["frames"]), "no synthetic frame")
        eq(rep["notes"], [], "notes")
        cmtest.cleanup(r)
    check(dumps[0].count("\n") > 0, "allocations dumped")
    eq(dumps[0], dumps[1], "stacks with and without CUMEMTRACE_PYTHON=0")


def check_fake(program, text):
    r = cmtest.run([cmtest.program(program)])
    eq((r.proc.returncode, r.proc.stdout), (0, "done\n"), f"{program}: {r.proc.stderr}")
    rep = report(r)
    eq([(n["source"], n["text"]) for n in rep["notes"]], [("python", text)], "one note")
    site = one_site(rep, MiB, count=3)
    eq(functions(site)[:2], ["fake_python_allocate", "main"], "native frames")
    eq(python_frames(site), [], "Python frames")
    cmtest.cleanup(r)


def test_unknown_version():
    check_fake("fake_python_315", "interpreter version 3.15 not known: native frames only")


def test_unknown_version_string():
    """Before 3.11 there is no Py_Version: the version comes from
    Py_GetVersion's answer."""
    check_fake("fake_python_38", "interpreter version 3.8 not known: native frames only")


def test_debug_offsets_rejected():
    check_fake("fake_python_313", "interpreter 3.13: its debug offsets are not the layout the shim knows: "
                                  "native frames only")


def encode_310(code):
    """co_lines() in 3.10's co_linetable format, as 3.10's compiler wrote it
    (Python/compile.c, assemble_line_range): (byte delta, line delta) pairs,
    -128 for no line, long ranges and line jumps split."""
    out = bytearray()
    previous = code.co_firstlineno
    for start, end, line in code.co_lines():
        sdelta = end - start
        ldelta = -128 if line is None else line - previous
        if line is not None:
            previous = line
        while sdelta > 254:
            out += bytes([254, ldelta & 0xff])
            ldelta = -128 if line is None else 0
            sdelta -= 254
        while ldelta != -128 and ldelta > 127:
            out += bytes([0, 127])
            ldelta -= 127
        while ldelta != -128 and ldelta < -127:
            out += bytes([0, (-127) & 0xff])
            ldelta += 127
        out += bytes([sdelta, ldelta & 0xff])
    return bytes(out)


def line_cases():
    """From every code object of a few large modules of this interpreter:
    its own location table (3.11+) against co_positions(), its own co_lnotab
    (the 3.9 format, which 3.11 and 3.12 still produce) and 3.10's format
    made from co_lines(), against co_lines()."""
    import argparse, difflib, typing, warnings  # noqa: E401

    def codes(obj, seen):
        for c in (obj.co_consts if hasattr(obj, "co_consts") else ()):
            if hasattr(c, "co_code") and id(c) not in seen:
                seen.add(id(c))
                yield c
                yield from codes(c, seen)

    cases = []
    seen = set()
    for module in (argparse, difflib, typing):
        top = compile(open(module.__file__).read(), module.__file__, "exec")
        for code in [top] + list(codes(top, seen)):
            units = len(code.co_code) // 2
            positions = list(code.co_positions())
            by_byte = {}
            for start, end, line in code.co_lines():
                for b in range(start, end, 2):
                    by_byte[b] = line
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lnotab = code.co_lnotab
            t310 = encode_310(code)
            first = code.co_firstlineno
            own = [(0, i, positions[i][0] or 0) for i in range(units)]
            made = [(1, i, by_byte.get(2 * i) or 0) for i in range(units)]
            old = [(2, i, by_byte[2 * i]) for i in range(units) if by_byte.get(2 * i) is not None]
            for table, rows in ((code.co_linetable, own), (t310, made), (lnotab, old)):
                cases.append((table, [(f, first, i, line) for f, i, line in rows]))
    return cases


def test_line_tables():
    cases = line_cases()
    text = "".join(f"T {table.hex()}\n" + "".join(f"{f} {first} {i} {line}\n" for f, first, i, line in rows)
                   for table, rows in cases)
    count = sum(len(rows) for _, rows in cases)
    argv = [cmtest.program("python_lines_check")]
    p = subprocess.run((cmtest.VALGRIND_CMD if cmtest.VALGRIND else []) + argv, input=text, capture_output=True,
                       text=True, timeout=3000)
    eq(p.returncode, 0, f"line tables: {p.stdout}{p.stderr}")
    check(f"{count} checked, 0 wrong" in p.stdout, p.stdout)
    check(count > 10000, f"cases: {count}")
    print(p.stdout.strip())


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
