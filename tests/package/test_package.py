# SPDX-License-Identifier: MIT
"""The Debian packages (debian/, scripts/package.sh), built from this
source tree as a user builds them (without the network where a network
namespace can be had), then checked as installed: lintian
finds no error or warning; the packages hold exactly what `meson install`
installs, split between cumemtrace and cumemtrace-dev; unpacked with
`dpkg -x` into a fresh directory (no dpkg database touched), their
`cumemtrace run` finds their shim and traces a program on the simulated
device with its exact figures, their HTML report is byte for byte the
build tree's, their man pages render and name the installed paths, and a
program compiles with their pkg-config file."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "install"))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402
import test_install as inst  # noqa: E402

SOURCE = os.environ["CMT_SOURCE_ROOT"]
SKIP = 77
# The tools a package build needs (scripts/package.sh installs them).
TOOLS = ("dpkg-buildpackage", "dpkg-deb", "dpkg-checkbuilddeps", "dh", "lintian", "pkg-config", "man")


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=540, **kw)


def cannot_run(reason):
    """No packaging tools here: a skip that says why, or a failure where the
    caller asked for the package test (scripts/test.sh, so CI)."""
    if os.environ.get("CMT_PACKAGE_REQUIRED") == "1":
        raise cmtest.Failure(f"CMT_PACKAGE_REQUIRED=1 but {reason}")
    print(f"SKIP: {reason} (scripts/package.sh installs what it needs; scripts/test.sh asks for it)",
          file=sys.stderr)
    sys.exit(SKIP)


def listing(deb):
    """{path without ./: (mode, owner)} of a package's files and links."""
    p = sh(["dpkg-deb", "-c", deb])
    eq(p.returncode, 0, f"dpkg-deb -c {deb}: {p.stderr}")
    files = {}
    for line in p.stdout.splitlines():
        mode, owner, _size, _date, _time, name = line.split(None, 5)
        if not mode.startswith("d"):
            files[name.split(" -> ")[0][2:]] = (mode, owner)
    return files


def field(deb, name):
    p = sh(["dpkg-deb", "-f", deb, name])
    eq(p.returncode, 0, f"dpkg-deb -f {deb} {name}: {p.stderr}")
    return p.stdout.strip()


def meson_installed(triplet):
    """What `meson install` of the build tree installs, relative to its
    prefix, with its libdir as a Debian build's (lib/TRIPLET)."""
    p = sh(["meson", "introspect", "--installed", inst.BUILD])
    eq(p.returncode, 0, f"meson introspect --installed: {p.stderr}")
    libdir = os.path.relpath(inst.DIRS["libdir"], inst.PREFIX)
    files = set()
    for dest in json.loads(p.stdout).values():
        rel = os.path.relpath(dest, inst.PREFIX)
        check(not rel.startswith("../"), f"{dest} is outside the prefix {inst.PREFIX}")
        if rel.startswith(libdir + "/"):
            rel = f"lib/{triplet}/" + rel[len(libdir) + 1:]
        files.add(rel)
    return files


