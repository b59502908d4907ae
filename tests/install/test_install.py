# SPDX-License-Identifier: MIT
"""The install, from a clean DESTDIR (`meson install --destdir`): the
installed `cumemtrace run` finds the installed shim with no configuration
and traces a program; the man pages render without warnings and cover
every command and option; a program compiles against the installed
headers with the flags of the installed pkg-config file."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

BUILD = os.environ["CMT_BUILD_ROOT"]
SOURCE = os.environ["CMT_SOURCE_ROOT"]
PREFIX = os.environ["CMT_PREFIX"]
# Relative to PREFIX, or absolute: meson's options as configured.
DIRS = {k: os.path.join(PREFIX, os.environ["CMT_" + k.upper()])
        for k in ("bindir", "libdir", "includedir", "mandir", "datadir")}
MiB = 1024 * 1024
SKIP = 77


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, **kw)


def clean_env(extra=None, traced=False):
    """No trace of the build tree: no CUMEMTRACE_SHIM, no LD_PRELOAD, no
    LD_LIBRARY_PATH but the simulated device's: the test programs find its
    cudart by their RUNPATH, and that cudart finds its libcuda.so.1 there,
    as a real cudart finds the driver's in the system's directories)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUMEMTRACE_") and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env["LD_LIBRARY_PATH"] = cmtest.SIM_DIR
    # Test setup 'asan': the shim is built with ASan, so what `run` starts
    # gets the runtime first, as in tests/e2e; not the build's own tools.
    if traced and cmtest.PRELOAD_PREFIX:
        env["LD_PRELOAD"] = cmtest.PRELOAD_PREFIX
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    env.update(extra or {})
    return env


def install():
    """meson install into a fresh DESTDIR; returns (destdir, path) where
    path(dir, *rest) names an installed file."""
    destdir = tempfile.mkdtemp(prefix="cmt-install-")
    p = sh(["meson", "install", "-C", BUILD, "--no-rebuild", "--quiet", "--destdir", destdir])
    eq(p.returncode, 0, f"meson install: {p.stdout}{p.stderr}")

    def path(d, *rest):
        return os.path.join(destdir + DIRS[d], *rest)
    return destdir, path


def check_run_finds_shim(cli, shim):
    """`cli run` puts the shim at path shim (real path) in LD_PRELOAD."""
    p = sh([cli, "run", "--", "/usr/bin/env"], env=clean_env(traced=True))
    eq(p.returncode, 0, f"run env: {p.stderr}")
    preload = [l for l in p.stdout.splitlines() if l.startswith("LD_PRELOAD=")]
    expected = ":".join(x for x in (cmtest.PRELOAD_PREFIX, os.path.realpath(shim)) if x)
    eq(preload, ["LD_PRELOAD=" + expected], f"LD_PRELOAD set by {cli}")


def check_traced_leak_peak(cli, out):
    """`cli run` traces leak_peak on the simulated device into directory out
    (empty), `cli report` gives its exact figures, `cli run --check` fails
    on its leaks; returns the trace's path."""
    p = sh([cli, "run", "-o", os.path.join(out, "t.%p.bin"), "--", cmtest.program("leak_peak")],
           env=clean_env({"CUMEMTRACE_QUIET": "1"}, traced=True))
    eq((p.returncode, p.stdout), (0, "leak_peak done\n"), f"traced program: {p.stderr}")
    traces = os.listdir(out)
    eq(len(traces), 1, "one trace")
    trace = os.path.join(out, traces[0])
    p = sh([cli, "report", "--format", "json", trace], env=clean_env())
    eq(p.returncode, 0, f"report: {p.stderr}")
    rep = json.loads(p.stdout)
    d0 = cmtest.device(rep, 0)
    eq((rep["events"], d0["peak_bytes"], rep["leaks"]["bytes"], rep["leaks"]["count"]),
       (18, 115 * MiB, 69 * MiB, 6), "events, peak, leaked bytes and count")
    eq(cmtest.first_function(rep["leaks"]["sites"][0]), "keep_forever", "largest leak symbolized")
    checkdir = os.path.join(out, "check")
    os.mkdir(checkdir)
    p = sh([cli, "run", "--check", "--", cmtest.program("leak_peak")],
           env=clean_env({"CUMEMTRACE_QUIET": "1", "TMPDIR": checkdir}, traced=True))
    eq(p.returncode, 1, f"{cli} run --check fails on the leaks: {p.stderr}")
    return trace


