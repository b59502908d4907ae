#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Makes meson-python's wheel run where the build dependencies are not
installed, the way auditwheel repairs a wheel (auditwheel is not in Debian;
patchelf is): usage: wheel_repair.py WHEEL OUTDIR (scripts/wheel.sh runs it).

- Every ELF file of cumemtrace/bin and cumemtrace/lib: each library it
  needs that is not one of glibc's or the C/C++ runtime's (the manylinux
  policy's list) is copied into cumemtrace/lib/ as NAME-HASH.so.N (HASH: the
  first 8 hex digits of its SHA-256, so that a process that loaded the
  system's copy, as PyTorch may have libunwind, keeps its own apart), its
  SONAME set to that name, and the needing file's DT_NEEDED rewritten to it;
  the same for what those libraries need. RPATHs: $ORIGIN/../lib for
  cumemtrace/bin, $ORIGIN for cumemtrace/lib.
- The Debian copyright file of each vendored library's package goes to
  cumemtrace/lib/licenses/, beside cumemtrace's own (debian/copyright: the
  HTML report's embedded JavaScript libraries are listed there);
  licenses/README names which file came from which package and version.
- Debug information is stripped before patchelf runs (the symbol tables
  stay: the report names the profiler's own frames).
- The architecture is the command's ELF machine (x86-64 or aarch64): a
  wheel cross-built for another than this machine's (scripts/wheel.sh
  --arch aarch64) has its libraries looked up in RUNPATH and the target's
  multiarch directories (/usr/lib/TRIPLET, Debian's LIBRARY:ARCH packages)
  instead of with ldd, is stripped by TRIPLET-strip, and every ELF file in
  it must be of that machine.
- The tag: py3-none-manylinux_2_X_ARCH, X the newest GLIBC_2.X symbol
  version any file uses: nothing in the wheel depends on the Python ABI (the
  command, the shim and the analysis library are no extension modules; the
  package loads the library with ctypes), and pip then refuses it on a
  glibc too old to load it instead of installing something that cannot run.
- RECORD rewritten with every file's hash and size."""
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

# Libraries every manylinux system has (PEP 600's policies: glibc's and the
# compilers' runtimes): never vendored.
SYSTEM = re.compile(r"^(ld-linux.*|libc|libm|libdl|librt|libpthread|libresolv|libutil|libnsl|libgcc_s|libstdc\+\+|"
                    r"libcrypt|linux-vdso)\.so")


def sh(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw).stdout


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", sh(["readelf", "-d", path]))


# ELF e_machine -> the architecture's name in the wheel's tag and Debian's
# multiarch triplet.
MACHINES = {62: ("x86_64", "x86_64-linux-gnu"), 183: ("aarch64", "aarch64-linux-gnu")}


def elf_machine(path):
    """The architecture of an ELF file (little-endian: both of MACHINES)."""
    with open(path, "rb") as f:
        head = f.read(20)
    machine = int.from_bytes(head[18:20], "little")
    if machine not in MACHINES:
        sys.exit(f"wheel_repair: {path}: ELF machine {machine} is none this script knows (x86-64, aarch64)")
    return MACHINES[machine]


def resolved(path):
    """NEEDED name -> the file the loader would use here (ldd)."""
    out = {}
    for line in sh(["ldd", path]).splitlines():
        m = re.match(r"\s*(\S+) => (\S+) \(0x", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def runpath(path):
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]", sh(["readelf", "-d", path]))
    return m.group(1).split(":") if m else []


def resolved_cross(path, triplet):
    """NEEDED name -> the file the target's loader would use, for a file of
    another architecture than this machine's (ldd cannot run it): its
    RUNPATH ($ORIGIN expanded), then the target's multiarch directories,
    where Debian's LIBRARY:ARCH packages put the libraries
    (scripts/cross_setup.sh)."""
    dirs = [d.replace("$ORIGIN", os.path.dirname(os.path.abspath(path))) for d in runpath(path)]
    dirs += [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
    out = {}
    for lib in needed(path):
        for d in dirs:
            candidate = os.path.join(d, lib)
            if os.path.isfile(candidate):
                out[lib] = candidate
                break
    return out


def glibc_versions(path):
    return [tuple(map(int, v)) for v in re.findall(r"GLIBC_(\d+)\.(\d+)", sh(["readelf", "-V", "--wide", path]))]


def debian_package(path):
    """(package, version) owning path, or (None, None). dpkg -S answers
    PACKAGE:ARCH for a multiarch package (the arm64 libraries of a cross
    build beside the amd64 ones): its version is that architecture's."""
    for candidate in (path, os.path.realpath(path)):
        p = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if p.returncode == 0:
            qualified = p.stdout.split(": ")[0].strip()
            pkg = qualified.split(":")[0]
            ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", qualified], capture_output=True,
                                 text=True).stdout
            return pkg, ver
    return None, None


def vendored_name(soname, data):
    digest = hashlib.sha256(data).hexdigest()[:8]
    m = re.match(r"^(.*?)(\.so(?:\.[0-9.]+)?)$", soname)
    return f"{m.group(1)}-{digest}{m.group(2)}" if m else f"{soname}-{digest}"


def record_line(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [rel, f"sha256={digest}", str(len(data))]


def main(wheel, outdir):
    work = tempfile.mkdtemp(prefix="cumemtrace-repair-")
    try:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(work)
        pkg = os.path.join(work, "cumemtrace")
        libdir = os.path.join(pkg, "lib")
        os.makedirs(libdir, exist_ok=True)
        ours = []
        for sub in ("bin", "lib"):
            d = os.path.join(pkg, sub)
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                p = os.path.join(d, name)
                if os.path.isfile(p) and is_elf(p):
                    ours.append(p)
        # The architecture: the command's. Another than this machine's is
        # a cross build (scripts/wheel.sh --arch): its libraries are found
        # without ldd and stripped by the target's binutils.
        arch, triplet = elf_machine(os.path.join(pkg, "bin", "cumemtrace"))
        cross = arch != os.uname().machine
        strip = f"{triplet}-strip" if cross else "strip"
        own_names = {os.path.basename(p) for p in ours}
        vendored = {}  # soname -> (new name, source path)
        queue = list(ours)
        while queue:
            path = queue.pop(0)
            if elf_machine(path)[0] != arch:
                sys.exit(f"wheel_repair: {os.path.relpath(path, work)} is not built for {arch}, as the command is")
            where = resolved_cross(path, triplet) if cross else resolved(path)
            for lib in needed(path):
                if SYSTEM.match(lib) or lib in vendored or lib in own_names:
                    continue
                src = where.get(lib)
                if not src or src == "not":
                    sys.exit(f"wheel_repair: {os.path.basename(path)} needs {lib}, which is not found here")
                with open(src, "rb") as f:
                    data = f.read()
                new = vendored_name(lib, data)
                dst = os.path.join(libdir, new)
                shutil.copyfile(src, dst)
                os.chmod(dst, 0o755)
                vendored[lib] = (new, src)
                queue.append(dst)
        # Stripped first, then patchelf one change per call: strip rewrites
        # the layout patchelf extends (after patchelf, strip left libdw with
        # a load segment the loader refused: "not page-aligned"), and
        # Debian 12's patchelf 0.14 mixes up the strings of several changes
        # made in one call (a RUNPATH holding a soname).
        sonames = {new for new, _ in vendored.values()}
        for path in ours + [os.path.join(libdir, n) for n, _ in vendored.values()]:
            sh([strip, "--strip-debug", path])
            if os.path.basename(path) in sonames:
                sh(["patchelf", "--set-soname", os.path.basename(path), path])
            for lib in needed(path):
                if lib in vendored:
                    sh(["patchelf", "--replace-needed", lib, vendored[lib][0], path])
            rpath = "$ORIGIN/../lib" if os.path.dirname(path).endswith("bin") else "$ORIGIN"
            sh(["patchelf", "--set-rpath", rpath, path])
        # Licences.
        lic = os.path.join(libdir, "licenses")
        os.makedirs(lic, exist_ok=True)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        shutil.copyfile(os.path.join(here, "debian", "copyright"), os.path.join(lic, "cumemtrace.copyright"))
        readme = ["Libraries vendored into this wheel (cumemtrace/lib/), with the Debian package each came from:",
                  "its copyright file is PACKAGE.copyright here. cumemtrace.copyright covers cumemtrace itself and",
                  "the JavaScript libraries its HTML report embeds.", ""]
        for lib, (new, src) in sorted(vendored.items()):
            deb, ver = debian_package(src)
            if not deb:
                sys.exit(f"wheel_repair: {src} belongs to no Debian package: its licence cannot be found")
            copyright_file = f"/usr/share/doc/{deb}/copyright"
            shutil.copyfile(copyright_file, os.path.join(lic, f"{deb}.copyright"))
            readme.append(f"{new}  {lib} from {src}, Debian package {deb} {ver}")
        with open(os.path.join(lic, "README"), "w") as f:
            f.write("\n".join(readme) + "\n")
        # The tag.
        files = ours + [os.path.join(libdir, n) for n, _ in vendored.values()]
        newest = max((v for p in files for v in glibc_versions(p)), default=(2, 17))
        tag = f"py3-none-manylinux_{newest[0]}_{newest[1]}_{arch}"
        distinfo = [d for d in os.listdir(work) if d.endswith(".dist-info")][0]
        wheel_meta = os.path.join(work, distinfo, "WHEEL")
        with open(wheel_meta) as f:
            text = f.read()
        text = re.sub(r"(?m)^Tag: .*$", f"Tag: {tag}", text)
        text = re.sub(r"(?m)^Root-Is-Purelib: .*$", "Root-Is-Purelib: false", text)
        with open(wheel_meta, "w") as f:
            f.write(text)
        # RECORD, then the archive (files sorted, RECORD last).
        rels = []
        for dirpath, _, names in os.walk(work):
            for n in names:
                rels.append(os.path.relpath(os.path.join(dirpath, n), work))
        record = f"{distinfo}/RECORD"
        rels = sorted(r for r in rels if r != record)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for r in rels:
            w.writerow(record_line(work, r))
        w.writerow([record, "", ""])
        with open(os.path.join(work, record), "w") as f:
            f.write(buf.getvalue())
        name = os.path.basename(wheel).split("-")
        out = os.path.join(outdir, f"{name[0]}-{name[1]}-{tag}.whl")
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for r in rels + [record]:
                full = os.path.join(work, r)
                info = zipfile.ZipInfo(r, date_time=(2020, 1, 1, 0, 0, 0))
                # zipfile's extraction dropped the modes: ELF files (the
                # command, the libraries) are executable, the rest not.
                info.external_attr = (stat.S_IFREG | (0o755 if is_elf(full) else 0o644)) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(full, "rb") as f:
                    z.writestr(info, f.read())
        print(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: wheel_repair.py WHEEL OUTDIR")
    main(sys.argv[1], sys.argv[2])
