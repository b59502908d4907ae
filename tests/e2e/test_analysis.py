# SPDX-License-Identifier: MIT
"""End-to-end: the analyses of `cumemtrace report` and `timeline` on traces
of programs run under the shim on the simulated device: growth against
allocated-once, several ranks compared, symbols of a binary moved after the
run, the view at a given time. Figures follow from the programs' sources."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

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


def functions(sites):
    return [cmtest.first_function(s) for s in sites]


# Per-iteration pause of the growth program: the leak loop must take most of
# the run (exit takes far longer under valgrind; a long flat tail after the
# last leak is, by definition, not growth through the run).
GROWTH_SLEEP_US = "20000" if cmtest.VALGRIND else "2000"


def check_growth_report(rep, iterations):
    # Leaks: the model once, the cache and the leak repeatedly.
    leaks = rep["leaks"]
    eq([(cmtest.first_function(s), s["bytes"], s["count"], s["pattern"], s["site_allocations"], s["site_frees"],
         s["growing"]) for s in leaks["sites"]],
       [("load_model", 64 * MiB, 1, "once", 1, 0, False),
        ("leak_one", iterations * MiB, iterations, "repeated", iterations, 0, True),
        ("warm_cache", 20 * MiB, 10, "repeated", 10, 0, False)], "leak sites")
    eq(leaks["once"], {"bytes": 64 * MiB, "count": 1}, "allocated once")
    eq(leaks["repeated"], {"bytes": (iterations + 20) * MiB, "count": iterations + 10}, "allocated repeatedly")
    # Growth: only the leak; the warm-up cache rose early and stopped, the
    # model never moved, the scratch buffer comes and goes.
    growth = rep["growth"]
    cands = growth["candidates"]
    eq(functions(cands), ["leak_one"], "growth candidates")
    g = cands[0]
    eq((g["allocations"], g["frees"], g["live_bytes"], g["live_count"], g["last_sample_bytes"]),
       (iterations, 0, iterations * MiB, iterations, iterations * MiB), "growth candidate figures")
    check(g["trend"] >= 0.6, f"trend {g['trend']}")
    check(g["samples"] >= 8, f"samples {g['samples']}")
    # The rate: iterations MiB over the time the leak took, within a factor
    # of two either way (the schedule is the program's, not ours).
    span_s = (rep["duration_ns"] - g["first_time_ns"]) / 1e9
    expected = iterations * MiB / span_s
    check(expected / 2 < g["rate_bytes_per_second"] < expected * 2,
          f"rate {g['rate_bytes_per_second']} vs about {expected}")
    d0 = cmtest.device(rep, 0)
    peak = (64 + 20 + iterations + 8) * MiB
    eq(d0["peak_bytes"], peak, "peak: model, cache, every leak, scratch")
    # The peak's call tree: main, then the three sites that hold memory.
    nodes = d0["peak_call_tree"]["nodes"]
    eq(nodes[0]["inclusive_bytes"], peak, "tree root")
    eq(nodes[1]["function"], "main", "outermost frame")
    eq(nodes[1]["inclusive_bytes"], peak, "main holds everything")
    kids = sorted((n["function"], n["inclusive_bytes"], n["self_bytes"]) for n in nodes if n["parent"] == 1)
    eq(kids, sorted([("load_model", 64 * MiB, 64 * MiB), ("warm_cache", 20 * MiB, 20 * MiB),
                     ("leak_one", iterations * MiB, iterations * MiB), ("scratch", 8 * MiB, 8 * MiB)]),
       "children of main at the peak")


def test_growth():
    iterations = 60
    r = cmtest.run([cmtest.program("growth"), str(iterations), GROWTH_SLEEP_US])
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    rep = cmtest.report(r.trace)
    check_growth_report(rep, iterations)
    text = cmtest.cli("report", r.trace).stdout
    check("Growing call sites (live bytes kept rising through the run): 1\n" in text, text)
    check("allocated once (the call site allocated a single time" in text, text)
    cmtest.cleanup(r)


def test_growth_killed():
    # A job that never exits cleanly: the growth is found all the same.
    iterations = 40
    r = cmtest.run([cmtest.program("growth"), str(iterations), GROWTH_SLEEP_US, "kill"])
    eq(r.proc.returncode, -9, "killed")
    rep = cmtest.report(r.trace)
    eq(rep["clean_exit"], False, "not a clean exit")
    check_growth_report(rep, iterations)
    cmtest.cleanup(r)


def test_ranks():
    # Three ranks of one job, each with its own rank variable, one trace each
    # through the %r template; rank r runs 10 (r + 1) iterations.
    tmp = cmtest.run(["true"], preload=False)
    variables = ["RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"]
    for rank, var in enumerate(variables):
        env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(tmp.dir, "rank%r.bin"), var: rank})
        for other in variables + ["PMI_RANK"]:
            if other != var:
                env.pop(other, None)
        p = subprocess.run([cmtest.program("growth"), str(10 * (rank + 1)), "0"], env=env, capture_output=True,
                           text=True)
        eq(p.returncode, 0, f"rank {rank}: {p.stderr}")
    names = sorted(os.listdir(tmp.dir))
    eq(names, ["rank0.bin", "rank1.bin", "rank2.bin"], "one trace per rank, named by %r")
    paths = [os.path.join(tmp.dir, n) for n in ["rank2.bin", "rank0.bin", "rank1.bin"]]
    p = cmtest.cli("report", "--json", *paths)
    eq(p.returncode, 0, p.stderr)
    rep = json.loads(p.stdout)
    eq([(q["process"]["rank"], os.path.basename(q["trace"])) for q in rep["processes"]],
       [(0, "rank0.bin"), (1, "rank1.bin"), (2, "rank2.bin")], "per-process sections, by rank")
    peaks = [(64 + 20 + 10 * (r + 1) + 8) * MiB for r in range(3)]
    leaks = [(64 + 20 + 10 * (r + 1)) * MiB for r in range(3)]
    for r, q in enumerate(rep["processes"]):
        eq(cmtest.device(q, 0)["peak_bytes"], peaks[r], f"rank {r} peak")
        eq(q["leaks"]["bytes"], leaks[r], f"rank {r} leaks")
    cmp = rep["comparison"]
    eq([(c["rank"], c["peak_bytes"], [d["ordinal"] for d in c["devices"]], c["leak_bytes"], c["failed_count"],
         c["complete"]) for c in cmp["processes"]],
       [(r, peaks[r], [0], leaks[r], 0, True) for r in range(3)], "comparison rows")
    im = cmp["imbalance"]
    eq((im["peak_max_bytes"], im["peak_max_process"]["rank"], im["peak_min_bytes"], im["peak_min_process"]["rank"],
        im["peak_mean_bytes"]), (peaks[2], 2, peaks[0], 0, sum(peaks) // 3), "imbalance")
    check(abs(im["peak_max_over_mean"] - peaks[2] / (sum(peaks) / 3)) < 1e-4, im)
    eq((im["leak_max_bytes"], im["leak_max_process"]["rank"]), (leaks[2], 2), "most leaked")
    text = cmtest.cli("report", *paths)
    eq(text.returncode, 0, text.stderr)
    sections = [line for line in text.stdout.splitlines() if line.startswith("===== ")]
    eq(sections, [f"===== rank {r}: {os.path.join(tmp.dir, f'rank{r}.bin')} =====" for r in range(3)], "sections")
    check("Comparison of 3 processes" in text.stdout, text.stdout)
    check("peak imbalance: highest 122.0 MiB by rank 2, lowest 102.0 MiB by rank 0, mean 112.0 MiB; "
          "highest/mean 1.09" in text.stdout, text.stdout)
    # A file that is not a trace among them: the others are reported, status 2.
    bogus = os.path.join(tmp.dir, "bogus.bin")
    with open(bogus, "w") as f:
        f.write("not a trace\n")
    p = cmtest.cli("report", "--json", paths[1], bogus)
    eq(p.returncode, 2, "status with an unreadable trace")
    rep = json.loads(p.stdout)
    eq([q.get("error") for q in rep["processes"]],
       [None, "not a cumemtrace trace (no CUMEMTRC magic at the start): give a file the profiler wrote"], "the bad one is named")
    eq([c["analysed"] for c in rep["comparison"]["processes"]], [True, False], "comparison marks it")
    cmtest.cleanup(tmp)


def frames_of(rep, function):
    for s in rep["leaks"]["sites"]:
        if s["frames"] and s["frames"][0]["function"] == function:
            return s["frames"]
    raise cmtest.Failure(f"no leak site {function}: {[s['frames'][:1] for s in rep['leaks']['sites']]}")


def test_symbols_moved():
    # The binary runs from one directory, then moves away (and loses its
    # debug info to a separate file): --debuginfo-path and --sysroot find it
    # again by build-id.
    tmp = cmtest.run(["true"], preload=False)
    run_dir = os.path.join(tmp.dir, "run")
    os.makedirs(run_dir)
    exe = os.path.join(run_dir, "leak_peak")
    shutil.copy2(cmtest.program("leak_peak"), exe)
    r = cmtest.run([exe])
    eq(r.proc.returncode, 0, r.proc.stderr)
    line = line_of("leak_peak.c", "cudaMalloc(&p, 64 * MiB)")
    # In place: file:line.
    rep = cmtest.report(r.trace)
    eq((frames_of(rep, "keep_forever")[0]["line"], os.path.basename(frames_of(rep, "keep_forever")[0]["file"])),
       (line, "leak_peak.c"), "symbolized in place")
    # --fold hides more frames: the call site is then named by main.
    rep = cmtest.report(r.trace, "--fold", "keep_*")
    eq([(cmtest.first_function(s), s["bytes"]) for s in rep["leaks"]["sites"]][0], ("main", 64 * MiB),
       "keep_forever folded away")
    # --full-stacks keeps the C library's entry frames (the shim records
    # from its hook's caller on, so the runtime has no frames here).
    rep = cmtest.report(r.trace, "--full-stacks")
    full = [f["function"] or "" for f in frames_of(rep, "keep_forever")]
    eq(full[:2], ["keep_forever", "main"], "full stack starts as the folded one")
    check(any(fn.startswith("__libc_start") for fn in full[2:]), f"libc entry frames kept: {full}")
    eq([f["function"] for f in frames_of(cmtest.report(r.trace), "keep_forever")], ["keep_forever", "main"],
       "folded by default")
    # Moved: module+offset only, with a warning that says so.
    moved = os.path.join(tmp.dir, "moved")
    os.makedirs(moved)
    shutil.move(exe, os.path.join(moved, "leak_peak"))
    rep = cmtest.report(r.trace)
    check(all(not s["frames"] or s["frames"][0]["function"] is None for s in rep["leaks"]["sites"]),
          "no names without the binary")
    check(any(w.startswith(f"module {exe}: file not found") for w in rep["warnings"]), rep["warnings"])
    # --debuginfo-path DIR: the file is found by its name, checked by build-id.
    rep = cmtest.report(r.trace, "--debuginfo-path", moved)
    f = frames_of(rep, "keep_forever")
    eq((f[0]["function"], f[0]["line"], f[1]["function"]), ("keep_forever", line, "main"), "found again")
    eq([w for w in rep["warnings"] if "leak_peak" in w], [], "no warning about the program")
    # Stripped binary with its DWARF in a separate .debug file beside it.
    objcopy = shutil.which("objcopy")
    if objcopy:
        stripped = os.path.join(tmp.dir, "stripped")
        os.makedirs(stripped)
        target = os.path.join(stripped, "leak_peak")
        subprocess.run([objcopy, "--only-keep-debug", os.path.join(moved, "leak_peak"), target + ".debug"],
                       check=True)
        subprocess.run([objcopy, "--strip-all", os.path.join(moved, "leak_peak"), target], check=True)
        rep = cmtest.report(r.trace, "--debuginfo-path", stripped)
        f = frames_of(rep, "keep_forever")
        eq((f[0]["function"], f[0]["line"]), ("keep_forever", line), "DWARF from the .debug file")
    # --sysroot: the recorded absolute path under another root.
    sysroot = os.path.join(tmp.dir, "sysroot")
    os.makedirs(sysroot + run_dir)
    shutil.copy2(os.path.join(moved, "leak_peak"), sysroot + exe)
    rep = cmtest.report(r.trace, "--sysroot", sysroot)
    eq(frames_of(rep, "keep_forever")[0]["line"], line, "found under the sysroot")
    # A different binary in its place (another build-id) is not used.
    other = os.path.join(tmp.dir, "other")
    os.makedirs(other)
    shutil.copy2(cmtest.program("oom"), os.path.join(other, "leak_peak"))
    rep = cmtest.report(r.trace, "--debuginfo-path", other)
    check(any("build-id" in w for w in rep["warnings"]), rep["warnings"])
    check(all(not s["frames"] or s["frames"][0]["function"] != "keep_forever" for s in rep["leaks"]["sites"]),
          "a binary with another build-id is not trusted")
    cmtest.cleanup(r)
    cmtest.cleanup(tmp)


def test_at_time():
    # leak_peak: the peak phase holds 3 x 16 MiB. Stop the replay while it
    # does (after its third allocation, before its first release) and after.
    r = cmtest.run([cmtest.program("leak_peak")])
    full = cmtest.report(r.trace)
    d0 = cmtest.device(full, 0)
    peak_ns = d0["peak_time_ns"]
    rep = cmtest.report(r.trace, "--at", f"{peak_ns}ns")
    eq(rep["at_time_ns"], peak_ns, "at_time_ns")
    at = cmtest.device(rep, 0)["at"]
    eq((at["live_bytes"], at["live_allocations"]), (115 * MiB, 7), "live at the peak instant")
    eq([(cmtest.first_function(s), s["bytes"]) for s in at["top_sites"]],
       [("keep_forever", 64 * MiB), ("peak_phase", 48 * MiB), ("leak_per_iteration", 3 * MiB)], "sites then")
    eq((rep["leaks"]["bytes"], rep["leaks"]["count"]), (115 * MiB, 7), "live then, by site")
    # One ns before the peak: the third 16 MiB buffer is not there yet.
    rep = cmtest.report(r.trace, "--at", f"{peak_ns - 1}ns")
    at = cmtest.device(rep, 0)["at"]
    eq(at["live_bytes"], 99 * MiB, "live just before the peak")
    eq(cmtest.device(rep, 0)["peak_bytes"], 99 * MiB, "the peak so far")
    # Past the end: no instant inside the trace, so the whole run, with a
    # warning (not "live at 1000 s").
    rep = cmtest.report(r.trace, "--at", "1000s")
    check("at" not in cmtest.device(rep, 0), "no --at view past the end")
    eq(cmtest.device(rep, 0)["live_at_exit_bytes"], 69 * MiB, "at the end")
    check(any(w.startswith("--at 1000.000 s is after the end of the trace (") and
              w.endswith("): the report covers the whole run") for w in rep["warnings"]), rep["warnings"])
    p = cmtest.cli("report", "--at", "soon", r.trace)
    eq(p.returncode, 2, "bad --at")
    check("--at needs a time" in p.stderr, p.stderr)
    cmtest.cleanup(r)


def test_timeline_command():
    r = cmtest.run([cmtest.program("kinds")])
    eq(r.proc.returncode, 0, r.proc.stderr)
    full = cmtest.report(r.trace)
    p = cmtest.cli("timeline", "--json", r.trace)
    eq(p.returncode, 0, p.stderr)
    tl = json.loads(p.stdout)
    series = {(s["device"], s["kind"]): s for s in tl["series"]}
    eq(sorted(series), sorted([(0, "total"), (0, "device"), (0, "async-pool"), (0, "managed"),
                               (-1, "total"), (-1, "pinned-host")]), "series kept apart")
    d0 = cmtest.device(full, 0)
    eq(series[(0, "total")]["peak_bytes"], d0["peak_bytes"], "total peak = the report's device peak")
    eq(series[(0, "total")]["peak_time_ns"], d0["peak_time_ns"], "same instant")
    eq(series[(0, "async-pool")]["peak_bytes"], 8 * MiB, "pool peak")
    eq(series[(0, "managed")]["peak_bytes"], 4 * MiB, "managed peak")
    eq(series[(-1, "pinned-host")]["peak_bytes"], 3 * MiB, "pinned peak")
    eq(series[(-1, "pinned-host")]["live_at_end_bytes"], 1 * MiB, "pinned at the end")
    for s in tl["series"]:
        eq(max(s["max"]), s["peak_bytes"], f"bucket maxima reach the peak of {s['kind']}")
        eq(s["max"][s["peak_bucket"]], s["peak_bytes"], f"the peak's bucket of {s['kind']}")
        check(all(lo <= last <= hi for lo, last, hi in zip(s["min"], s["last"], s["max"])), "min <= last <= max")
    eq(sum(b["allocs"] + b["frees"] + b["failures"] for b in tl["buckets"]), full["events"], "every event counted")
    csv = cmtest.cli("timeline", "--csv", "--buckets", "5", r.trace)
    eq(csv.returncode, 0, csv.stderr)
    rows = csv.stdout.splitlines()
    check(rows[0].startswith("start_ns,end_ns,events,allocs,frees,failures,dev0.total.min,dev0.total.max,"), rows[0])
    check(2 <= len(rows) - 1 <= 5, f"{len(rows) - 1} buckets")
    peak_rows = [row for row in rows[1:] if "dev0.total" in row.split(",")[-1]]
    eq(len(peak_rows), 1, "one bucket marks the total's peak")
    cmtest.cleanup(r)


def test_live_at_exit_listed_once():
    """Every allocation live at exit lands in one list, leaks, held by a
    cache or set aside, and the lists are sized by the same rule that fills
    them. The generator's pinned buffers come from a libc10_cuda.so stack:
    PyTorch's device cache by their stack, but pinned host memory is not in
    it, so they are leaks; a count made by the stack alone overran the
    leaks' list (heap overrun under ASan and valgrind)."""
    d = tempfile.mkdtemp(prefix="cmt-e2e-")
    try:
        trace = os.path.join(d, "gen.bin")
        p = subprocess.run([os.environ["CMT_GEN_TRACE"], trace, "20000"], capture_output=True, text=True)
        eq(p.returncode, 0, p.stderr)
        rep = cmtest.report(trace, "--no-symbols")
        csv = cmtest.cli("timeline", "--csv", trace)
        eq(csv.returncode, 0, csv.stderr)
        header, last = csv.stdout.splitlines()[0].split(","), csv.stdout.splitlines()[-1].split(",")
        live_at_end = int(last[header.index("dev0.total.last")]) + int(last[header.index("host.total.last")])
    finally:
        shutil.rmtree(d)
    leaks = rep["leaks"]
    held = {h["holder"]: h for h in rep["held_at_exit"]}
    suppressed = leaks["suppressed"]["bytes"]
    eq(leaks["bytes"] + sum(h["bytes"] for h in held.values()) + suppressed, live_at_end, "every live byte once")
    eq(sum(s["bytes"] for s in leaks["sites"]), leaks["bytes"], "the leaks' rows add up")
    for name, h in held.items():
        eq(sum(s["bytes"] for s in h["sites"]), h["bytes"], f"{name}'s rows add up")
    eq(sorted(held), ["PyTorch", "PyTorch's host cache"], "holders")
    check(all(s["kind"] != "pinned-host" for s in held["PyTorch"]["sites"]), "no pinned buffer in the device cache")
    check(leaks["by_kind"]["pinned-host"] > 0, "pinned buffers of the device cache's stacks are leaks")


