# SPDX-License-Identifier: MIT
"""End-to-end: the job view from summaries (docs/report.md, "A job at
scale"). Each trace is summed up where it lies (`cumemtrace summarize`,
`run --summary`) and `report` on the summaries gives the comparison and the
job view it gives from the traces, field by field; damaged, cut, foreign,
newer and mismatched summaries are refused with the offset, the field and
what is wrong.

The jobs: rank_worker under `cumemtrace run --summary` started by
launch_ranks.py (tests/e2e/test_ranks.py says what each rank does), and a
simulated Slurm job of bench_gen_trace traces on three hosts, summarised by
a launcher stand-in running one `cumemtrace summarize` per host."""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402
from test_ranks import LAUNCH, SIM  # noqa: E402

GEN = os.environ["CMT_GEN_TRACE"]
HEADER = 24


def tmpdir():
    return cmtest.run(["true"], preload=False).dir


def launch_with_summary(style, n, *worker_args, tmp, extra_run=(), env=None):
    """The job under `cumemtrace run --summary`; returns the run's process."""
    extra = dict(SIM)
    extra.update(env or {})
    if cmtest.PRELOAD_PREFIX:
        extra["LAUNCH_CHILD_ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "")
    return subprocess.run([cmtest.CLI, "run", "--summary", *extra_run, "-o", os.path.join(tmp, "trace.%r.bin"), "--",
                           sys.executable, LAUNCH, style, str(n), cmtest.program("rank_worker"), *worker_args],
                          capture_output=True, text=True, env=cmtest.sim_env(extra, preload=False, foreign=True),
                          timeout=300)


def files(tmp, suffix):
    return sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(suffix))


def report_json(*args, status=0):
    p = cmtest.cli("report", "--json", *args)
    eq(p.returncode, status, f"report {args}: {p.stderr}")
    cmtest.check_catalogued(p.stderr)
    return json.loads(p.stdout), p.stderr


def same_view(from_traces, from_summaries, what):
    """The comparison and the job view, field by field."""
    eq(from_summaries["comparison"], from_traces["comparison"], f"{what}: the comparison")
    check(from_traces["jobs"], f"{what}: a job")
    eq(len(from_summaries["jobs"]), len(from_traces["jobs"]), f"{what}: the jobs")
    for jt, js in zip(from_traces["jobs"], from_summaries["jobs"]):
        eq(sorted(js), sorted(jt), f"{what}: the job's fields")
        for key in jt:
            if key == "ranks":
                for rt, rs in zip(jt["ranks"], js["ranks"]):
                    for k in rt:
                        eq(rs[k], rt[k], f"{what}: job {jt['job_id']} rank {rt['rank']} field {k}")
            eq(js[key], jt[key], f"{what}: job {jt['job_id']} field {key}")