def test_run_installed():
    destdir, path = install()
    cli = path("bindir", "cumemtrace")
    shim = path("libdir", "cumemtrace", "libcumemtrace.so")
    check(os.access(cli, os.X_OK), f"{cli} not installed")
    check(os.path.isfile(shim), f"{shim} not installed")
    # The installed binary, called through a symbolic link elsewhere (as
    # /usr/local/bin links into /opt often do): the shim is found from the
    # binary's real path.
    link = os.path.join(destdir, "cumemtrace-link")
    os.symlink(cli, link)
    for argv0 in (cli, link):
        check_run_finds_shim(argv0, shim)
    out = os.path.join(destdir, "traces")
    os.mkdir(out)
    check_traced_leak_peak(cli, out)
    # The tree moved elsewhere as a whole: the shim is found in its new place.
    if all(d.startswith(PREFIX + "/") for d in (DIRS["bindir"], DIRS["libdir"])):
        moved = os.path.join(destdir, "moved")
        os.rename(destdir + PREFIX, moved)
        check_run_finds_shim(moved + DIRS["bindir"][len(PREFIX):] + "/cumemtrace",
                             os.path.join(moved + DIRS["libdir"][len(PREFIX):], "cumemtrace", "libcumemtrace.so"))
    shutil.rmtree(destdir)


def test_version_and_help():
    destdir, path = install()
    cli = path("bindir", "cumemtrace")
    with open(os.path.join(SOURCE, "meson.build")) as f:
        version = re.search(r"version : '([^']+)'", f.read()).group(1)
    p = sh([cli, "--version"], env=clean_env())
    eq(p.returncode, 0, "--version status")
    check(p.stdout.startswith(f"cumemtrace {version} (trace format "), p.stdout)
    for cmd in commands(cli):
        if cmd in ("version", "help"):
            continue
        a = sh([cli, "help", cmd], env=clean_env())
        b = sh([cli, cmd, "--help"], env=clean_env())
        eq((a.returncode, b.returncode), (0, 0), f"help {cmd} status")
        eq(a.stdout, b.stdout, f"help {cmd} is {cmd} --help")
        check(a.stdout.startswith(f"usage: cumemtrace {cmd} "), a.stdout)
    shutil.rmtree(destdir)


def man(page):
    if not shutil.which("man"):
        print("man not found (scripts/setup.sh installs man-db)", file=sys.stderr)
        sys.exit(SKIP)
    env = clean_env({"MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"})
    return sh(["man", "--warnings", "-l", page], env=env)


def test_man_pages():
    destdir, path = install()
    for page, name, section in (("cumemtrace.1", "CUMEMTRACE", 1), ("libcumemtrace.7", "LIBCUMEMTRACE", 7)):
        f = path("mandir", f"man{section}", page)
        check(os.path.isfile(f), f"{f} not installed")
        p = man(f)
        eq((p.returncode, p.stderr), (0, ""), f"man -l {page}: no warnings")
        check(p.stdout.startswith(f"{name}({section})"), p.stdout[:200])
        check("@" not in p.stdout, f"{page}: a placeholder left unfilled")
        if section == 7:
            # The installed paths, without the DESTDIR.
            check(os.path.join(DIRS["libdir"], "cumemtrace", "libcumemtrace.so") in p.stdout, p.stdout)
    for doc in ("README.md", "guide.md", "comparison.md", "cli.md", "check.md", "report.md", "environment.md",
                "fragmentation.md", "html.md", "export.md", "messages.md"):
        check(os.path.isfile(path("datadir", "doc", "cumemtrace", doc)), f"share/doc/cumemtrace/{doc} installed")
    shutil.rmtree(destdir)