def test_diff_across_checkouts():
    """The same source built in two directories (two checkouts, two CI
    workspaces): diff matches each call site across them by function, file
    name and line, the rule check --baseline uses, so nothing reads as "gone
    from NEW" and "new in NEW" (issue 33 item 2)."""
    d = tempfile.mkdtemp(prefix="cmt-e2e-")
    try:
        traces = []
        for name in ("one", "two"):
            src = os.path.join(d, name, "src")
            os.makedirs(src)
            shutil.copy2(os.path.join(SRC, "leak_peak.c"), src)
            exe = os.path.join(d, name, "leak_peak")
            p = subprocess.run(["cc", "-g", "-O0", "-fno-omit-frame-pointer", "-I", os.environ["CMT_CUDA_INCLUDE"],
                                "-o", exe, os.path.join(src, "leak_peak.c"), "-L", cmtest.SIM_DIR, "-l:libcudart.so.13",
                                f"-Wl,-rpath,{cmtest.SIM_DIR}"], capture_output=True, text=True, cwd=src)
            eq(p.returncode, 0, p.stderr)
            r = cmtest.run([exe])
            eq(r.proc.returncode, 0, r.proc.stderr)
            traces.append(r.trace)
        diff = json.loads(cmtest.cli("diff", "--json", "--top", "0", *traces).stdout)
        # leak_peak's five call sites, each matched with itself: none changed.
        eq((diff["sites_total"], diff["sites"]), (5, []), "sites")
        text = cmtest.cli("diff", *traces).stdout
        check("gone from NEW" not in text and "new in NEW" not in text, text)
        eq(cmtest.cli("check", "--baseline", traces[0], traces[1]).returncode, 0, "check --baseline agrees")
    finally:
        shutil.rmtree(d)


