# SPDX-License-Identifier: MIT
"""The wheel (docs/python.md, "The wheel"): built by scripts/wheel.sh with
meson-python, installed offline (pip install --no-index) into a fresh
virtual environment, then, from there: the command and `python -m
cumemtrace`, `cumemtrace run --check` finding the shim inside the package
and tracing a program on the simulated device, cumemtrace.load(), the
pytest plugin found through its entry point, and the libraries loaded
being the wheel's own copies. Where a mount namespace can be made (root:
CI), all of it again with the system's copies of those libraries hidden,
as on a machine without them. Skipped (77) without meson-python or
patchelf unless CMT_WHEEL_REQUIRED=1 (scripts/test.sh sets it)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402
import check_wheel  # noqa: E402

ROOT = os.environ["CMT_SOURCE_ROOT"]
SUITE_DIR = os.path.join(ROOT, "tests", "e2e", "pytest_suite")
MiB = cmtest.MiB
# The system libraries the wheel vendors; hidden in the namespace check.
VENDORED = ["libunwind.so.8", "libdw.so.1", "libelf.so.1", "liblzma.so.5", "libbz2.so.1.0", "libncursesw.so.6",
            "libtinfo.so.6"]
SYSTEM_PY = "/usr/bin/python3"


def sh(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 900)
    return subprocess.run(argv, **kw)


def tools_missing():
    missing = []
    if sh([SYSTEM_PY, "-c", "import mesonpy"]).returncode != 0:
        missing.append("python3-mesonpy")
    if not shutil.which("patchelf"):
        missing.append("patchelf")
    if sh([SYSTEM_PY, "-c", "import ensurepip, pytest"]).returncode != 0:
        missing.append("python3-venv/python3-pytest")
    return missing


def clean_env(extra=None):
    """No build tree's paths: the venv's own command, package and libraries."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUMEMTRACE") and k not in ("PYTHONPATH", "LD_PRELOAD", "LD_LIBRARY_PATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Under the asan setup the simulated device is built with the sanitizer:
    # its runtime comes first in every process that may load it (the wheel
    # itself is not; leaks of interpreters are not ours to judge).
    if cmtest.PRELOAD_PREFIX:
        env["LD_PRELOAD"] = cmtest.PRELOAD_PREFIX
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    env.update(extra or {})
    return env


def build_wheel(out):
    start = time.monotonic()
    p = sh([os.path.join(ROOT, "scripts", "wheel.sh"), "--no-install", "-o", out])
    eq(p.returncode, 0, f"scripts/wheel.sh: {p.stdout}{p.stderr}")
    print(f"wheel built in {time.monotonic() - start:.0f} s")
    wheels = glob.glob(os.path.join(out, "cumemtrace-*.whl"))
    eq(len(wheels), 1, f"wheels in {out}")
    return wheels[0]


def check_contents(wheel):
    name = os.path.basename(wheel)
    m = re.fullmatch(r"cumemtrace-([0-9.]+)-py3-none-manylinux_2_(\d+)_(x86_64|aarch64)\.whl", name)
    check(m, f"the wheel's name and tag: {name}")
    check(os.path.getsize(wheel) < 16 * MiB, f"the wheel's size: {os.path.getsize(wheel)}")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        record = z.read(f"cumemtrace-{m.group(1)}.dist-info/RECORD").decode()
        entry = z.read(f"cumemtrace-{m.group(1)}.dist-info/entry_points.txt").decode()
    for f in ("cumemtrace/bin/cumemtrace", "cumemtrace/lib/libcumemtrace.so", "cumemtrace/lib/libcumemtrace_torch.so",
              "cumemtrace/lib/libcumemtrace_analysis.so", "cumemtrace/include/cumemtrace/cumemtrace.h",
              "cumemtrace/include/cumemtrace/format.h", "cumemtrace/__init__.py", "cumemtrace/pytest_plugin.py",
              "cumemtrace/lib/licenses/README", "cumemtrace/lib/licenses/cumemtrace.copyright"):
        check(f in names, f"{f} in the wheel")
    eq(modes["cumemtrace/bin/cumemtrace"], 0o755, "the command's mode")
    for lib in VENDORED + ["libz.so.1"]:
        stem = lib.split(".so")[0]
        found = [n for n in names if re.fullmatch(rf"cumemtrace/lib/{re.escape(stem)}-[0-9a-f]{{8}}\.so.*", n)]
        eq(len(found), 1, f"{lib} vendored under a name of its own: {sorted(names)}")
    check("[pytest11]\ncumemtrace = cumemtrace.pytest_plugin" in entry, f"the plugin's entry point: {entry}")
    check("[console_scripts]\ncumemtrace = cumemtrace.__main__:main" in entry, f"the script: {entry}")
    eq(len(record.strip().splitlines()), len(names), "RECORD lists every file")
    # Every ELF file this machine's, every DT_NEEDED inside the wheel or
    # manylinux's, the licences, RECORD's hashes (check_wheel.py, which the
    # aarch64 wheel's test also runs).
    eq(check_wheel.check_wheel(wheel, os.uname().machine), [], "check_wheel.py")


def venv(wheel, work):
    env_dir = os.path.join(work, "venv")
    # Debian's pytest is seen through the system site-packages (nothing may
    # be downloaded); cumemtrace comes from the wheel only.
    p = sh([SYSTEM_PY, "-m", "venv", "--system-site-packages", env_dir])
    eq(p.returncode, 0, f"venv: {p.stderr}")
    p = sh([os.path.join(env_dir, "bin", "pip"), "install", "--no-index", "--no-deps", "--disable-pip-version-check",
            wheel], env=clean_env())
    eq(p.returncode, 0, f"pip install --no-index: {p.stdout}{p.stderr}")
    return env_dir


CHECKS = r'''
import json, os, subprocess, sys, tempfile
import cumemtrace
env_dir, work, sim = sys.argv[1], sys.argv[2], sys.argv[3]
out = {"package": os.path.dirname(cumemtrace.__file__)}
cli = os.path.join(env_dir, "bin", "cumemtrace")
out["version"] = subprocess.run([cli, "version"], capture_output=True, text=True).stdout
out["python_m"] = subprocess.run([sys.executable, "-m", "cumemtrace", "version"], capture_output=True,
                                 text=True).stdout
# A program on the simulated device under the wheel's `cumemtrace run
# --check`: it prints the libraries mapped into it.
prog = os.path.join(work, "leak.py")
with open(prog, "w") as f:
    f.write("import ctypes\n"
            "lib = ctypes.CDLL('libcuda.so.1'); assert lib.cuInit(0) == 0\n"
            "c = ctypes.c_void_p(); lib.cuDevicePrimaryCtxRetain(ctypes.byref(c), 0); lib.cuCtxSetCurrent(c)\n"
            "p = ctypes.c_uint64(); assert lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(3 << 20)) == 0\n"
            "print(open('/proc/self/maps').read())\n")
env = dict(os.environ, LD_LIBRARY_PATH=sim)
run = subprocess.run([cli, "run", "--check", "--keep-traces", "-o", os.path.join(work, "t.%p.bin"), "--",
                      sys.executable, prog], capture_output=True, text=True, env=env)
out["run_status"] = run.returncode
out["run_stderr"] = run.stderr
out["run_maps"] = sorted({l.split()[-1] for l in run.stdout.splitlines() if len(l.split()) >= 6})
traces = [os.path.join(work, f) for f in os.listdir(work) if f.startswith("t.") and f.endswith(".bin")]
out["leak_bytes"] = cumemtrace.load(traces[0]).leaks.bytes
out["self_maps"] = sorted({l.split()[-1] for l in open("/proc/self/maps") if len(l.split()) >= 6})
print(json.dumps(out))
'''


def check_from_venv(env_dir, work, hidden=False):
    py = os.path.join(env_dir, "bin", "python")
    p = sh([py, "-c", CHECKS, env_dir, work, cmtest.SIM_DIR], env=clean_env())
    eq(p.returncode, 0, f"the checks in the venv: {p.stdout}{p.stderr}")
    got = json.loads(p.stdout)
    pkg = got["package"]
    check(pkg.startswith(env_dir), f"cumemtrace imported from the venv: {pkg}")
    check(got["version"].startswith("cumemtrace 0.1.0 (trace format "), f"the command: {got['version']}")
    eq(got["python_m"], got["version"], "python -m cumemtrace version")
    eq(got["run_status"], 1, f"run --check fails the 3 MiB leak: {got['run_stderr']}")
    check("leaked 3.0 MiB in 1 allocation" in got["run_stderr"], f"the check's result: {got['run_stderr']}")
    eq(got["leak_bytes"], 3 * MiB, "cumemtrace.load() from the venv")
    libs = os.path.join(pkg, "lib")
    shim = os.path.join(libs, "libcumemtrace.so")
    check(shim in got["run_maps"], f"the wheel's shim in the traced program: {got['run_maps']}")
    for name, maps in (("the traced program", got["run_maps"]), ("the interpreter with load()", got["self_maps"])):
        for lib in VENDORED:
            stem = lib.split(".so")[0]
            system = [m for m in maps if os.path.basename(m) == lib]
            eq(system, [], f"{name} maps no system {lib}")
        own = [m for m in maps if m.startswith(libs + "/")]
        check(own, f"{name} maps the wheel's libraries: {maps}")
    analysis = [m for m in got["self_maps"] if m.endswith("libcumemtrace_analysis.so")]
    eq(analysis, [os.path.join(libs, "libcumemtrace_analysis.so")], "the analysis library is the wheel's")
    for stem in ("libdw", "libelf"):
        check(any(re.fullmatch(rf"{re.escape(libs)}/{stem}-[0-9a-f]{{8}}\.so\.1", m) for m in got["self_maps"]),
              f"the wheel's {stem} in the interpreter: {got['self_maps']}")
    check(any(re.fullmatch(rf"{re.escape(libs)}/libunwind-[0-9a-f]{{8}}\.so\.8", m) for m in got["run_maps"]),
          f"the wheel's libunwind in the traced program: {got['run_maps']}")
    # The plugin through its entry point (no -p): a restart under the
    # wheel's `cumemtrace run`, the leak failing its test.
    p = sh([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", SUITE_DIR, "--cumemtrace",
            os.path.join(SUITE_DIR, "test_gpu_suite.py") + "::test_leaks_into_a_module_list",
            os.path.join(SUITE_DIR, "test_gpu_suite.py") + "::test_clean_uses_the_module_fixture"],
           env=clean_env({"LD_LIBRARY_PATH": cmtest.SIM_DIR, "PYTHONPATH": SUITE_DIR}), cwd=SUITE_DIR)
    eq(p.returncode, 1, f"pytest --cumemtrace in the venv: {p.stdout[-3000:]}{p.stderr[-2000:]}")
    check("FAILED test_gpu_suite.py::test_leaks_into_a_module_list - GPU leak: 32.0 MiB" in p.stdout,
          f"the plugin judged: {p.stdout[-3000:]}")
    check("1 failed, 1 passed" in p.stdout, p.stdout[-500:])
    # `top` links ncurses: the wheel's copies (libncursesw, libtinfo) load
    p = sh([os.path.join(env_dir, "bin", "cumemtrace"), "top", "--once", "--format", "json", work], env=clean_env())
    eq(p.returncode, 0, f"top --once from the venv: {p.stderr}")
    check(isinstance(json.loads(p.stdout)["processes"], list), p.stdout[:500])
    print("ok from the venv" + (" with the system's copies hidden" if hidden else ""))


def hide_and_check(env_dir, work):
    """The same checks in a mount namespace where the system's copies of the
    vendored libraries are unreadable (/dev/null mounted over them), as on a
    machine without them. Needs unshare(1) and the right to mount: root."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("note: not root or no unshare: the namespace check (system libraries hidden) is skipped; the "
              "libraries mapped were checked")
        return
    paths = []
    for lib in VENDORED:
        for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                  "/usr/lib/aarch64-linux-gnu"):
            p = os.path.realpath(os.path.join(d, lib))
            if os.path.exists(p) and p not in paths:
                paths.append(p)
    mounts = " && ".join(f"mount --bind /dev/null {p}" for p in paths)
    inner = [sys.executable, __file__, "inside", env_dir, work]
    p = sh(["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f"{mounts} && exec \"$@\"", "sh", *inner], env=dict(os.environ))
    if p.returncode != 0 and "unshare failed" in p.stderr:
        print(f"note: no mount namespace here ({p.stderr.strip()}): the namespace check is skipped")
        return
    eq(p.returncode, 0, f"the checks with the system libraries hidden: {p.stdout}{p.stderr}")
    print(p.stdout.strip())


def test_wheel():
    missing = tools_missing()
    if missing:
        if os.environ.get("CMT_WHEEL_REQUIRED") == "1":
            raise cmtest.Failure(f"missing {' '.join(missing)} (apt-get install them; scripts/test.sh does)")
        print(f"skipped: missing {' '.join(missing)}")
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="cmt-wheel-")
    try:
        wheel = build_wheel(os.path.join(work, "dist"))
        check_contents(wheel)
        env_dir = venv(wheel, work)
        run_dir = os.path.join(work, "run")
        os.mkdir(run_dir)
        check_from_venv(env_dir, run_dir)
        hidden_dir = os.path.join(work, "hidden")
        os.mkdir(hidden_dir)
        hide_and_check(env_dir, hidden_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "inside":
        try:
            check_from_venv(sys.argv[2], sys.argv[3], hidden=True)
        except cmtest.Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            sys.exit(1)
        sys.exit(0)
    cmtest.main(sys.modules[__name__])