def test_deb():
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        cannot_run(f"{', '.join(missing)} not found")
    p = sh(["dpkg-checkbuilddeps"], cwd=SOURCE)
    if p.returncode != 0:
        cannot_run(p.stderr.strip())
    with open(os.path.join(SOURCE, "meson.build")) as f:
        version = re.search(r"version : '([^']+)'", f.read()).group(1)
    arch = sh(["dpkg", "--print-architecture"]).stdout.strip()
    triplet = sh(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    work = tempfile.mkdtemp(prefix="cmt-package-")
    out = os.path.join(work, "deb")

    # The build, as docs/install.md says, with the build tree's CUDA headers.
    env = dict(os.environ, TMPDIR=work, CUDA_ROOT=os.path.dirname(os.environ["CMT_CUDA_INCLUDE"]))
    env.pop("LD_PRELOAD", None)
    # Without the network where a network namespace can be had (root, as
    # on CI): the build must not need it.
    offline = ["unshare", "--net"] if sh(["unshare", "--net", "true"]).returncode == 0 else []
    print("building " + ("in a network namespace of its own (no network)" if offline else
                         "with the network (unshare --net is not permitted here)"))
    p = sh([*offline, os.path.join(SOURCE, "scripts", "package.sh"), "--no-install", "--lintian", "-o", out], env=env)
    print(p.stdout, p.stderr, sep="")
    eq(p.returncode, 0, "scripts/package.sh --lintian (lintian: no error, no warning)")
    eq(sorted(f for f in os.listdir(out) if f.endswith(".deb")),
       [f"cumemtrace-dbgsym_{version}_{arch}.deb", f"cumemtrace-dev_{version}_{arch}.deb",
        f"cumemtrace_{version}_{arch}.deb"], "the packages, at meson.build's version (debian/changelog)")
    deb = os.path.join(out, f"cumemtrace_{version}_{arch}.deb")
    dev = os.path.join(out, f"cumemtrace-dev_{version}_{arch}.deb")
    dbg = os.path.join(out, f"cumemtrace-dbgsym_{version}_{arch}.deb")
    print("ok built")

    # Control fields: the libraries the shim and the command link, by
    # dpkg-shlibdeps; never the CUDA driver or runtime (found at run time).
    depends = [d.split()[0] for d in field(deb, "Depends").split(", ")]
    for lib in ("libc6", "libdw1", "libelf1", "libunwind8"):
        check(lib in depends, f"cumemtrace Depends on {lib}: {depends}")
    check(not [d for d in depends if "cuda" in d], f"cumemtrace Depends on no CUDA package: {depends}")
    eq(field(dev, "Depends"), f"cumemtrace (= {version})", "cumemtrace-dev Depends")
    eq(field(dev, "Multi-Arch"), "same", "cumemtrace-dev Multi-Arch")

    # Contents: exactly what `meson install` installs (man pages compressed,
    # each package's copyright and changelog added), headers and the .pc
    # file in -dev, everything else in cumemtrace.
    contents = {}
    for name, path in (("cumemtrace", deb), ("cumemtrace-dev", dev)):
        files = listing(path)
        for extra in ("copyright", "changelog.gz"):
            check(f"usr/share/doc/{name}/{extra}" in files, f"{name}: usr/share/doc/{name}/{extra}")
            del files[f"usr/share/doc/{name}/{extra}"]
        check(all(f.startswith("usr/") for f in files), f"{name}: files outside /usr: {sorted(files)}")
        contents[name] = {re.sub(r"^(share/man/.*)\.gz$", r"\1", f[4:]): m for f, m in files.items()}
    expected = meson_installed(triplet)
    in_dev = {f for f in expected if f.startswith("include/") or f.startswith(f"lib/{triplet}/pkgconfig/")}
    eq(sorted(contents["cumemtrace-dev"]), sorted(in_dev), "cumemtrace-dev's files")
    eq(sorted(contents["cumemtrace"]), sorted(expected - in_dev), "cumemtrace's files")
    shim_rel = f"lib/{triplet}/cumemtrace/libcumemtrace.so"
    for f in ("bin/cumemtrace", shim_rel, f"lib/{triplet}/cumemtrace/libcumemtrace_torch.so",
              "share/man/man1/cumemtrace.1", "share/man/man7/libcumemtrace.7", "share/doc/cumemtrace/README.md",
              "share/doc/cumemtrace/environment.md", "share/cumemtrace/default.supp"):
        check(f in contents["cumemtrace"], f"cumemtrace holds /usr/{f}")
    for f in ("include/cumemtrace/cumemtrace.h", "include/cumemtrace/format.h", "include/cumemtrace/crc32c.h",
              f"lib/{triplet}/pkgconfig/cumemtrace.pc"):
        check(f in contents["cumemtrace-dev"], f"cumemtrace-dev holds /usr/{f}")
    eq(contents["cumemtrace"]["bin/cumemtrace"], ("-rwxr-xr-x", "root/root"), "/usr/bin/cumemtrace's mode")
    eq(contents["cumemtrace"][shim_rel], ("-rw-r--r--", "root/root"), "the shim's mode")
    print("ok contents")

    # Unpacked into a fresh root, as installed.
    root = os.path.join(work, "root")
    for path in (deb, dev):
        p = sh(["dpkg", "-x", path, root])
        eq(p.returncode, 0, f"dpkg -x {path}: {p.stderr}")
    usr = os.path.join(root, "usr")
    cli = os.path.join(usr, "bin", "cumemtrace")
    shim = os.path.join(usr, shim_rel)
    # -dbgsym: the debug symbols of exactly the command, the shim and the
    # bridge, by their build-ids.
    ids = []
    for elf in ("bin/cumemtrace", shim_rel, f"lib/{triplet}/cumemtrace/libcumemtrace_torch.so"):
        p = sh(["readelf", "-n", os.path.join(usr, elf)])
        ids += [f"usr/lib/debug/.build-id/{b[:2]}/{b[2:]}.debug" for b in re.findall(r"Build ID: ([0-9a-f]+)", p.stdout)]
    eq(sorted(f for f in listing(dbg) if "/.build-id/" in f and f.endswith(".debug")), sorted(ids),
       "cumemtrace-dbgsym's files by build-id")
    p = sh([cli, "--version"], env=inst.clean_env())
    check(p.returncode == 0 and p.stdout.startswith(f"cumemtrace {version} (trace format "), p.stdout + p.stderr)
    inst.check_run_finds_shim(cli, shim)
    traces = os.path.join(work, "traces")
    os.mkdir(traces)
    trace = inst.check_traced_leak_peak(cli, traces)
    # The packaged command embeds the same JavaScript libraries (copied by
    # scripts/package.sh) as the build tree's: the same page, byte for byte.
    pages = []
    for name, argv0 in (("packaged", cli), ("build", cmtest.CLI)):
        page = os.path.join(work, f"{name}.html")
        p = sh([argv0, "report", "--format", "html", "-o", page, trace], env=inst.clean_env())
        eq(p.returncode, 0, f"{name} report --format html: {p.stderr}")
        with open(page, "rb") as f:
            pages.append(f.read())
    check(pages[0] == pages[1], "the packaged command's HTML report is not the build tree's")
    check(b"uPlot (v1.6.32)" in pages[0], "uPlot embedded")
    print("ok run")

    for page, name, section in (("cumemtrace.1", "CUMEMTRACE", 1), ("libcumemtrace.7", "LIBCUMEMTRACE", 7)):
        p = inst.man(os.path.join(usr, "share", "man", f"man{section}", page + ".gz"))
        eq((p.returncode, p.stderr), (0, ""), f"man -l {page}.gz: no warnings")
        check(p.stdout.startswith(f"{name}({section})"), p.stdout[:200])
        check("@" not in p.stdout, f"{page}: a placeholder left unfilled")
        # The documents the pages name by path are there, uncompressed.
        for doc in re.findall(r"/usr/share/doc/cumemtrace/[\w.-]*\w", p.stdout):
            check(os.path.isfile(root + doc), f"{page} names {doc}, which the package lacks")
    p = inst.man(os.path.join(usr, "share", "man", "man7", "libcumemtrace.7.gz"))
    check(f"/usr/{shim_rel}" in p.stdout, "libcumemtrace(7) names the installed shim's path")
    check("/usr/share/doc/cumemtrace/environment.md" in p.stdout, "libcumemtrace(7) names environment.md")
    print("ok man")

    inst.check_pkg_config(cli, os.path.join(usr, "lib", triplet, "pkgconfig"), os.path.join(usr, "include"),
                          shim, traces)
    print("ok pkg-config")
    shutil.rmtree(work)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