def test_comparison_columns():
    """The comparison of several traces keeps its columns under their
    headings whatever the length of a process's name (issue 33 item 9):
    "leak_peak (pid 12345)" is longer than the 16 characters the column had."""
    runs = [cmtest.run([cmtest.program("leak_peak")]) for _ in range(2)]
    for r in runs:
        eq(r.proc.returncode, 0, r.proc.stderr)
    text = cmtest.cli("report", "--chart-width", "0", *[r.trace for r in runs]).stdout
    table = text[text.index("Comparison of 2 processes\n"):].splitlines()[1:4]
    head = table[0]
    for col in ("peak", "live at end", "events"):
        end = head.index(" " + col + " " if col != "events" else " events") + len(col) + 1
        for row in table[1:]:
            check(row[end - 1] != " " and (end == len(row) or row[end] == " "), f"{col!r} column: {table}")
    end = head.index(" peak ") + len(" peak")
    eq([row[end - len("115.0 MiB"):end] for row in table[1:]], ["115.0 MiB"] * 2, f"the peaks under 'peak': {table}")
    for r in runs:
        cmtest.cleanup(r)


def test_usage_heuristics():
    """The usage views know their case or stay quiet (issue 33 item 6),
    on tests/e2e/programs/usage_cases.c: two buffers of one loop with the
    same lifetimes are short-lived alike (19 of 20 each: the last is never
    judged); stream-ordered allocations are never short-lived, and their
    calls are not said to synchronize the device; four threads each of one
    fixed size are no size churn; a buffer made once and released at
    teardown is not short-lived."""
    def case(name):
        r = cmtest.run([cmtest.program("usage_cases"), name])
        eq(r.proc.returncode, 0, r.proc.stderr)
        rep = cmtest.report(r.trace)
        text = cmtest.cli("report", "--chart-width", "0", r.trace).stdout
        cmtest.cleanup(r)
        return rep, text

    rep, text = case("pair")
    eq(sorted((cmtest.first_function(s), s["calls"], s["short_lived"], s["short_lived_bytes"])
              for s in rep["allocation_calls"]["sites"]),
       [("alloc_a", 20, 19, 19 * MiB), ("alloc_b", 20, 19, 19 * MiB)], "a loop's two buffers alike")
    rep, text = case("async")
    eq((rep["allocation_calls"]["calls"], rep["allocation_calls"]["short_lived"]), (20, 0), "async: a pool serves them")
    check("\nMost allocation calls (stream-ordered: their pool serves them without synchronizing the device): 20 calls "
          "at 1 call site" in text and "Short-lived" not in text and "synchronize the device" not in text, text)
    rep, text = case("threads")
    eq(rep["churn"], [], "four fixed sizes are no churn")
    check("Size churn" not in text and "round sizes" not in text, text)
    rep, text = case("teardown")
    eq((rep["allocation_calls"]["calls"], rep["allocation_calls"]["short_lived"]), (1, 0), "teardown")
    check("Short-lived" not in text, text)