def commands(cli):
    """The command names `cumemtrace help` lists."""
    p = sh([cli, "help"], env=clean_env())
    eq(p.returncode, 0, "help status")
    block = p.stdout.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    names = []
    for line in block.splitlines():
        m = re.match(r"  ([a-z][a-z-]*)\b", line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
    check(len(names) >= 7, f"commands found in help: {names}")
    return names


def roff_sections(page):
    """{subsection name: its text} of a man page's source, escapes undone."""
    with open(page) as f:
        src = f.read()
    src = re.sub(r"\\f[BIRP]", "", src).replace("\\-", "-")
    sections, name = {}, None
    for line in src.splitlines():
        if line.startswith(".SS "):
            name = line[4:].strip()
            sections[name] = ""
        elif line.startswith(".SH "):
            name = None
        elif name:
            sections[name] += line + "\n"
    return sections


def options(text):
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", text)))


def test_man_covers_help():
    """Every command of `cumemtrace help` has its subsection in
    cumemtrace(1), and every option its --help names is in it (run's check
    options in check's): a new command or option without its man page
    entry fails here."""
    cli = cmtest.CLI
    page = os.path.join(BUILD, "docs", "cumemtrace.1")
    sections = roff_sections(page)
    names = commands(cli)
    eq(sorted(sections), sorted(names), "man page subsections of COMMANDS against `cumemtrace help`")
    missing = []
    for cmd in names:
        if cmd in ("version", "help"):
            continue
        p = sh([cli, cmd, "--help"], env=clean_env())
        eq(p.returncode, 0, f"{cmd} --help")
        documented = set(options(sections[cmd]))
        if cmd == "run":
            documented |= set(options(sections["check"]))
        # -h and --help: DESCRIPTION says every command has them.
        missing += [f"{cmd} {o}" for o in options(p.stdout) if o not in documented | {"-h", "--help"}]
    eq(missing, [], "options in --help that cumemtrace(1) does not describe")
    with open(os.path.join(SOURCE, "docs", "environment.md")) as f:
        variables = sorted(set(re.findall(r"`(CUMEMTRACE_[A-Z0-9_]+)`", f.read())))
    with open(os.path.join(BUILD, "docs", "libcumemtrace.7")) as f:
        shim_page = f.read()
    with open(page) as f:
        cli_page = f.read()
    eq([v for v in variables if v not in shim_page and v not in cli_page], [],
       "variables of docs/environment.md in neither man page")


def check_pkg_config(cli, pcdir, includedir, shim, out, prefix=None):
    """The cumemtrace.pc in pcdir gives includedir's flags and shim's path;
    tests/install/probe.c compiles with those flags, and `cli run` traces it
    (files in directory out) with its exact figures. prefix: the prefix to
    define for a file that is not relocatable."""
    pc = os.path.join(pcdir, "cumemtrace.pc")
    check(os.path.isfile(pc), f"{pc} not installed")
    with open(pc) as f:
        relocatable = "${pcfiledir}" in f.read()
    env = clean_env({"PKG_CONFIG_PATH": pcdir})
    # A relocatable file (the project's default) finds the DESTDIR by
    # itself; a build dir configured before that default needs the prefix.
    define = [] if relocatable or prefix is None else [f"--define-variable=prefix={prefix}"]
    p = sh(["pkg-config", *define, "--cflags", "--libs", "cumemtrace"], env=env)
    eq(p.returncode, 0, f"pkg-config: {p.stderr}")
    flags = p.stdout.split()
    check(f"-I{os.path.realpath(includedir)}" in [f"-I{os.path.realpath(f[2:])}" for f in flags
                                                  if f.startswith("-I")], f"pkg-config --cflags: {flags}")
    p = sh(["pkg-config", *define, "--variable=shim", "cumemtrace"], env=env)
    eq(os.path.realpath(p.stdout.strip()), os.path.realpath(shim), "pkg-config --variable=shim")
    exe = os.path.join(out, "probe")
    p = sh([os.environ.get("CC", "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror",
            os.path.join(SOURCE, "tests", "install", "probe.c"), "-o", exe, *flags,
            "-I" + os.environ["CMT_CUDA_INCLUDE"], "-L" + cmtest.SIM_DIR, "-lcudart", "-Wl,-rpath," + cmtest.SIM_DIR],
           env=env)
    eq(p.returncode, 0, f"compile against the installed headers: {p.stdout}{p.stderr}")
    p = sh([cli, "run", "-o", os.path.join(out, "probe.bin"), "--", exe],
           env=clean_env({"CUMEMTRACE_QUIET": "1"}, traced=True))
    eq((p.returncode, p.stdout), (0, "probe done (trace format 2)\n"), f"probe: {p.stderr}")
    p = sh([cli, "report", "--json", os.path.join(out, "probe.bin")], env=clean_env())
    eq(p.returncode, 0, f"report: {p.stderr}")
    rep = json.loads(p.stdout)
    d0 = cmtest.device(rep, 0)
    eq((d0["peak_bytes"], d0["peak_phase"]["path"], rep["leaks"]["bytes"]), (3 * MiB, "install", 1 * MiB),
       "the probe's peak, in its phase, and its leak")


def test_pkg_config():
    if not shutil.which("pkg-config"):
        print("pkg-config not found", file=sys.stderr)
        sys.exit(SKIP)
    destdir, path = install()
    out = os.path.join(destdir, "traces")
    os.mkdir(out)
    check_pkg_config(path("bindir", "cumemtrace"), path("libdir", "pkgconfig"), path("includedir"),
                     path("libdir", "cumemtrace", "libcumemtrace.so"), out, prefix=destdir + PREFIX)
    shutil.rmtree(destdir)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
