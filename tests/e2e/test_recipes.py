# SPDX-License-Identifier: MIT
"""The integration recipes of docs/check.md, run for real: a meson project
under `meson test --wrapper 'cumemtrace run --check --'`, a CMake project
under ctest with a test launcher, and the shell loop of
tests/e2e/recipes/check_all.sh. Each project has one clean test binary and
one that leaks 1 MiB (tests/e2e/recipes/meson/test_*.c)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

RECIPES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes")
CUDA_INCLUDE = os.environ["CMT_CUDA_INCLUDE"]
SKIP = 77


def leak_line():
    with open(os.path.join(RECIPES, "meson", "test_leaky.c")) as f:
        for i, line in enumerate(f, 1):
            if "cudaMalloc(&forgotten" in line:
                return i
    raise cmtest.Failure("no leak in test_leaky.c")


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, **kw)


def test_meson():
    meson = shutil.which("meson")
    if not meson:
        print("meson not found", file=sys.stderr)
        sys.exit(SKIP)
    d = tempfile.mkdtemp(prefix="cmt-recipe-meson-")
    build = os.path.join(d, "build")
    env = cmtest.sim_env(preload=False, foreign=True)
    p = sh([meson, "setup", build, os.path.join(RECIPES, "meson"), f"-Dcudart_include={CUDA_INCLUDE}",
            f"-Dcudart_dir={cmtest.SIM_DIR}"], env=env)
    eq(p.returncode, 0, f"meson setup: {p.stdout}{p.stderr}")
    p = sh([meson, "test", "-C", build, "--wrapper", f"{cmtest.CLI} run --check --"], env=env)
    eq(p.returncode, 1, f"meson test fails because test_leaky leaks: {p.stdout}{p.stderr}")
    results = {}
    # With a wrapper, meson names the log after it: testlog-cumemtrace.json.
    with open(os.path.join(build, "meson-logs", "testlog-cumemtrace.json")) as f:
        for line in f:
            r = json.loads(line)
            results[r["name"]] = r
    eq({n: r["result"] for n, r in results.items()}, {"test_clean": "OK", "test_leaky": "FAIL"}, "meson results")
    def output(name):  # meson keeps stderr apart unless the test merges it
        return results[name].get("stdout", "") + (results[name].get("stderr") or "")

    log = output("test_leaky")
    check(re.search(rf"test_leaky\.c:{leak_line()}: error: leaked 1\.0 MiB in 1 allocation \(cudaMalloc\) \[leak\]",
                    log), log)
    check("cumemtrace run: test_leaky exited with status 0; exiting with status 1: the check found violations" in log,
          log)
    check("cumemtrace check: PASS " in output("test_clean"), output("test_clean"))
    traces = [f for f in os.listdir(build) if f.startswith("cumemtrace.") and f.endswith(".bin")]
    eq(len(traces), 1, "only the failing test's trace is kept, in the test's directory")
    # Without the wrapper both pass: the failure is the memory check's.
    p = sh([meson, "test", "-C", build], env=env)
    eq(p.returncode, 0, f"plain meson test: {p.stdout}")
    shutil.rmtree(d, ignore_errors=True)


def cmake_version(cmake):
    out = sh([cmake, "--version"]).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2)))


def test_ctest():
    cmake, ctest = shutil.which("cmake"), shutil.which("ctest")
    if not cmake or not ctest:
        print("cmake not found (scripts/setup.sh installs it)", file=sys.stderr)
        sys.exit(SKIP)
    d = tempfile.mkdtemp(prefix="cmt-recipe-ctest-")
    build = os.path.join(d, "build")
    env = cmtest.sim_env(preload=False, foreign=True)
    # CMake 3.29 added CMAKE_TEST_LAUNCHER; before it, add_test used the
    # cross-compiling emulator for every test (policy CMP0158).
    var = "CMAKE_TEST_LAUNCHER" if cmake_version(cmake) >= (3, 29) else "CMAKE_CROSSCOMPILING_EMULATOR"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    p = sh([cmake, "-S", os.path.join(RECIPES, "cmake"), "-B", build, *gen, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DCUDA_INCLUDE={CUDA_INCLUDE}",
            f"-DCUDART_DIR={cmtest.SIM_DIR}", f"-D{var}={cmtest.CLI};run;--check;--"], env=env)
    eq(p.returncode, 0, f"cmake configure: {p.stdout}{p.stderr}")
    p = sh([cmake, "--build", build], env=env)
    eq(p.returncode, 0, f"cmake build: {p.stdout}{p.stderr}")
    p = sh([ctest, "--test-dir", build, "--output-on-failure", "--output-junit", "ctest.xml"], env=env)
    check(p.returncode != 0, f"ctest fails because test_leaky leaks: {p.stdout}")
    cases = {tc.get("name"): tc.get("status") for tc in ET.parse(os.path.join(build, "ctest.xml")).iter("testcase")}
    eq(cases, {"test_clean": "run", "test_leaky": "fail"}, "ctest results")
    check(re.search(rf"test_leaky\.c:{leak_line()}: error: leaked 1\.0 MiB in 1 allocation \(cudaMalloc\) \[leak\]",
                    p.stdout), p.stdout)
    shutil.rmtree(d, ignore_errors=True)


def test_shell_loop():
    d = tempfile.mkdtemp(prefix="cmt-recipe-sh-")
    reports = os.path.join(d, "reports")
    env = cmtest.sim_env({"PATH": os.path.dirname(cmtest.CLI) + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                          "REPORT_DIR": reports}, preload=False, foreign=True)
    tests = [cmtest.program("test_clean"), cmtest.program("test_leaky")]
    p = sh(["sh", os.path.join(RECIPES, "check_all.sh"), *tests], env=env, cwd=d)
    eq(p.returncode, 1, f"the loop fails: {p.stderr}")
    eq(p.stdout, "test_clean: ok\ntest_leaky: ok\n", "the tests' own output")
    check("check_all: test_leaky failed\n" in p.stderr and "check_all: test_clean failed" not in p.stderr, p.stderr)
    for name, failed in [("test_clean", False), ("test_leaky", True)]:
        suite = ET.parse(os.path.join(reports, name + ".xml")).getroot().find("testsuite")
        cases = suite.findall("testcase")
        eq([c.get("name") for c in cases], [name], f"{name}: one test case")
        eq(cases[0].find("failure") is not None, failed, f"{name}: failure")
    # Every test passing: the loop passes.
    p = sh(["sh", os.path.join(RECIPES, "check_all.sh"), tests[0]], env=env, cwd=d)
    eq(p.returncode, 0, f"clean loop: {p.stderr}")
    shutil.rmtree(d, ignore_errors=True)


def test_cpp_library_leak():
    """docs/guide.md, "Finding a leak in a C++ CUDA library": cache_app
    asks demo::TensorCache for 1 to 5 MiB; get() forgets each old buffer, so
    four (10 MiB) leak from one call site, allocated 5 times and freed once."""
    app = cmtest.program("cache_app")
    if not os.path.exists(app):
        print("no C++ compiler: cache_app not built", file=sys.stderr)
        sys.exit(SKIP)
    d = tempfile.mkdtemp(prefix="cmt-recipe-cpp-")
    env = cmtest.sim_env({"CUMEMTRACE_QUIET": "1"}, preload=False)
    trace = os.path.join(d, "cache_app.bin")
    p = sh([cmtest.CLI, "run", "-o", trace, "--", app], env=env)
    eq((p.returncode, p.stdout), (0, "cache_app done\n"), f"traced: {p.stderr}")
    rep = cmtest.report(trace)
    leaks = rep["leaks"]
    eq((leaks["bytes"], leaks["count"], leaks["repeated"]["bytes"], leaks["once"]["bytes"]),
       (10 * cmtest.MiB, 4, 10 * cmtest.MiB, 0), "leaked: all of it allocated repeatedly")
    eq(len(leaks["sites"]), 1, "one leaking site")
    site = leaks["sites"][0]
    eq((site["pattern"], site["site_allocations"], site["site_frees"]), ("repeated", 5, 1), "the site's history")
    # device_alloc is in an anonymous namespace: no linkage name in its DWARF,
    # qualified from the ELF symbol table as every other C++ name
    eq([f["function"] for f in site["frames"]],
       ["demo::(anonymous namespace)::device_alloc(unsigned long)", "demo::TensorCache::get(unsigned long)", "main"],
       "the site's frames, demangled")
    src = os.path.join(RECIPES, "cpp_leak", "tensor_cache.cpp")
    with open(src) as f:
        line = next(i for i, l in enumerate(f, 1) if "buffer_ = device_alloc(bytes);" in l)
    eq(site["frames"][1]["line"], line, "the line in get() that replaces the buffer")
    text = sh([cmtest.CLI, "report", trace], env=env)
    check("allocated repeatedly (the call site allocated many times and kept some): 10.0 MiB (10485760 B) in 4 "
          "allocations" in text.stdout, text.stdout)
    p = sh([cmtest.CLI, "check", trace], env=env)
    eq(p.returncode, 1, f"check fails on the leak: {p.stdout}{p.stderr}")
    check(re.search(r"tensor_cache\.cpp:\d+: error: leaked 10\.0 MiB in 4 allocations \(cudaMalloc\) \[leak\]",
                    p.stdout), p.stdout)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