def test_leaks_listed_up_to_top():
    """The leaks' groups list --top call sites each, then what the others
    add up to (issue 33 item 7: a 10-million-event trace's report had a
    leaks section of 21,000 lines); the JSON lists every one."""
    r = cmtest.run([cmtest.program("leak_peak")])
    eq(r.proc.returncode, 0, r.proc.stderr)
    text = cmtest.cli("report", "--chart-width", "0", "--top", "1", r.trace).stdout
    check("\n    ... 1 more call site: 2.0 MiB (2097152 B) in 2 allocations (--top N lists more; the JSON and check list "
          "every one)\n\nGrowing call sites" in text, text)
    eq(text.count("(device, cudaMalloc)"), 2, "one row per group")
    eq(len(cmtest.report(r.trace, "--top", "1")["leaks"]["sites"]), 3, "the JSON: every site")
    cmtest.cleanup(r)


def test_top_zero_lists_every_row():
    """--top 0 means every row in every command (it meant none in report
    and frag, all in diff)."""
    r = cmtest.run([cmtest.program("leak_peak")])
    eq(r.proc.returncode, 0, r.proc.stderr)
    d = tempfile.mkdtemp(prefix="cmt_top_")
    try:
        other = os.path.join(d, "xla.bin")
        p = subprocess.run([cmtest.program("gen_xla_trace"), other], capture_output=True, text=True)
        eq(p.returncode, 0, p.stderr)
        for args in (["report", "--chart-width", "0", r.trace], ["frag", other], ["diff", r.trace, other]):
            every = cmtest.cli(*args[:1], "--top", "1000000", *args[1:])
            eq(every.returncode, 0, every.stderr)
            eq(cmtest.cli(*args[:1], "--top", "0", *args[1:]).stdout, every.stdout, f"{args[0]} --top 0: every row")
            check(cmtest.cli(*args[:1], "--top", "1", *args[1:]).stdout != every.stdout, f"{args[0]}: rows to cut")
        text = cmtest.cli("report", "--chart-width", "0", "--top", "0", r.trace).stdout
        # leak_peak's three leaking sites, each listed, no "... more" line
        eq(text.count("(device, cudaMalloc)"), 3, text)
        check("more call site" not in text, text)
    finally:
        shutil.rmtree(d)
        cmtest.cleanup(r)


