# SPDX-License-Identifier: MIT
"""End-to-end: CUDA runtime programs under the shim on the simulated device,
analysed by `cumemtrace report`. Every figure asserted follows from the
program's source."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

SRC = os.path.join(os.path.dirname(__file__), "programs")


def line_of(source, text):
    with open(os.path.join(SRC, source)) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise cmtest.Failure(f"{text!r} not in {source}")


def test_leak_peak():
    r = cmtest.run([cmtest.program("leak_peak")])
    eq(r.proc.returncode, 0, "exit status")
    eq(r.proc.stdout, "leak_peak done\n", "program output")
    rep = cmtest.report(r.trace)
    eq(rep["events"], 18, "events")
    eq(rep["events_by_api"], {"cudaMalloc": 12, "cudaFree": 6}, "events by API")
    d0 = cmtest.device(rep, 0)
    eq(d0["peak_bytes"], 115 * MiB, "peak bytes")
    eq(d0["peak_allocations"], 7, "allocations live at the peak")
    eq(d0["live_at_exit_bytes"], 69 * MiB, "live at exit")
    top = d0["top_sites_at_peak"]
    eq([(cmtest.first_function(s), s["bytes"], s["count"]) for s in top],
       [("keep_forever", 64 * MiB, 1), ("peak_phase", 48 * MiB, 3), ("leak_per_iteration", 3 * MiB, 3)],
       "sites live at the peak")
    # The shim's and the C library's entry frames are folded away.
    eq([f["function"] for f in top[0]["frames"]], ["keep_forever", "main"], "frames of keep_forever")

    leaks = rep["leaks"]
    eq((leaks["bytes"], leaks["count"]), (69 * MiB, 6), "leak totals")
    eq([(cmtest.first_function(s), s["bytes"], s["count"], s["kind"], s["api"]) for s in leaks["sites"]],
       [("keep_forever", 64 * MiB, 1, "device", "cudaMalloc"),
        ("leak_per_iteration", 3 * MiB, 3, "device", "cudaMalloc"),
        ("leak_per_iteration", 2 * MiB, 2, "device", "cudaMalloc")], "leak sites")
    frame = leaks["sites"][0]["frames"][0]
    eq(os.path.basename(frame["file"]), "leak_peak.c", "file of keep_forever")
    eq(frame["line"], line_of("leak_peak.c", "cudaMalloc(&p, 64 * MiB)"), "line of keep_forever's cudaMalloc")
    eq(os.path.basename(frame["module"]), "leak_peak", "module of keep_forever")
    # The two leak_per_iteration sites differ by their call line in main.
    lines = sorted(s["frames"][1]["line"] for s in leaks["sites"][1:])
    with open(os.path.join(SRC, "leak_peak.c")) as f:
        calls = [i for i, l in enumerate(f, 1) if l.strip() == "leak_per_iteration();"]
    eq(lines, calls, "call lines of leak_per_iteration in main")
    eq(rep["failed"], [], "failed allocations")
    eq(rep["complete"], True, "complete")

    text = cmtest.cli("report", r.trace)
    eq(text.returncode, 0, "text report status")
    check("Device 0: peak 115.0 MiB (120586240 B) in 7 allocations" in text.stdout, text.stdout)
    check("Leaks (live at exit): 69.0 MiB (72351744 B) in 6 allocations" in text.stdout, text.stdout)
    check(re.search(r"keep_forever at .*leak_peak\.c:\d+", text.stdout), text.stdout)
    cmtest.cleanup(r)


def test_failed_allocation():
    env = {"SIMCUDA_CAPACITY": "64MiB"}
    native = cmtest.run([cmtest.program("oom")], env=env, preload=False)
    r = cmtest.run([cmtest.program("oom")], env=env)
    # The caller sees exactly what the real cudaMalloc returned.
    eq(r.proc.stdout, native.proc.stdout, "program output with and without the shim")
    eq(r.proc.stdout, "hold_most=0 try_too_big=2 b=(nil) last=2\n", "program output")
    eq(r.proc.returncode, 0, "exit status")
    rep = cmtest.report(r.trace)
    eq(rep["failed_count"], 1, "failed count")
    f = rep["failed"][0]
    eq((f["api"], f["size"], f["error"], f["error_code"], f["device"]),
       ("cudaMalloc", 32 * MiB, "cudaErrorMemoryAllocation", 2, 0), "failure")
    eq(f["live_device_bytes"], 48 * MiB, "live bytes at the failure")
    eq(cmtest.first_function(f), "try_too_big", "failing call site")
    eq(rep["leaks"]["count"], 0, "no leaks")
    text = cmtest.cli("report", r.trace).stdout
    check("cudaMalloc of 32.0 MiB (33554432 B) on device 0 failed with cudaErrorMemoryAllocation (2)" in text,
          text)
    cmtest.cleanup(r)
    cmtest.cleanup(native)


def test_threads():
    r = cmtest.run([cmtest.program("threads"), "8", "10000"])
    eq(r.proc.returncode, 0, "exit status")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {"cudaMalloc": 80000, "cudaFree": 80000}, "no event lost")
    eq(rep["unmatched_frees"], 0, "every free matched its allocation")
    eq(rep["leaks"]["count"], 0, "no leaks")
    check(cmtest.device(rep, 0)["peak_allocations"] <= 8, "at most one live allocation per thread")
    eq(rep["warnings"], [], "warnings")
    cmtest.cleanup(r)


def test_kinds_apart():
    r = cmtest.run([cmtest.program("kinds")])
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, "pitch=1024 volume_pitch=2048\n", "pitches")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {
        "cudaMalloc": 1, "cudaFree": 4, "cudaMallocAsync": 1, "cudaFreeAsync": 2,
        "cudaMallocFromPoolAsync": 1, "cudaMallocManaged": 1, "cudaMallocHost": 1, "cudaHostAlloc": 1,
        "cudaFreeHost": 1, "cudaMallocPitch": 1, "cudaMalloc3D": 1}, "events by API")
    d0 = cmtest.device(rep, 0)
    pitched, volume = 1024 * 100, 2048 * 10 * 4
    eq(d0["peak_bytes"], 16 * MiB + pitched + volume, "device peak: device, pitched, 3D and pool bytes")
    eq(d0["peak_by_kind"], {"device": 8 * MiB + pitched + volume, "async-pool": 8 * MiB}, "peak by kind")
    eq([cmtest.first_function(s) for s in d0["top_sites_at_peak"]],
       ["device_buffer", "async_work", "async_work", "pitched", "volume"], "sites at the device peak")
    eq([(m["ordinal"], m["peak_bytes"]) for m in rep["managed"]], [(0, 4 * MiB)], "managed kept apart")
    eq([h["peak_bytes"] for h in rep["pinned_host"]], [3 * MiB], "pinned host kept apart")
    eq(rep["pinned_host"][0]["live_at_exit_bytes"], 1 * MiB, "pinned host at exit")
    eq([(cmtest.first_function(s), s["kind"], s["api"], s["bytes"]) for s in rep["leaks"]["sites"]],
       [("pinned_portable", "pinned-host", "cudaHostAlloc", 1 * MiB)], "only the pinned buffer leaks")
    eq(rep["leaks"]["by_kind"], {"pinned-host": 1 * MiB}, "leaks by kind")
    cmtest.cleanup(r)


def killed_case(sig):
    r = cmtest.run([cmtest.program("killed"), "100", str(int(sig))])
    eq(r.proc.returncode, -int(sig), "killed by the signal")
    eq(r.proc.stdout, "allocated 100\n", "program output")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {"cudaMalloc": 100}, "every completed event is in the trace")
    eq((rep["leaks"]["bytes"], rep["leaks"]["count"]), (100 * MiB, 100), "live when killed")
    eq(rep["clean_exit"], False, "not a clean exit")
    check(any("did not exit normally" in w for w in rep["warnings"]), rep["warnings"])
    # Incomplete, never damaged: what a killed writer leaves verifies.
    eq((rep["complete"], rep["trace_state"], rep["damage"]), (False, "incomplete", None), "state of a killed trace")
    p = cmtest.cli("report", r.trace)
    eq((p.returncode, p.stderr), (0, ""), "a killed process's trace reads without damage")
    lines = p.stdout.splitlines()
    check(lines[3].endswith(", process did not exit normally"), lines[3])
    check("DAMAGED" not in p.stdout and "TRUNCATED" not in p.stdout and "damaged" not in p.stdout, p.stdout)
    c = cmtest.cli("check", r.trace)
    eq(c.returncode, 2, "check: leaks of a killed process cannot be judged")
    check("the process did not exit normally (killed, crashed, or ended with _exit): leaks were not checked" in
          c.stdout + c.stderr, c.stdout + c.stderr)
    check("damaged" not in c.stdout + c.stderr, c.stdout + c.stderr)
    cmtest.cleanup(r)


def test_sigkill():
    killed_case(signal.SIGKILL)


def test_sigsegv():
    killed_case(signal.SIGSEGV)


def test_abort():
    killed_case(signal.SIGABRT)


# What the command adds to a damage message (docs/messages.md).
CHANGED = " (the file changed after it was written: copy it again from where it was recorded, or record again)"


def test_bad_traces():
    r = cmtest.run([cmtest.program("leak_peak")])
    trace = r.trace
    # Not a trace.
    p = cmtest.cli("report", cmtest.program("leak_peak"))
    eq(p.returncode, 2, "status for a non-trace")
    eq(p.stderr, f"cumemtrace: {cmtest.program('leak_peak')}: not a cumemtrace trace (no CUMEMTRC magic at "
                 "the start): give a file the profiler wrote\n", "message for a non-trace")
    eq(p.stdout, "", "no report for a non-trace")
    # Missing.
    p = cmtest.cli("report", os.path.join(r.dir, "missing.bin"))
    eq(p.returncode, 2, "status for a missing file")
    check(p.stderr.endswith("missing.bin: cannot open: No such file or directory; check the path\n"), p.stderr)
    cmtest.check_catalogued(p.stderr)
    # Truncated: analysed up to the cut, one error line, status 2.
    with open(trace, "rb") as f:
        data = f.read()
    cut = os.path.join(r.dir, "cut.bin")
    with open(cut, "wb") as f:
        f.write(data[: len(data) - 200])
    p = cmtest.cli("report", "--json", cut)
    eq(p.returncode, 2, "status for a truncated trace")
    eq(p.stderr, f"cumemtrace: {cut}: trace is truncated: the file ends at offset {len(data) - 200}; the report "
                 "covers the events before the cut (copy the whole file to see the rest)\n",
       "message for a truncated trace")
    import json
    rep = json.loads(p.stdout)
    check(rep["events"] > 0, "events before the cut are analysed")
    eq(rep["complete"], False, "a truncated trace is not complete")
    eq(rep["trace_state"], "truncated", "state of a truncated trace")
    # Every command that prints an analysis says the same of the cut, after it.
    for command, what in (("timeline", "timeline"), ("frag", "output")):
        p = cmtest.cli(command, cut)
        eq(p.returncode, 2, f"{command}: status for a truncated trace")
        eq(p.stderr, f"cumemtrace: {cut}: trace is truncated: the file ends at offset {len(data) - 200}; the "
                     f"{what} covers the events before the cut (copy the whole file to see the rest)\n",
           f"{command}: message for a truncated trace")
        cmtest.check_catalogued(p.stderr)
        check(p.stdout != "", f"{command}: output for the events before the cut")
    # A damaged chunk header (the second chunk's size not a multiple of 64):
    # its checksum no longer matches.
    off = 4096
    off += struct.unpack_from("<I", data, off + 4)[0]
    bad = os.path.join(r.dir, "damaged.bin")
    with open(bad, "wb") as f:
        f.write(data[: off + 4] + struct.pack("<I", 12345) + data[off + 8:])
    for command, what in (("report", "report"), ("timeline", "timeline"), ("frag", "output")):
        p = cmtest.cli(command, bad)
        eq(p.returncode, 2, f"{command}: status for a damaged trace")
        eq(p.stderr, f"cumemtrace: {bad}: damaged chunk header at offset {off}: its checksum does not match; the "
                     f"{what} covers the events before it{CHANGED}\n", f"{command}: message for a damaged trace")
        cmtest.check_catalogued(p.stderr)
        check(p.stdout != "", f"{command}: output for the events before the damage")
    # Newer format.
    newer = os.path.join(r.dir, "newer.bin")
    with open(newer, "wb") as f:
        f.write(data[:8] + bytes([3, 0, 0, 0]) + data[12:])
    p = cmtest.cli("report", newer)
    eq(p.returncode, 2, "status for a newer trace")
    eq(p.stderr, f"cumemtrace: {newer}: written by a newer cumemtrace (trace format 3.0); this analyzer reads "
                 "format 2.x: upgrade cumemtrace\n", "message for a newer trace")
    # Format 1 (no checksums): refused with what to do.
    older = os.path.join(r.dir, "older.bin")
    with open(older, "wb") as f:
        f.write(data[:8] + bytes([1, 0, 0, 0]) + data[12:])
    p = cmtest.cli("report", older)
    eq(p.returncode, 2, "status for a format-1 trace")
    eq(p.stderr, f"cumemtrace: {older}: trace format 1.0 has no checksums and is no longer read (this analyzer "
                 "reads format 2.x): record it again, or read it with the cumemtrace that wrote it\n",
       "message for a format-1 trace")
    # Empty.
    empty = os.path.join(r.dir, "empty.bin")
    open(empty, "wb").close()
    p = cmtest.cli("report", empty)
    eq(p.returncode, 2, "status for an empty file")
    check("empty file" in p.stderr, p.stderr)
    cmtest.cleanup(r)


def first_event_chunk(data):
    off = 4096
    while struct.unpack_from("<I", data, off)[0] != 0x45544D43:
        off += struct.unpack_from("<I", data, off + 4)[0]
    return off


def test_cut_and_damaged_traces():
    r = cmtest.run([cmtest.program("leak_peak")])
    with open(r.trace, "rb") as f:
        data = f.read()
    # 100 bytes: the magic, then the cut. A truncated trace, not "not a trace".
    short = os.path.join(r.dir, "short.bin")
    with open(short, "wb") as f:
        f.write(data[:100])
    p = cmtest.cli("report", short)
    eq(p.returncode, 2, "status for 100 bytes of a trace")
    eq(p.stderr, f"cumemtrace: {short}: trace is truncated: the file ends at offset 100, inside its 4096-byte "
                 "header; no event is left: copy the whole file\n", "message for 100 bytes of a trace")
    eq(p.stdout, "", "no report of 100 bytes")
    c = cmtest.cli("check", short)
    eq(c.returncode, 2, "check: 100 bytes of a trace cannot be checked")
    # Half the file: the first lines say truncated, where, and that the
    # process's exit is not what the figures show.
    half = os.path.join(r.dir, "half.bin")
    cut = len(data) // 2
    with open(half, "wb") as f:
        f.write(data[:cut])
    p = cmtest.cli("report", half)
    eq(p.returncode, 2, "status for half a trace")
    lines = p.stdout.splitlines()
    eq(lines[0], f"cumemtrace report of {half}", "first line")
    eq(lines[1], f"  trace:    TRUNCATED: the file ends at offset {cut} but its chunks reach offset {len(data)} "
                 f"({len(data) - cut} bytes missing); the figures below cover the events before the cut, and what is "
                 "live at the cut is not a list of leaks (it may have been released after it)",
       "truncation said at the top")
    check(lines[4].endswith(", trace truncated (see above)"), lines[4])
    check("process exited normally" not in p.stdout, p.stdout)
    eq(p.stderr, f"cumemtrace: {half}: trace is truncated: the file ends at offset {cut}; the report covers the "
                 "events before the cut (copy the whole file to see the rest)\n", "message for half a trace")
    rep = json.loads(cmtest.cli("report", "--json", half).stdout)
    eq((rep["complete"], rep["trace_state"]), (False, "truncated"), "state of half a trace")
    c = cmtest.cli("check", "--format", "json", half)
    eq(c.returncode, 2, "check: half a trace cannot be checked")
    t = json.loads(c.stdout)["traces"][0]
    eq((t["status"], t["complete"], t["trace_state"]), ("error", False, "truncated"), "check of half a trace")
    # One byte changed in the first event record: named, with its offset.
    off = first_event_chunk(data)
    rec = off + 48
    bad = os.path.join(r.dir, "flipped.bin")
    with open(bad, "wb") as f:
        f.write(data[:rec + 1] + bytes([data[rec + 1] ^ 0x04]) + data[rec + 2:])
    p = cmtest.cli("report", bad)
    eq(p.returncode, 2, "status for a damaged trace")
    what = f"damaged event record at offset {rec} (chunk at offset {off}): its checksum does not match"
    eq(p.stdout.splitlines()[1], f"  trace:    DAMAGED: {what}; the figures below cover the events before the "
                                 "damage, and what is live there is not a list of leaks (it may have been released "
                                 "after it)", "damage said at the top")
    eq(p.stderr, f"cumemtrace: {bad}: {what}; the report covers the events before it{CHANGED}\n", "damage message")
    c = cmtest.cli("check", bad)
    eq(c.returncode, 2, "check: a damaged trace cannot be checked")
    check("PASS" not in c.stdout + c.stderr, c.stdout + c.stderr)
    cmtest.cleanup(r)


def test_unwritable_output():
    native = cmtest.run([cmtest.program("leak_peak")], preload=False)
    # /proc is refused before any file is tried (test_host_harm.py has the
    # other special paths).
    # the texts of docs/messages.md: what went wrong, then what to do
    for target, start, end in [
            ("/nonexistent-dir/t.bin", "cannot create trace file /nonexistent-dir/t.bin: No such file or directory",
             "; running without tracing: set CUMEMTRACE_OUTPUT to a path in a writable directory"),
            ("/proc/t.bin", "CUMEMTRACE_OUTPUT /proc/t.bin is in /proc, not a place for a trace file",
             "; running without tracing: set CUMEMTRACE_OUTPUT to a file path such as trace.%p.bin")]:
        r = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_OUTPUT": target})
        eq(r.proc.returncode, native.proc.returncode, "exit status unchanged")
        eq(r.proc.stdout, native.proc.stdout, "output unchanged")
        lines = r.proc.stderr.splitlines()
        eq(len(lines), 1, f"one warning line: {lines}")
        check(lines[0].startswith(f"cumemtrace: warning: {start}"), lines[0])
        check(lines[0].endswith(end), lines[0])
        cmtest.check_catalogued(r.proc.stderr)
        cmtest.cleanup(r)
    # A value longer than the shim keeps: the default, and one warning.
    r = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_TORCH_LAYOUT": "x" * 300})
    eq((r.proc.returncode, r.proc.stdout), (native.proc.returncode, native.proc.stdout), "long value: unchanged")
    warned = [l for l in r.proc.stderr.splitlines() if "warning" in l]
    # Under the valgrind setup valgrind's own launcher processes load the
    # preloaded shim too: one warning per process, the same one.
    eq(sorted(set(warned)) if cmtest.VALGRIND else warned,
       ["cumemtrace: warning: ignoring CUMEMTRACE_TORCH_LAYOUT: longer than 255 bytes; using no value: give a "
        "shorter value"], "one warning for a value too long")
    cmtest.check_catalogued(r.proc.stderr)
    eq(len(r.traces), 1, "traced as usual")
    cmtest.cleanup(r)
    cmtest.cleanup(native)


def test_cli_messages():
    """The command's main failure paths print the text docs/messages.md
    catalogues (what went wrong, then what to do) and exit 2; none of
    them starts a program."""
    r = cmtest.run([cmtest.program("leak_peak")])
    d = r.dir

    def fails(args, message, env=None):
        p = cmtest.cli(*args, env=env)
        eq((p.returncode, p.stdout, p.stderr), (2, "", message), f"cumemtrace {' '.join(args)}")
        cmtest.check_catalogued(p.stderr)

    # the shim missing: named by the variable, or not beside the binary
    fails(["run", "--", "true"], "cumemtrace: run: CUMEMTRACE_SHIM=/nonexistent/libcumemtrace.so is not a file: set "
          "it to the path of libcumemtrace.so, or unset it\n", env={"CUMEMTRACE_SHIM": "/nonexistent/libcumemtrace.so"})
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    alone = os.path.join(bindir, "cumemtrace")
    shutil.copy(cmtest.CLI, alone)
    argv = cmtest.VALGRIND_CMD + [alone] if cmtest.VALGRIND else [alone]
    p = subprocess.run(argv + ["run", "--", "true"], env=cmtest.sim_env({"CUMEMTRACE_SHIM": None}, preload=False),
                       capture_output=True, text=True, timeout=300)
    check(re.fullmatch(f"cumemtrace: run: cannot find libcumemtrace.so next to {re.escape(bindir)} \\(looked in "
                       "\\S+/libcumemtrace.so and ../preload\\); set CUMEMTRACE_SHIM to its path\n", p.stderr),
          p.stderr)
    cmtest.check_catalogued(p.stderr)
    eq(p.returncode, 2, "status without a shim")
    # run --check without a place for its manifest
    # (not under the valgrind setup: valgrind itself needs a TMPDIR it can write)
    if not cmtest.VALGRIND:
        fails(["run", "--check", "--", "true"], "cumemtrace: run: cannot create a manifest file in /nonexistent: No "
              "such file or directory; set TMPDIR to a writable directory\n", env={"TMPDIR": "/nonexistent"})
    # outputs that cannot be created
    for cmd, fmt in (("report", "html"), ("export", "perfetto")):
        out = os.path.join(d, "no", "such", "out")
        fails([cmd, "--format", fmt, "-o", out, r.trace], f"cumemtrace: {cmd}: cannot create {out}: No such file or "
              "directory; check that its directory exists and is writable\n")
    # a directory given as the trace; report takes a directory of summaries
    fails(["timeline", d], f"cumemtrace: {d}: not a regular file: give the path of a trace file\n")
    fails(["report", d], f"cumemtrace: report: {d} holds no summary (*.cmtsum): make them with `cumemtrace "
          "summarize`, or give traces\n")
    cmtest.cleanup(r)


def output_commands(trace):
    """Every command that writes a report to -o FILE, with the options that
    make it write one of trace (diff compares the trace with itself)."""
    return [("report", []), ("export", ["--format", "folded"]), ("timeline", ["--csv"]), ("frag", []),
            ("diff", [trace]), ("whatif", []), ("check", []), ("top", ["--once"])]


def test_output_option():
    """-o FILE and --output FILE on every command that writes a report
    (docs/cli.md): FILE holds what the standard output would, byte for
    byte, with the same exit status; nothing goes to the standard output;
    a FILE that cannot be created is said and exits 2; a trace that cannot
    be read leaves no FILE behind (but for check and export). check's --report-file is its older
    spelling: the last one given wins."""
    r = cmtest.run([cmtest.program("leak_peak")])
    d = r.dir
    commands = output_commands(r.trace)
    for cmd, opts in commands:
        plain = cmtest.cli(cmd, *opts, r.trace)
        # check fails the trace (leak_peak leaks 69 MiB, its peak is over no limit: only the leaks)
        eq(plain.returncode, 1 if cmd == "check" else 0, f"{cmd}: status {plain.stderr}")
        check(plain.stdout, f"{cmd} printed something")
        for spelling in ("-o", "--output"):
            out = os.path.join(d, f"{cmd}{spelling}.out")
            p = cmtest.cli(cmd, *opts, spelling, out, r.trace)
            eq(p.returncode, plain.returncode, f"{cmd} {spelling}: the same status ({p.stderr})")
            eq(p.stdout, "", f"{cmd} {spelling}: nothing on the standard output")
            with open(out) as f:
                eq(f.read(), plain.stdout, f"{cmd} {spelling}: the file holds what the standard output would")
            if cmd == "check":
                # the one-line result still goes to the terminal
                eq(plain.stderr, "", "check: the result is in the report")
                check(re.fullmatch(f"cumemtrace check: FAIL {re.escape(r.trace)} \\(leak_peak, pid \\d+\\): 3 "
                                   "violations; leaked 69.0 MiB in 6 allocations; peak 115.0 MiB on device 0\n",
                                   p.stderr), f"check {spelling}: the result line on stderr: {p.stderr}")
            else:
                eq(p.stderr, "", f"{cmd} {spelling}: nothing on stderr")
        # a FILE that cannot be created
        missing = os.path.join(d, "no", "such", "out")
        p = cmtest.cli(cmd, *opts, "-o", missing, r.trace)
        said = (f"cumemtrace: {cmd}: cannot create {missing}: No such file or directory; check that its directory "
                "exists and is writable\n")
        if cmd == "check":
            # after the result line, which the terminal gets either way
            eq((p.returncode, p.stdout), (2, ""), "check -o into a missing directory")
            check(p.stderr.endswith(said), p.stderr)
        else:
            eq((p.returncode, p.stdout, p.stderr), (2, "", said), f"{cmd} -o into a missing directory")
        cmtest.check_catalogued(p.stderr)
        # a trace that cannot be read: no file (check writes its report of the
        # error; export streams its traces into a file made first)
        if cmd not in ("check", "export"):
            out = os.path.join(d, f"{cmd}.unread")
            absent = os.path.join(d, "absent.bin")
            args = [cmd, *opts, "-o", out, absent] if cmd != "diff" else [cmd, "-o", out, absent, absent]
            p = cmtest.cli(*args)
            eq(p.returncode, 2, f"{cmd}: an unreadable trace")
            check(not os.path.exists(out), f"{cmd}: no file for a trace that cannot be read")
    # check: --report-file and -o are one option, the last one given wins
    a, b = os.path.join(d, "a.txt"), os.path.join(d, "b.txt")
    p = cmtest.cli("check", "--report-file", a, "-o", b, r.trace)
    eq((p.returncode, os.path.exists(a), os.path.exists(b)), (1, False, True), "-o after --report-file")
    os.unlink(b)
    p = cmtest.cli("check", "-o", a, "--report-file", b, r.trace)
    eq((p.returncode, os.path.exists(a), os.path.exists(b)), (1, False, True), "--report-file after -o")
    # top writes a snapshot only with --once: the live view is a screen
    p = cmtest.cli("top", "-o", a, r.trace)
    eq((p.returncode, p.stdout, p.stderr, os.path.exists(a)),
       (2, "", "cumemtrace: top: -o is for --once: the live view is a screen\n", False), "top -o without --once")
    # each command's --help says it
    for cmd, _ in commands:
        h = cmtest.cli(cmd, "--help")
        check(re.search(r"^  -o, --output FILE +(with --once: )?write ", h.stdout, re.M), f"{cmd} --help names -o: {h.stdout}")
    cmtest.cleanup(r)


def test_output_write_fails():
    """-o FILE where the write fails (here the file size limit, as a full
    disk would): exit status 2, the failure said once, FILE as it was
    before (content and mode) and no temporary left beside it; where the
    write succeeds, FILE takes the new output and keeps its mode
    (docs/cli.md). check's --report-file (and `run --check`'s) is the same
    option."""
    import resource

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    r = cmtest.run([cmtest.program("leak_peak")])
    d = r.dir
    commands = output_commands(r.trace)
    for cmd, opts in commands:
        plain = cmtest.cli(cmd, *opts, r.trace)
        check(len(plain.stdout) > 64, f"{cmd}: more output than the limit ({len(plain.stdout)} bytes)")
        out = os.path.join(d, f"{cmd}.kept")
        with open(out, "w") as f:
            f.write("the last good report\n")
        os.chmod(out, 0o640)
        p = subprocess.run([cmtest.CLI, cmd, *opts, "-o", out, r.trace], env=cmtest.sim_env(preload=False),
                           capture_output=True, text=True, timeout=300, preexec_fn=limited)
        said = (f"cumemtrace: {cmd}: writing {out} failed: File too large; check the free space (df) and "
                "`ulimit -f`\n")
        eq((p.returncode, p.stdout), (2, ""), f"{cmd}: a write that fails: status 2 ({p.stderr})")
        if cmd == "check":
            # then the result line, which the terminal gets either way
            lines = p.stderr.splitlines(keepends=True)
            eq(lines[0], said, "check: the failure said once")
            check(len(lines) == 2 and re.fullmatch(f"cumemtrace check: FAIL {re.escape(r.trace)} \\(leak_peak, pid "
                                                   "\\d+\\): 3 violations; .*\n", lines[1]), f"check: {p.stderr}")
        else:
            eq(p.stderr, said, f"{cmd}: the failure said once")
        cmtest.check_catalogued(said)
        with open(out) as f:
            eq(f.read(), "the last good report\n", f"{cmd}: FILE as it was")
        eq(sorted(n for n in os.listdir(d) if n.startswith(f".{cmd}.kept")), [], f"{cmd}: no temporary left")
        # unlimited: the new output replaces it, with its mode
        p = cmtest.cli(cmd, *opts, "-o", out, r.trace)
        eq(p.returncode, plain.returncode, f"{cmd}: status {p.stderr}")
        with open(out) as f:
            eq(f.read(), plain.stdout, f"{cmd}: FILE replaced")
        eq(oct(os.stat(out).st_mode & 0o777), "0o640", f"{cmd}: FILE's mode kept")
    cmtest.cleanup(r)


def test_output_template_and_quiet():
    r = cmtest.run([cmtest.program("leak_peak")], template="t-%p-%%.bin")
    pid_files = [os.path.basename(t) for t in r.traces]
    eq(len(pid_files), 1, "one trace")
    check(re.fullmatch(r"t-\d+-%\.bin", pid_files[0]), pid_files)
    eq(r.proc.stderr, f"cumemtrace: writing trace to {r.traces[0]}\n", "the path is printed once")
    q = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_QUIET": "1"})
    eq(q.proc.stderr, "", "quiet")
    eq(len(q.traces), 1, "quiet still traces")
    # An existing file is not overwritten.
    fixed = cmtest.run([cmtest.program("leak_peak")], template="fixed.bin")
    again = subprocess.run([cmtest.program("leak_peak")], capture_output=True, text=True,
                           env=cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(fixed.dir, "fixed.bin")}))
    eq(again.returncode, 0, "second run")
    eq(sorted(os.listdir(fixed.dir)), ["fixed.1.bin", "fixed.bin"], "a suffix instead of overwriting")
    eq(oct(os.stat(os.path.join(fixed.dir, "fixed.bin")).st_mode & 0o777), "0o600", "mode 0600")
    for x in (r, q, fixed):
        cmtest.cleanup(x)


def test_free_stacks_and_depth():
    r = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_STACK_DEPTH": "1"})
    rep = cmtest.report(r.trace)
    for s in rep["leaks"]["sites"]:
        eq(len(s["frames"]), 1, "one frame with CUMEMTRACE_STACK_DEPTH=1")
    # Depth 1 merges the two leak_per_iteration sites into one.
    eq([(cmtest.first_function(s), s["count"]) for s in rep["leaks"]["sites"]],
       [("keep_forever", 1), ("leak_per_iteration", 5)], "sites at depth 1")
    z = cmtest.run([cmtest.program("leak_peak")], env={"CUMEMTRACE_STACK_DEPTH": "0"})
    rep = cmtest.report(z.trace)
    eq([s["frames"] for s in rep["leaks"]["sites"]], [[]], "no stacks at depth 0: one site")
    eq(rep["leaks"]["count"], 6, "still every leak")
    cmtest.cleanup(r)
    cmtest.cleanup(z)


def test_run_command():
    tmp = cmtest.run(["true"], preload=False)
    out = os.path.join(tmp.dir, "run.%p.bin")
    p = subprocess.run([cmtest.CLI, "run", "-o", out, "--", cmtest.program("oom")], capture_output=True,
                       text=True, env=cmtest.sim_env({"SIMCUDA_CAPACITY": "64MiB"}, preload=False))
    eq(p.returncode, 0, f"run passes the program's status: {p.stderr}")
    eq(p.stdout, "hold_most=0 try_too_big=2 b=(nil) last=2\n", "run leaves stdout alone")
    traces = [f for f in os.listdir(tmp.dir) if f.startswith("run.")]
    eq(len(traces), 1, "run wrote one trace")
    # The program's own failure status and a death by signal pass through.
    p = subprocess.run([cmtest.CLI, "run", "-o", out, "--", "sh", "-c", "exit 7"], env=cmtest.sim_env(preload=False))
    eq(p.returncode, 7, "exit status passed through")
    p = subprocess.run([cmtest.CLI, "run", "-o", out, "--", cmtest.program("killed"), "3", "9"],
                       capture_output=True, env=cmtest.sim_env(preload=False))
    eq(p.returncode, -9, "killed by the same signal")
    p = subprocess.run([cmtest.CLI, "run", "--", "/nonexistent/program"], capture_output=True, text=True,
                       env=cmtest.sim_env(preload=False))
    eq(p.returncode, 127, "program not found")
    eq(p.stderr, "cumemtrace: run: cannot run /nonexistent/program: No such file or directory; check its name (PATH "
                 "is searched) and that it is executable\n", "the catalogued message (docs/messages.md)")
    cmtest.check_catalogued(p.stderr)
    p = subprocess.run([cmtest.CLI, "run"], capture_output=True, text=True, env=cmtest.sim_env(preload=False))
    eq(p.returncode, 2, "no program")
    # The shim goes first in LD_PRELOAD, after sanitizer runtimes only.
    asan = cmtest.PRELOAD_PREFIX or "/nonexistent/libasan.so.8"
    env = cmtest.sim_env({"LD_PRELOAD": f"{asan} /nonexistent/libother.so"}, preload=False)
    p = subprocess.run([cmtest.CLI, "run", "--", "sh", "-c", "echo \"$LD_PRELOAD\""], capture_output=True,
                       text=True, env=env)
    eq(p.stdout.strip(), f"{asan}:{cmtest.SHIM}:/nonexistent/libother.so", "LD_PRELOAD order")
    cmtest.cleanup(tmp)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
