# SPDX-License-Identifier: MIT
"""End-to-end: a trace is untrusted input (issue 32). The module paths it
names are opened only when they are regular files: a FIFO, a device node or
a directory never (a FIFO hung every command that symbolizes before); a
relative path is never resolved against the analyzer's working directory,
only under --sysroot or by its name in --debuginfo-path; --no-symbols, on
every command that symbolizes, check included, opens none. Strings from the
trace are printed with their control characters escaped in text output.
The traces come from gen_module_trace.c."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

GEN = cmtest.program("gen_module_trace")
VENDOR = cmtest.program("libcmt_vendor.so")


def symbol_offset(lib, name):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise cmtest.Failure(f"{name} not in {lib}")


def cli(cwd, *args):
    """The CLI in cwd. A command that hangs is a failure (the timeout is a
    guard against a hang, not a time bound)."""
    argv = [cmtest.CLI, *args]
    if cmtest.VALGRIND:
        argv = cmtest.VALGRIND_CMD + argv
    return subprocess.run(argv, cwd=cwd, env=cmtest.sim_env(preload=False), capture_output=True, text=True,
                          timeout=600)


def gen(d, *paths, args=None):
    out = os.path.join(d, "t.bin")
    argv = [GEN, out] + (["--args", *args, "--"] if args else []) + list(paths)
    subprocess.run(argv, check=True, timeout=60)
    return out


def test_special_module_paths():
    """A FIFO, device nodes, a directory and paths that climb out as module
    paths: every command that symbolizes finishes, opens none of them, says
    which is what, and keeps the figures."""
    d = tempfile.mkdtemp(prefix="cmt-untrusted-")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    paths = [fifo, "/dev/zero", "/dev/null", d, "../../../../../../../../etc/passwd"]
    trace = gen(d, *paths)
    kinds = {fifo: "a FIFO", "/dev/zero": "a character device", "/dev/null": "a character device",
             d: "a directory"}
    # report, text and JSON
    p = cli(d, "report", trace)
    eq(p.returncode, 0, f"report: {p.stderr}")
    for path, kind in kinds.items():
        check(f"module {path}: {path} is {kind}, not a regular file: not opened, showing module+offset only; "
              "--sysroot DIR finds a copy elsewhere" in p.stdout, f"{path} named as {kind}:\n{p.stdout}")
    check("module ../../../../../../../../etc/passwd: recorded with a relative path, which is not looked up in the "
          "current directory; showing module+offset only: --sysroot DIR looks it up under DIR, --debuginfo-path "
          "DIR by its name" in p.stdout, p.stdout)
    rep = json.loads(cli(d, "report", "--json", trace).stdout)
    eq((rep["leaks"]["bytes"], rep["leaks"]["count"]), (15 * MiB, 5), "the figures are the trace's")
    frames = [s["frames"][0] for s in rep["leaks"]["sites"]]
    eq(sorted((f["module"], f["function"]) for f in frames), sorted((p, None) for p in paths),
       "each site at its module, unsymbolized")
    # every other command that symbolizes
    for args, status in ((["check", trace], 1), (["frag", trace], 0), (["export", "--format", "folded", trace], 0),
                         (["export", "--format", "perfetto", "-o", os.path.join(d, "t.json"), trace], 0),
                         (["diff", trace, trace], 0), (["report", "--format", "html", "-o",
                                                         os.path.join(d, "t.html"), trace], 0)):
        p = cli(d, *args)
        eq(p.returncode, status, f"{args[0]} finishes: {p.stderr}")
    # --no-symbols on check too: nothing opened, nothing to warn about
    p = cli(d, "check", "--no-symbols", trace)
    eq(p.returncode, 1, f"check --no-symbols: {p.stderr}")
    check("module " not in p.stdout, f"no module warning with --no-symbols:\n{p.stdout}")
    check(re.search(r"cumemtrace check: FAIL \S+ \(app, pid 5151\): 5 violations; leaked 15\.0 MiB in 5 "
                    r"allocations", p.stdout), p.stdout)
    shutil.rmtree(d, ignore_errors=True)


def test_relative_module_path():
    """A module recorded as "libvendor.so" (a dlopen of a relative path) is
    not looked up in the analyzer's working directory, even where a file of
    that name lies there; --sysroot DIR looks it up under DIR, and
    --debuginfo-path DIR by its name."""
    d = tempfile.mkdtemp(prefix="cmt-relative-")
    shutil.copy(VENDOR, os.path.join(d, "libvendor.so"))
    off = symbol_offset(VENDOR, "vendor_init_workspace")
    trace = gen(d, f"libvendor.so@{off:#x}")

    def site_function(*opts):
        p = cli(d, "report", "--json", *opts, trace)
        eq(p.returncode, 0, f"report {opts}: {p.stderr}")
        rep = json.loads(p.stdout)
        return rep["leaks"]["sites"][0]["frames"][0]["function"], rep["warnings"]

    fn, warnings = site_function()
    eq(fn, None, "not resolved against the working directory")
    check(any("module libvendor.so: recorded with a relative path" in w for w in warnings), warnings)
    eq(site_function("--sysroot", d)[0], "vendor_init_workspace", "found under --sysroot")
    eq(site_function("--debuginfo-path", d)[0], "vendor_init_workspace", "found by name in --debuginfo-path")
    # Under --sysroot, a path that climbs out of it is not followed.
    os.mkdir(os.path.join(d, "root"))
    trace = gen(d, f"../libvendor.so@{off:#x}")
    p = cli(d, "report", "--json", "--sysroot", os.path.join(d, "root"), trace)
    eq(json.loads(p.stdout)["leaks"]["sites"][0]["frames"][0]["function"], None, "../ never leaves the sysroot")
    shutil.rmtree(d, ignore_errors=True)


ESC_ARGS = ["/opt/app/bin/app", "--lr\x1b[2J\x1b]0;pwned\x07", "x\nPASS forged"]
ESC_ARGS_SHOWN = "app --lr\\e[2J\\e]0;pwned\\x07 x\\nPASS forged"


def control_bytes(text):
    """The control characters of text output other than its own newlines."""
    return sorted({c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f})


def test_escapes():
    """Every string of the trace printed in text output has its control
    characters escaped: program arguments (report's program line, check's
    FAIL line), thread, phase and Python function names, module paths,
    notes, warnings; JSON keeps them as they are (escaped its own way)."""
    d = tempfile.mkdtemp(prefix="cmt-escapes-")
    trace = gen(d, "--args", *ESC_ARGS, "--", "--thread", "w\x1b[31m", "--phase", "epoch\x1b[1m", "--note",
                "n\rote", "--device", "GPU\xc2\x9b", "--python", "step\x1b[5m", "/opt/lib\x1b[7m.so")
    p = cli(d, "report", trace)
    eq((p.returncode, control_bytes(p.stdout)), (0, []), f"report: no control character:\n{p.stdout!r}")
    lines = p.stdout.splitlines()
    check("  program:  /opt/app/bin/app --lr\\e[2J\\e]0;pwned\\x07 x\\nPASS forged" in lines, p.stdout)
    check("  note:     shim: n\\rote" in lines, p.stdout)
    check("  phase at the peak: epoch\\e[1m" in lines, p.stdout)
    check("        step\\e[5m at step\\e[5m.py:7" in lines, p.stdout)
    check("        0x7f0000000011 in lib\\e[7m.so+0x11" in lines, p.stdout)
    check("  - module /opt/lib\\e[7m.so: file not found, showing module+offset only; --sysroot DIR finds a copy "
          "elsewhere" in lines, p.stdout)
    p = cli(d, "check", trace)
    eq((p.returncode, control_bytes(p.stdout)), (1, []), f"check: no control character:\n{p.stdout!r}")
    check(p.stdout.endswith(f"cumemtrace check: FAIL {trace} ({ESC_ARGS_SHOWN}, pid 5151): 1 violation; leaked "
                            "1.0 MiB in 1 allocation; peak 1.0 MiB on device 0\n"), p.stdout)
    check("step\\e[5m.py:7: error: leaked 1.0 MiB in 1 allocation (cudaMalloc) [leak]\n" in p.stdout, p.stdout)
    # Summary lines on the terminal with a report file, and every other text output.
    p = cli(d, "check", "--format", "json", "--report-file", os.path.join(d, "c.json"), trace)
    eq(control_bytes(p.stderr), [], f"check summary: {p.stderr!r}")
    for args in (["frag", trace], ["diff", trace, trace], ["export", "--format", "folded", trace],
                 ["timeline", trace], ["report", trace, trace]):
        p = cli(d, *args)
        eq((p.returncode, control_bytes(p.stdout + p.stderr)), (0, []), f"{args[0]}: {p.stdout!r}")
    check("program:  /opt/app/bin/app --lr\\e[2J" in cli(d, "diff", trace, trace).stdout, "diff names the program")
    # JSON: the strings as they are.
    rep = json.loads(cli(d, "report", "--json", trace).stdout)
    eq(rep["process"]["argv"], ESC_ARGS, "JSON keeps the arguments")
    doc = json.load(open(os.path.join(d, "c.json")))
    eq(doc["traces"][0]["process"]["argv"], ESC_ARGS, "check's JSON keeps them")
    shutil.rmtree(d, ignore_errors=True)


def test_many_missing_modules():
    """A trace naming a hundred modules not found here: the first 64
    warnings, then one that counts the rest (a crafted trace of a million
    modules made as many warnings, kept in memory and printed)."""
    d = tempfile.mkdtemp(prefix="cmt-modules-")
    trace = gen(d, *[f"/nonexistent/lib{i}.so" for i in range(100)])
    rep = json.loads(cli(d, "report", "--json", trace).stdout)
    module = [w for w in rep["warnings"] if w.startswith("module ")]
    eq(len(module), 64, "the first 64 module warnings")
    check(all(re.fullmatch(r"module /nonexistent/lib\d+\.so: file not found, showing module\+offset only; "
                           r"--sysroot DIR finds a copy elsewhere", w) for w in module), module)
    eq(len(set(module)), 64, "distinct")
    check("36 more warnings about modules not shown (the first 64 are above)" in rep["warnings"], rep["warnings"])
    eq(rep["leaks"]["count"], 100, "every site still reported")
    shutil.rmtree(d, ignore_errors=True)


def test_missing_modules_order():
    """The notes of modules not found come in the trace's module order
    (docs/messages.md), whatever the analyzer's heap layout: they followed
    the order the analyses' tables, some keyed by heap addresses, showed
    the frames in, so glibc's top_pad or setarch -R reordered them. The
    paths are not in sorted order and the sites are listed largest first
    (the last module's first): neither is the order asserted. 70 modules:
    the 64 said are the first 64 of the trace, then the count of the rest."""
    d = tempfile.mkdtemp(prefix="cmt-order-")
    names = [f"/nonexistent/m{(i * 37) % 70:02d}.so" for i in range(70)]
    trace = gen(d, *names)
    note = "file not found, showing module+offset only; --sysroot DIR finds a copy elsewhere"
    want = [f"module {n}: {note}" for n in names[:64]]
    want.append("6 more warnings about modules not shown (the first 64 are above)")
    runs = [[], ["setarch", "-R"]] + [["env", f"GLIBC_TUNABLES=glibc.malloc.top_pad={p}"]
                                       for p in (0, 4096, 65536, 1 << 20, 3 << 20, 7 << 20)]
    for prefix in runs:
        argv = prefix + [cmtest.CLI] if not cmtest.VALGRIND else prefix + cmtest.VALGRIND_CMD + [cmtest.CLI]
        env = cmtest.sim_env(preload=False)
        p = subprocess.run(argv + ["report", "--json", trace], cwd=d, env=env, capture_output=True, text=True,
                           timeout=600)
        eq(p.returncode, 0, p.stderr)
        eq(json.loads(p.stdout)["warnings"], want, f"JSON notes under {prefix}")
        p = subprocess.run(argv + ["report", trace], cwd=d, env=env, capture_output=True, text=True, timeout=600)
        eq(p.returncode, 0, p.stderr)
        eq([ln[4:] for ln in p.stdout.splitlines() if ln.startswith("  - ")], want, f"text notes under {prefix}")
    shutil.rmtree(d, ignore_errors=True)

if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