def test_output_file_replaced_whole():
    """-o FILE is written to a temporary renamed over FILE at the end: a
    trace that cannot be read leaves FILE as it was (export created it
    empty before reading), a new FILE is not created, a good run replaces
    it with FILE's mode, a device is written in place."""
    d = tempfile.mkdtemp(prefix="cmt_out_")
    try:
        trace = os.path.join(d, "xla.bin")
        p = subprocess.run([cmtest.program("gen_xla_trace"), trace], capture_output=True, text=True)
        eq(p.returncode, 0, p.stderr)
        bad = os.path.join(d, "bad.bin")
        with open(bad, "wb") as f:
            f.write(b"not a trace at all, but long enough to be read as one" * 4)
        out, fresh = os.path.join(d, "out.txt"), os.path.join(d, "fresh.txt")
        with open(out, "w") as f:
            f.write("before\n")
        os.chmod(out, 0o640)
        for cmd in (["export", "--format", "folded"], ["report"], ["frag"], ["timeline"]):
            for target in (out, fresh):
                p = cmtest.cli(*cmd, "-o", target, bad)
                eq(p.returncode, 2, f"{cmd} of a bad trace: {p.stderr}")
                cmtest.check_catalogued(p.stderr)
        with open(out) as f:
            eq(f.read(), "before\n", "FILE as it was")
        eq(sorted(os.listdir(d)), ["bad.bin", "out.txt", "xla.bin"], "no file made, no temporary left")
        p = cmtest.cli("export", "--format", "folded", "-o", out, trace)
        eq(p.returncode, 0, p.stderr)
        folded = cmtest.cli("export", "--format", "folded", trace).stdout
        check(folded.startswith("device 0;train train.py:"), folded)
        with open(out) as f:
            eq(f.read(), folded, "replaced by the export")
        eq(os.stat(out).st_mode & 0o777, 0o640, "FILE's mode kept")
        eq(sorted(os.listdir(d)), ["bad.bin", "out.txt", "xla.bin"], "no temporary left")
        p = cmtest.cli("export", "--format", "folded", "-o", "/dev/stdout", trace)
        eq((p.returncode, p.stdout), (0, folded), "a device written in place")
    finally:
        shutil.rmtree(d)