def text_view(text):
    """The text from the comparison on, the one line that differs by
    design (where a failure is explained) made equal."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Comparison of "))
    return [l.replace("(its section above says why)", "(`cumemtrace report` on its trace says why)")
            for l in lines[start:]]


def test_run_summary_equals_traces():
    """torchrun's three ranks with memory on rank 0's GPU and a failure,
    under `run --summary`: a summary beside each trace, and the job view
    from them equal to the one from the traces in JSON and in text."""
    tmp = tmpdir()
    p = launch_with_summary("torchrun", 3, "stray", "fail", tmp=tmp)
    eq(p.returncode, 0, f"the job ran: {p.stderr}")
    cmtest.check_catalogued(p.stderr)
    traces, sums = files(tmp, ".bin"), files(tmp, ".cmtsum")
    eq([os.path.basename(s) for s in sums], ["trace.0.cmtsum", "trace.1.cmtsum", "trace.2.cmtsum"],
       "a summary beside each trace")
    t, _ = report_json(*traces)
    s, _ = report_json(*sums)
    same_view(t, s, "torchrun")
    eq([x["trace"] for x in s["summaries"]], traces, "each summary names its trace")
    eq(s["settings"], "", "made with the defaults")
    d, _ = report_json(tmp)
    same_view(t, d, "the directory")
    # in the order given, reversed: ordered by rank all the same
    r, _ = report_json(*reversed(sums))
    same_view(t, r, "given backwards")
    tt = cmtest.cli("report", "--chart-width", "40", *traces)
    ts = cmtest.cli("report", "--chart-width", "40", *sums)
    eq((tt.returncode, ts.returncode), (0, 0), f"text: {ts.stderr}")
    eq(text_view(ts.stdout), text_view(tt.stdout), "the text of the comparison and the job view")
    check(ts.stdout.startswith("Job view from 3 summaries (each trace summed up where it lies by `cumemtrace "
                               "summarize`; `cumemtrace report TRACE` gives a trace's full report)\n"), ts.stdout)
    check("  failed:   rank 2: 1 failed allocation, the first of 64.0 GiB (`cumemtrace report` on its trace says why)"
          in ts.stdout.splitlines(), ts.stdout)
    html = cmtest.cli("report", "--format", "html", *sums)
    eq(html.returncode, 0, f"html: {html.stderr}")
    model = html_model(html.stdout)
    eq(model["traces"], [], "html: no trace")
    eq(model["job_view"]["jobs"], t["jobs"], "html: the job view's model")
    eq(model["job_view"]["comparison"], t["comparison"], "html: the comparison's model")
    th = cmtest.cli("report", "--format", "html", *traces)
    eq(th.returncode, 0, f"html of the traces: {th.stderr}")
    tmodel = html_model(th.stdout)
    eq(len(tmodel["traces"]), 3, "html of the traces: every trace")
    eq(tmodel["job_view"]["jobs"], t["jobs"], "html of the traces: the same job view")
    check("summaries" not in tmodel["job_view"], "html of the traces: no summaries")
    # summarize on the same traces makes the same bytes
    again = os.path.join(tmp, "again")
    p = cmtest.cli("summarize", "--jobs", "2", "-o", again, *traces)
    eq(p.returncode, 0, f"summarize: {p.stderr}")
    for a, b in zip(sums, files(again, ".cmtsum")):
        eq(open(b, "rb").read(), open(a, "rb").read(), f"summarize and run --summary agree on {a}")
    cmtest.cleanup(cmtest.Run(None, tmp))


def html_model(page):
    start = page.index('<script id="cmt-model" type="application/json">') + len(
        '<script id="cmt-model" type="application/json">')
    return json.loads(page[start:page.index("</script>", start)])


def test_run_summary_with_check():
    """--summary with --check: the summaries are written before the check
    removes the traces of a run that passed; PROGRAM's failure passes
    through."""
    tmp = tmpdir()
    p = launch_with_summary("torchrun", 2, tmp=tmp, extra_run=["--check", "--no-default-suppressions"])
    check(p.returncode in (0, 1), f"the job ran: {p.stderr}")
    eq(len(files(tmp, ".cmtsum")), 2, "two summaries")
    s, _ = report_json(tmp)
    eq([r["rank"] for r in s["jobs"][0]["ranks"]], [0, 1], "both ranks")
    shutil.rmtree(tmp)
    tmp = tmpdir()
    p = subprocess.run([cmtest.CLI, "run", "--summary", "-o", os.path.join(tmp, "t.%p.bin"), "--",
                        "sh", "-c", '"$0" && exit 3', cmtest.program("leak_peak")], capture_output=True, text=True,
                       env=cmtest.sim_env(dict(SIM), preload=False, foreign=True))
    eq(p.returncode, 3, f"a failing program's status passes through: {p.stderr}")
    eq(len(files(tmp, ".cmtsum")), 1, "its trace summarised all the same")
    s, _ = report_json(files(tmp, ".cmtsum")[0])
    eq(s["comparison"]["processes"][0]["leak_bytes"], (64 + 5) * 1024 * 1024, "its leaks (leak_peak.c)")
    shutil.rmtree(tmp)


def simulated_job(tmp, ranks, per_host, events=3000):
    """bench_gen_trace's ranks of one Slurm job, each host's traces in a
    directory of its own (host%d), as each node keeps its own."""
    traces = []
    for r in range(ranks):
        d = os.path.join(tmp, f"host{r // per_host}")
        os.makedirs(d, exist_ok=True)
        t = os.path.join(d, f"trace.{r}.bin")
        subprocess.run([GEN, t, str(events), "--stacks", "64", "--threads", "2", "--rank", str(r), "--world",
                        str(ranks), "--ranks-per-host", str(per_host)], check=True, capture_output=True)
        traces.append(t)
    return traces


def test_simulated_job_equals_traces():
    """Twelve ranks on three hosts, one rank missing: a launcher stand-in
    runs one `cumemtrace summarize` per host (as `srun --ntasks-per-node=1`
    would), the summaries are gathered in one directory, and the job view
    from them equals the one from the traces."""
    tmp = tmpdir()
    traces = simulated_job(tmp, 12, 4)
    os.unlink(traces.pop(7))  # rank 7's node lost its trace
    gathered = os.path.join(tmp, "gathered")
    procs = [subprocess.Popen([cmtest.CLI, "summarize", "-o", gathered,
                               *[t for t in traces if os.path.dirname(t).endswith(f"host{h}")]],
                              stderr=subprocess.PIPE, text=True) for h in range(3)]
    for pr in procs:
        _, err = pr.communicate(timeout=300)
        eq(pr.returncode, 0, f"summarize: {err}")
    t, _ = report_json(*traces)
    s, _ = report_json(gathered)
    same_view(t, s, "simulated")
    job = s["jobs"][0]
    eq((job["job_id"], job["launcher"], job["world_size"], job["missing_ranks"]),
       ("slurm:9000.0", "slurm", 12, [7]), "the job")
    eq(job["hosts"], ["node0000", "node0001", "node0002"], "the hosts")
    eq([r["host"] for r in job["ranks"]], ["node0000"] * 4 + ["node0001"] * 3 + ["node0002"] * 4, "each rank's host")
    cmtest.cleanup(cmtest.Run(None, tmp))


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def refused(path, others, expected):
    """report on path among good summaries: exit 2, the message, the others
    still in the comparison and path as not read."""
    s, err = report_json(path, *others, status=2)
    eq(err.splitlines()[0], f"cumemtrace: report: {path}: {expected}", "the message")
    row = [r for r in s["comparison"]["processes"] if r["trace"] == path]
    eq(len(row), 1, f"{path} in the comparison: {s['comparison']}")
    eq(row[0]["error"], f"summary not read: {expected}", "its row")
    eq(len(s["jobs"][0]["ranks"]), len(others), "the others make the job")


def test_damaged_summaries():
    tmp = tmpdir()
    traces = simulated_job(tmp, 3, 4, events=500)
    out = os.path.join(tmp, "s")
    p = cmtest.cli("summarize", "-o", out, *traces)
    eq(p.returncode, 0, p.stderr)
    good = files(out, ".cmtsum")
    data = open(good[0], "rb").read()
    body = struct.unpack_from("<Q", data, 16)[0]
    eq(len(data), HEADER + body + 8, "header, body, checksum")
    eq(data[:8], b"CMTSUMRY", "magic")
    eq(struct.unpack_from("<HHI", data, 8), (1, 0, HEADER), "version 1.0, header size")
    eq(struct.unpack_from("<Q", data, HEADER + body)[0], fnv1a(data[HEADER:HEADER + body]), "FNV-1a of the body")
    bad = os.path.join(tmp, "bad.cmtsum")
    others = good[1:]

    def write(b):
        with open(bad, "wb") as f:
            f.write(b)

    made_by_len = struct.unpack_from("<I", data, HEADER)[0]
    cases = [
        (data[:-4], f"offset 16, field header.body_size: {body} bytes of body and 8 of checksum, but the file has "
                    f"{body + 4} after its header: the file is cut"),
        (data[:12], "offset 12, field header.header_size: the summary ends there (4 bytes needed, 0 left): the file "
                    "is cut"),
        (data[:8] + struct.pack("<HH", 2, 0) + data[12:],
         "a summary of format 2.0; this cumemtrace reads 1.x: summarise the trace with this cumemtrace, or read the "
         "summary with the version that wrote it"),
        (data[:HEADER] + struct.pack("<I", 5000) + data[HEADER + 4:],
         "offset 24, field made_by: a string of 5000 bytes where at most 31 fit"),
        (data + b"\0", "offset %d, field end: 1 bytes after the summary's end" % len(data)),
        (data[:16] + struct.pack("<Q", 1 << 30) + data[24:],
         f"offset 16, field header.body_size: {1 << 30} bytes: a summary is a few KiB"),
    ]
    # a figure changed: the checksum no longer holds
    pid_at = HEADER + 4 + made_by_len + 4 + 8 + 4  # made_by, settings "", order_rank, damage ""
    trace_len = struct.unpack_from("<I", data, pid_at)[0]
    at = pid_at + 4 + trace_len + 1 + 4 + 1 + 8  # trace, analysed, error "", complete, rank: the pid
    changed = bytearray(data)
    changed[at] ^= 1
    cases.append((bytes(changed), "offset %d, field checksum: 0x%016x where the body (offsets 24 to %d) sums to "
                  "0x%016x: the file changed after it was written"
                  % (HEADER + body, fnv1a(data[HEADER:HEADER + body]), HEADER + body,
                     fnv1a(bytes(changed[HEADER:HEADER + body])))))
    # more devices than a summary holds (the checksum made right: the field is checked first)
    host_len = struct.unpack_from("<I", data, at + 8)[0]
    prog_at = at + 8 + 4 + host_len
    devices_at = prog_at + 4 + struct.unpack_from("<I", data, prog_at)[0]
    eq(struct.unpack_from("<I", data, devices_at)[0], 1, "one device")
    many = bytearray(data)
    struct.pack_into("<I", many, devices_at, 17)
    struct.pack_into("<Q", many, HEADER + body, fnv1a(bytes(many[HEADER:HEADER + body])))
    cases.append((bytes(many), f"offset {devices_at}, field process.devices: 17 is over its limit of 16"))
    for content, expected in cases:
        write(content)
        refused(bad, others, expected)
    shutil.rmtree(tmp)


def test_mismatched_summaries():
    tmp = tmpdir()
    traces = simulated_job(tmp, 3, 4, events=500)
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    eq(cmtest.cli("summarize", "-o", a, *traces[:2]).returncode, 0, "summaries")
    p = cmtest.cli("summarize", "--include-cached", "-o", b, traces[2])
    eq(p.returncode, 0, p.stderr)
    sb = b  # -o of one trace: the summary's file
    p = cmtest.cli("report", a, sb)
    eq(p.returncode, 2, "different settings refused")
    eq(p.stdout, "", "nothing reported")
    eq(p.stderr, f"cumemtrace: report: {a}/trace.0.cmtsum was summarised with the defaults, {sb} with '--include-cached': their "
                 "figures do not compare; summarise every trace of the job with the same options\n", "the message")
    cmtest.check_catalogued(p.stderr)
    s, _ = report_json(sb)
    eq(s["settings"], "--include-cached", "the settings said")
    # one form whatever the spelling: --at 2ms and --at 2000us agree
    c, d = os.path.join(tmp, "c.cmtsum"), os.path.join(tmp, "d.cmtsum")
    eq(cmtest.cli("summarize", "--at", "2ms", "-o", c, traces[0]).returncode, 0, "--at 2ms")
    eq(cmtest.cli("summarize", "--at", "2000us", "--max-memory", "1GiB", "-o", d, traces[1]).returncode, 0,
       "--at 2000us")
    s, _ = report_json(c, d)
    eq(s["settings"], "--at 2000000ns", "the settings in one form (--max-memory shapes no figure)")
    # a trace among summaries
    p = cmtest.cli("report", a, traces[2])
    eq((p.returncode, p.stdout), (2, ""), "a trace among summaries")
    eq(p.stderr, f"cumemtrace: report: {traces[2]} is not a summary, and {a} is: give traces or summaries, not both "
                 "(summarise the traces with `cumemtrace summarize`)\n", "the message")
    # options that shape figures belong to summarize
    p = cmtest.cli("report", "--at", "1ms", a)
    eq(p.returncode, 2, "--at with summaries")
    eq(p.stderr, "cumemtrace: report: --at 1000000ns shapes figures that the summaries already hold: give it to "
                 "`cumemtrace summarize` where the traces lie\n", "the message (the options in one form)")
    p = cmtest.cli("summarize", "--format", "json", traces[0])
    eq(p.returncode, 2, "--format to summarize")
    eq(p.stderr, "cumemtrace: summarize: unknown option '--format'\ntry `cumemtrace summarize --help`\n",
       "--format is report's")
    # the memory budget: one member per summary, refused up front
    p = cmtest.cli("report", "--max-memory", "16KiB", a)
    eq(p.returncode, 2, "over the budget")
    check(p.stderr.startswith("cumemtrace: report: 2 summaries need ") and
          p.stderr.endswith(", over the memory budget of 16.0 KiB (--max-memory): give fewer at a time, or a larger "
                            "--max-memory\n"), p.stderr)
    cmtest.check_catalogued(p.stderr)
    s, _ = report_json("--max-memory", "1GiB", a)
    eq(len(s["jobs"][0]["ranks"]), 2, "--max-memory is report's own with summaries")
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    p = cmtest.cli("report", empty)
    eq(p.returncode, 2, "a directory without summaries")
    eq(p.stderr, f"cumemtrace: report: {empty} holds no summary (*.cmtsum): make them with `cumemtrace summarize`, "
                 "or give traces\n", "the message")
    for line in (p.stderr,):
        cmtest.check_catalogued(line)
    p = cmtest.cli("summarize", os.path.join(a, "trace.0.cmtsum"))
    eq(p.returncode, 2, "a summary summarised")
    cmtest.check_catalogued(p.stderr)
    shutil.rmtree(tmp)


def test_bad_traces_summarised():
    """A trace that cannot be read still gets a summary that says so; a cut
    trace's summary holds the figures before the cut and says where; report
    exits 2 on both, naming the trace, as it does from the traces."""
    tmp = tmpdir()
    traces = simulated_job(tmp, 3, 4, events=2000)
    junk = os.path.join(tmp, "host0", "trace.9.bin")
    with open(junk, "wb") as f:
        f.write(b"not a trace at all, just words\n")
    size = os.path.getsize(traces[1])
    with open(traces[1], "r+b") as f:
        f.truncate(size * 2 // 3)
    out = os.path.join(tmp, "s")
    p = cmtest.cli("summarize", "-o", out, *traces, junk)
    eq(p.returncode, 2, "summarize: exit 2")
    cmtest.check_catalogued(p.stderr)
    eq(len(files(out, ".cmtsum")), 4, "a summary for each, the unreadable one too")
    t, terr = report_json(*traces, junk, status=2)
    s, serr = report_json(out, status=2)
    same_view(t, s, "with a cut trace and junk")
    junk_row = [r for r in s["comparison"]["processes"] if r["trace"] == junk][0]
    check(junk_row["error"], f"the junk's error: {junk_row}")
    check(any(l.startswith(f"cumemtrace: report: {junk} (summary {out}/trace.9.cmtsum): ") for l in serr.splitlines()),
          serr)
    check(any(l.startswith(f"cumemtrace: report: {traces[1]} (summary {out}/trace.1.cmtsum): ") and
              l.endswith("; its figures cover the events before it") for l in serr.splitlines()), serr)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
