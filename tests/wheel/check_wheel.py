#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks what a cumemtrace wheel holds, for either architecture, without
running anything in it (a cross-built wheel cannot run here):

    tests/wheel/check_wheel.py WHEEL [ARCH]      exit 0: "ok ..."; 1: each problem on stderr

- the name cumemtrace-V-py3-none-manylinux_2_X_ARCH.whl (ARCH, given, must
  be it), the same tag in the WHEEL file, Root-Is-Purelib false;
- the command, the shim, the PyTorch bridge and the analysis library there;
  every ELF file of the wheel built for ARCH (its ELF machine: x86-64 or
  AArch64), 64-bit little-endian, mode 0755;
- every DT_NEEDED of every ELF file either a file of cumemtrace/lib/ or a
  library every manylinux system has (glibc's, the loader, the compilers'
  runtimes: PEP 600's list); RUNPATH $ORIGIN/../lib for the command and
  $ORIGIN for the libraries; no GLIBC_2.Y symbol version newer than the
  tag's 2.X;
- every vendored library (cumemtrace/lib/NAME-HASH.so.N) with its SONAME
  set to that name, named in lib/licenses/README with the Debian package
  it came from, whose copyright file lib/licenses/PACKAGE.copyright is
  there and not empty; cumemtrace's own licence beside them;
- RECORD: every file, with its SHA-256 and size.

readelf (binutils) reads every architecture's ELF files; nothing else is
needed. tests/wheel/test_wheel_cross.py runs it on the aarch64 wheel."""
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

MACHINES = {62: "x86_64", 183: "aarch64"}
# PEP 600 / auditwheel's manylinux policy: what the system provides.
SYSTEM = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libresolv.so.2",
          "libutil.so.1", "libnsl.so.1", "libcrypt.so.1", "libgcc_s.so.1", "libstdc++.so.6",
          "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
OURS = ("cumemtrace/bin/cumemtrace", "cumemtrace/lib/libcumemtrace.so", "cumemtrace/lib/libcumemtrace_torch.so",
        "cumemtrace/lib/libcumemtrace_analysis.so")
VENDORED_NAME = re.compile(r"^(lib[A-Za-z0-9_+]+?)-([0-9a-f]{8})(\.so(?:\.[0-9.]+)?)$")


def readelf(*args):
    return subprocess.run(["readelf", *args], check=True, capture_output=True, text=True).stdout


def check_wheel(wheel, arch=None):
    """The problems found (a list of sentences); empty when the wheel is right."""
    problems = []
    name = os.path.basename(wheel)
    m = re.fullmatch(r"cumemtrace-([0-9.]+)-py3-none-manylinux_2_(\d+)_(x86_64|aarch64)\.whl", name)
    if not m:
        return [f"{name}: not cumemtrace-VERSION-py3-none-manylinux_2_X_ARCH.whl"]
    version, glibc_minor, tag_arch = m.group(1), int(m.group(2)), m.group(3)
    if arch and tag_arch != arch:
        problems.append(f"{name}: tagged {tag_arch}, not {arch}")
    arch = tag_arch
    work = tempfile.mkdtemp(prefix="cmt-check-wheel-")
    try:
        with zipfile.ZipFile(wheel) as z:
            infos = z.infolist()
            z.extractall(work)
        names = {i.filename for i in infos}
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in infos}
        distinfo = f"cumemtrace-{version}.dist-info"
        with open(os.path.join(work, distinfo, "WHEEL")) as f:
            meta = f.read()
        tag = name[len(f"cumemtrace-{version}-"):-len(".whl")]
        if re.findall(r"(?m)^Tag: (.*)$", meta) != [tag]:
            problems.append(f"{distinfo}/WHEEL: no 'Tag: {tag}': {meta!r}")
        if "Root-Is-Purelib: false" not in meta:
            problems.append(f"{distinfo}/WHEEL: not Root-Is-Purelib: false")
        for f in OURS + ("cumemtrace/lib/licenses/README", "cumemtrace/lib/licenses/cumemtrace.copyright"):
            if f not in names:
                problems.append(f"{f} is not in the wheel")
        libdir = os.path.join(work, "cumemtrace", "lib")
        in_lib = set(os.listdir(libdir)) if os.path.isdir(libdir) else set()
        elves = []
        for rel in sorted(names):
            with open(os.path.join(work, rel), "rb") as f:
                head = f.read(20)
            if head[:4] != b"\x7fELF":
                continue
            elves.append(rel)
            machine = MACHINES.get(int.from_bytes(head[18:20], "little"), f"machine {int.from_bytes(head[18:20], 'little')}")
            if head[4] != 2 or head[5] != 1:
                problems.append(f"{rel}: not a 64-bit little-endian ELF file")
            if machine != arch:
                problems.append(f"{rel}: built for {machine}, the wheel is {arch}")
            if modes.get(rel) != 0o755:
                problems.append(f"{rel}: mode {modes.get(rel):o}, not 755")
            dyn = readelf("-d", os.path.join(work, rel))
            for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
                if lib not in SYSTEM and lib not in in_lib:
                    problems.append(f"{rel} needs {lib}: neither in cumemtrace/lib/ nor a manylinux system library")
            rp = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[([^\]]*)\]", dyn)
            want = "$ORIGIN/../lib" if rel.startswith("cumemtrace/bin/") else "$ORIGIN"
            if rp != [want]:
                problems.append(f"{rel}: RUNPATH {rp}, not [{want!r}]")
            versions = re.findall(r"GLIBC_2\.(\d+)", readelf("-V", "--wide", os.path.join(work, rel)))
            newest = max(map(int, versions), default=0)
            if newest > glibc_minor:
                problems.append(f"{rel} uses GLIBC_2.{newest}, newer than the tag's manylinux_2_{glibc_minor}")
            if VENDORED_NAME.match(os.path.basename(rel)):
                sonames = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
                if sonames != [os.path.basename(rel)]:
                    problems.append(f"{rel}: SONAME {sonames}, not its own name")
        for rel in OURS:
            if rel in names and rel not in elves:
                problems.append(f"{rel} is not an ELF file")
        # Licences: each vendored library named in README with its package,
        # whose copyright file is there.
        lic = os.path.join(libdir, "licenses")
        readme = open(os.path.join(lic, "README")).read() if os.path.isfile(os.path.join(lic, "README")) else ""
        vendored = sorted(n for n in in_lib if VENDORED_NAME.match(n))
        if not vendored:
            problems.append("no vendored library in cumemtrace/lib/")
        for n in vendored:
            line = re.search(rf"^{re.escape(n)}  \S+ from (\S+), Debian package (\S+) (\S+)$", readme, re.M)
            if not line:
                problems.append(f"licenses/README does not name {n} and its Debian package")
                continue
            copyright_file = os.path.join(lic, f"{line.group(2)}.copyright")
            if not os.path.isfile(copyright_file) or os.path.getsize(copyright_file) == 0:
                problems.append(f"{n}: its package's licence licenses/{line.group(2)}.copyright is missing or empty")
        own = os.path.join(lic, "cumemtrace.copyright")
        if os.path.isfile(own) and os.path.getsize(own) == 0:
            problems.append("licenses/cumemtrace.copyright is empty")
        # RECORD.
        record = list(csv.reader(io.StringIO(open(os.path.join(work, distinfo, "RECORD")).read())))
        listed = {row[0] for row in record}
        if listed != names:
            problems.append(f"RECORD lists {sorted(listed ^ names)} wrongly")
        for row in record:
            if row[0] == f"{distinfo}/RECORD" or row[0] not in names:
                continue
            with open(os.path.join(work, row[0]), "rb") as f:
                data = f.read()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if row[1:] != [f"sha256={digest}", str(len(data))]:
                problems.append(f"RECORD: {row[0]}'s hash or size is wrong")
        if not problems:
            print(f"ok {name}: {len(elves)} ELF files for {arch}, {len(vendored)} vendored libraries with their "
                  f"licences, every DT_NEEDED inside the wheel or manylinux's")
        return problems
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: check_wheel.py WHEEL [x86_64|aarch64]")
    found = check_wheel(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
    for p in found:
        print(f"check_wheel: {p}", file=sys.stderr)
    sys.exit(1 if found else 0)