def test_short_options_one_meaning():
    """-j is --json in every command that has it; summarize's jobs are
    --jobs N only, and summarize -j says so."""
    d = tempfile.mkdtemp(prefix="cmt_short_")
    try:
        trace = os.path.join(d, "xla.bin")
        p = subprocess.run([cmtest.program("gen_xla_trace"), trace], capture_output=True, text=True)
        eq(p.returncode, 0, p.stderr)
        for cmd in ("report", "frag", "timeline", "whatif"):
            p = cmtest.cli(cmd, "-j", trace)
            eq(p.returncode, 0, f"{cmd} -j: {p.stderr}")
            json.loads(p.stdout)
        p = cmtest.cli("summarize", "-j", "2", trace)
        eq((p.returncode, p.stdout, p.stderr),
           (2, "", "cumemtrace: summarize: -j is not --jobs: give the number of traces summarised at once as --jobs N "
                   "(-j means --json in the other commands)\ntry `cumemtrace summarize --help`\n"),
           "summarize -j")
        cmtest.check_catalogued(p.stderr)
        eq(os.listdir(d), ["xla.bin"], "nothing summarised")
        p = cmtest.cli("summarize", "--jobs", "1", trace)
        eq(p.returncode, 0, p.stderr)
        eq(sorted(os.listdir(d)), ["xla.bin", "xla.cmtsum"], "summarised with --jobs")
        check(" -j" not in cmtest.cli("summarize", "--help").stdout, "summarize --help: no -j")
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
