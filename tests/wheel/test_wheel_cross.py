# SPDX-License-Identifier: MIT
"""The aarch64 wheel, cross-built on this x86-64 machine (docs/install.md,
"The aarch64 wheel"): scripts/wheel.sh --arch aarch64 builds it; its
contents are checked by check_wheel.py (every ELF file AArch64, every
DT_NEEDED inside the wheel or manylinux's, the licences; and the checker
itself shown to catch an x86-64 library and a missing licence in a
tampered copy); pip takes it for manylinux_2_34_aarch64 and refuses it
here; then, under qemu-user (qemu-aarch64-static), the wheel's own aarch64
command records and checks a program built for aarch64 on the simulated
device built for aarch64, with the wheel's aarch64 shim preloaded: exact
leak and peak figures, from the aarch64 command and from this machine's
reading the same trace. An arm64 Python (CMT_ARM64_PYTHON_ROOT: a
directory holding usr/bin/python3.11, docs/install.md says how to make
one) also imports the package and load()s the trace under qemu.

Skipped (77), saying what is missing, without the cross toolchain and the
arm64 -dev packages (scripts/cross_setup.sh aarch64 installs them) unless
CMT_CROSS_REQUIRED=1 (scripts/test.sh sets it with CMT_CROSS=aarch64).
Skipped in the asan setup: nothing of that build is in the wheel."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402
import check_wheel  # noqa: E402
from test_wheel import SYSTEM_PY, VENDORED, sh, tools_missing  # noqa: E402

ROOT = os.environ["CMT_SOURCE_ROOT"]
BUILD_ROOT = os.environ["CMT_BUILD_ROOT"]
ARCH = "aarch64"
CROSS_FILE = os.path.join(ROOT, "scripts", "cross", "aarch64-linux-gnu.ini")
QEMU = "qemu-aarch64-static"
MiB = cmtest.MiB


def skip_or_fail(why):
    if os.environ.get("CMT_CROSS_REQUIRED") == "1":
        raise cmtest.Failure(f"{why} (CMT_CROSS_REQUIRED=1)")
    print(f"skipped: {why}")
    sys.exit(77)


def clean_env(extra=None):
    """Nothing of this build's environment reaches the aarch64 processes
    (qemu passes its environment to the program it runs): no LD_PRELOAD of
    an x86-64 sanitizer runtime, no shim or command of this build."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUMEMTRACE") and k not in ("PYTHONPATH", "LD_PRELOAD", "LD_LIBRARY_PATH",
                                                            "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env.update(extra or {})
    return env


def tampered(wheel, work):
    """A copy of the wheel with this machine's x86-64 libc in place of its
    vendored libz and libdw's licence left out."""
    out = os.path.join(work, "tampered", os.path.basename(wheel))
    os.makedirs(os.path.dirname(out))
    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    replaced = None
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename == "cumemtrace/lib/licenses/libdw1.copyright":
                continue
            data = src.read(info)
            if replaced is None and os.path.basename(info.filename).startswith("libz-"):
                replaced = info.filename
                with open(libc, "rb") as f:
                    data = f.read()
            dst.writestr(info, data)
    return out, replaced


def sim_for_aarch64():
    """The simulated device and the program leak_peak built for aarch64, in
    a cross build directory of this build's own (kept: a later run builds
    only what changed)."""
    build = os.path.join(BUILD_ROOT, "tests", "wheel", "cross-aarch64")
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        p = sh(["meson", "setup", build, ROOT, f"--cross-file={CROSS_FILE}", "-Dtests=true", "-Dshim=enabled",
                f"-Dcuda-root={os.environ.get('CUDA_ROOT', '/usr/local/cuda')}"])
        eq(p.returncode, 0, f"meson setup of the aarch64 build: {p.stdout[-3000:]}{p.stderr[-2000:]}")
    targets = ["tests/sim/libcuda.so.1", "tests/sim/libcudart.so.13", "tests/e2e/leak_peak"]
    p = sh(["ninja", "-C", build, *targets])
    eq(p.returncode, 0, f"ninja {' '.join(targets)} in the aarch64 build: {p.stdout[-3000:]}{p.stderr[-2000:]}")
    for t in targets:
        with open(os.path.join(build, t), "rb") as f:
            head = f.read(20)
        eq(int.from_bytes(head[18:20], "little"), 183, f"{t} is built for aarch64")
    return os.path.join(build, "tests", "sim"), os.path.join(build, "tests", "e2e", "leak_peak")


def hidden(argv):
    """argv run in a mount namespace where the system's arm64 copies of the
    libraries the wheel vendors are empty (/dev/null mounted over them), as
    on an aarch64 machine without them; the shell checks that they are
    before it runs argv. Plain argv where no namespace can be made (not
    root, no unshare), said."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("note: not root or no unshare: the aarch64 run was not made with the system's arm64 copies hidden")
        return argv
    paths = sorted({os.path.realpath(os.path.join(d, lib)) for lib in VENDORED + ["libz.so.1"]
                    for d in ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
                    if os.path.exists(os.path.join(d, lib))})
    eq(len(paths), len(VENDORED) + 1, f"the system's arm64 copies of the vendored libraries: {paths}")
    mounts = " && ".join(f"mount --bind /dev/null {p}" for p in paths)
    empty = " && ".join(f"[ ! -s {p} ]" for p in paths)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f"{mounts} && {{ {empty} || exit 99; }} && exec \"$@\"", "sh", *argv]


def figures(rep):
    dev0 = [d for d in rep["devices"] if d["ordinal"] == 0][0]
    return {"leaked_bytes": rep["leaks"]["bytes"], "leaked_count": rep["leaks"]["count"],
            "peak_bytes": dev0["peak_bytes"]}


def test_aarch64():
    if cmtest.PRELOAD_PREFIX:
        print("skipped: the asan setup builds nothing the aarch64 wheel holds (the default setup tests it)")
        sys.exit(77)
    p = sh([os.path.join(ROOT, "scripts", "cross_setup.sh"), ARCH, "--check"])
    missing = p.stdout.split() + tools_missing()
    if missing:
        skip_or_fail(f"missing {' '.join(missing)} (scripts/cross_setup.sh {ARCH} installs the cross toolchain)")
    work = tempfile.mkdtemp(prefix="cmt-wheel-aarch64-")
    try:
        # The wheel.
        p = sh([os.path.join(ROOT, "scripts", "wheel.sh"), "--no-install", "--arch", ARCH, "-o",
                os.path.join(work, "dist")])
        eq(p.returncode, 0, f"scripts/wheel.sh --arch {ARCH}: {p.stdout}{p.stderr}")
        wheels = glob.glob(os.path.join(work, "dist", "cumemtrace-*.whl"))
        eq(len(wheels), 1, "one wheel")
        wheel = wheels[0]
        check(wheel.endswith("-py3-none-manylinux_2_34_aarch64.whl"), f"the wheel's tag: {wheel}")
        eq(check_wheel.check_wheel(wheel, ARCH), [], "the aarch64 wheel's contents")
        # The checker catches what it is for.
        bad, replaced = tampered(wheel, work)
        found = check_wheel.check_wheel(bad, ARCH)
        check(any(f"{replaced}: built for x86_64, the wheel is aarch64" in f for f in found),
              f"an x86-64 library caught: {found}")
        check(any("libdw1.copyright is missing" in f for f in found), f"a missing licence caught: {found}")
        # pip: aarch64's, not this machine's.
        target = os.path.join(work, "site")
        pip = [SYSTEM_PY, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check"]
        p = sh(pip + ["--target", os.path.join(work, "refused"), wheel], env=clean_env())
        check(p.returncode != 0 and "is not a supported wheel on this platform" in p.stderr,
              f"pip refuses the aarch64 wheel on x86-64: {p.returncode} {p.stderr}")
        p = sh(pip + ["--target", target, "--platform", "manylinux_2_34_aarch64", "--only-binary=:all:", wheel],
               env=clean_env())
        eq(p.returncode, 0, f"pip install --platform manylinux_2_34_aarch64: {p.stdout}{p.stderr}")
        cli = os.path.join(target, "cumemtrace", "bin", "cumemtrace")
        eq(os.stat(cli).st_mode & 0o777, 0o755, "the installed command's mode")

        # Under qemu: the wheel's command, shim and libraries on aarch64.
        sim_dir, prog = sim_for_aarch64()
        p = sh([QEMU, cli, "version"], env=clean_env())
        eq(p.returncode, 0, f"qemu: cumemtrace version: {p.stderr}")
        check(p.stdout.startswith("cumemtrace 0.1.0 (trace format "), p.stdout)
        run_dir = os.path.join(work, "run")
        os.mkdir(run_dir)
        # `cumemtrace run` execs the program: with no binfmt_misc entry for
        # aarch64 the kernel cannot, so the program is qemu running it
        # (static: the shim in LD_PRELOAD is for the aarch64 loader qemu
        # emulates, which reads the environment qemu passes on).
        p = sh(hidden([QEMU, cli, "run", "--check", "--keep-traces", "-o", os.path.join(run_dir, "t.%p.bin"), "--",
                       QEMU, prog]), env=clean_env({"LD_LIBRARY_PATH": sim_dir}), cwd=run_dir)
        eq(p.returncode, 1, f"run --check fails leak_peak's leaks: {p.stdout}{p.stderr}")
        eq(p.stdout, "leak_peak done\n", "the program's output")
        check("leaked 69.0 MiB in 6 allocations; peak 115.0 MiB on device 0" in p.stderr,
              f"the check's figures: {p.stderr}")
        # The stack unwound on aarch64 by the wheel's libunwind, symbolized
        # by its libdw.
        src = os.path.join(ROOT, "tests", "e2e", "programs", "leak_peak.c")
        with open(src) as f:
            lines = f.read().splitlines()
        alloc = lines.index("    check(cudaMalloc(&p, 64 * MiB), \"keep_forever\");") + 1
        call = lines.index("    keep_forever();") + 1
        check(f"leak_peak.c:{alloc}: error: leaked 64.0 MiB in 1 allocation (cudaMalloc) [leak]\n"
              f"    #0 keep_forever at {src}:{alloc}\n    #1 main at {src}:{call}\n" in p.stderr,
              f"the 64 MiB leak's stack, unwound and symbolized on aarch64: {p.stderr}")
        cmtest.check_catalogued("\n".join(line for line in p.stderr.splitlines()
                                          if line.startswith(("cumemtrace: ", "cumemtrace run: "))))
        traces = glob.glob(os.path.join(run_dir, "t.*.bin"))
        eq(len(traces), 1, "one trace")
        want = {"leaked_bytes": 69 * MiB, "leaked_count": 6, "peak_bytes": 115 * MiB}
        p = sh(hidden([QEMU, cli, "report", "--json", traces[0]]), env=clean_env())
        eq(p.returncode, 0, f"qemu: cumemtrace report --json: {p.stderr}")
        eq(figures(json.loads(p.stdout)), want, "the aarch64 command's report")
        p = sh([os.environ["CMT_CLI"], "report", "--json", traces[0]], env=clean_env())
        eq(p.returncode, 0, f"this machine's cumemtrace report --json of the aarch64 trace: {p.stderr}")
        eq(figures(json.loads(p.stdout)), want, "this machine's report of the aarch64 trace")
        python_checks(target, traces[0])
        print(f"ok: {os.path.basename(wheel)} built, checked, and run under {QEMU}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def python_checks(target, trace):
    """import cumemtrace and load() from an arm64 Python under qemu, where
    one is given; `python -m cumemtrace` only where the kernel runs aarch64
    programs (binfmt_misc): it execs the command."""
    root = os.environ.get("CMT_ARM64_PYTHON_ROOT")
    if not root:
        print("note: no CMT_ARM64_PYTHON_ROOT: the Python package was not run on aarch64")
        return
    py = os.path.join(root, "usr", "bin", "python3.11")
    env = clean_env({"PYTHONHOME": os.path.join(root, "usr"), "PYTHONPATH": target, "PYTHONDONTWRITEBYTECODE": "1",
                     "LD_LIBRARY_PATH": f"{root}/lib/aarch64-linux-gnu:{root}/usr/lib/aarch64-linux-gnu"})
    code = ("import cumemtrace, json, platform, sys; r = cumemtrace.load(sys.argv[1]); "
            "print(json.dumps([platform.machine(), cumemtrace.__file__, r.leaks.bytes, r.leaks.count]))")
    p = sh([QEMU, py, "-c", code, trace], env=env)
    eq(p.returncode, 0, f"the arm64 Python: {p.stdout}{p.stderr}")
    eq(json.loads(p.stdout), ["aarch64", os.path.join(target, "cumemtrace", "__init__.py"), 69 * MiB, 6],
       "import cumemtrace and load() on aarch64")
    if os.path.exists("/proc/sys/fs/binfmt_misc/qemu-aarch64"):
        p = sh([QEMU, py, "-m", "cumemtrace", "--help"], env=env)
        eq(p.returncode, 0, f"python -m cumemtrace --help on aarch64: {p.stderr}")
        check("usage" in p.stdout.lower(), p.stdout[:500])
    else:
        print("note: no binfmt_misc entry for aarch64: `python -m cumemtrace` (which execs the command) not run")


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
