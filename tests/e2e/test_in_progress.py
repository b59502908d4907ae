# SPDX-License-Identifier: MIT
"""End-to-end: a trace read while its process still writes it (issue 32)
reads as in progress, never as damaged: its figures up to what the writer
had committed, "still being written", its process not "did not exit
normally"; check says it is incomplete (status 2). A trace cut short
(truncated) states nothing as a leak: "live at the cut" (issue 33, item 5).
The writer is programs/live_writer.c: 3 x 1 MiB kept by keep_buffers, 2 MiB
allocated and freed, then threads allocating and freeing 4 KiB pairs,
a bounded number of them (40,000 each), paced so that the first reads overlap
the appending; it exits when a line comes on its stdin."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402


def start_writer(d, threads=2):
    env = cmtest.sim_env({"CUMEMTRACE_OUTPUT": os.path.join(d, "t.%p.bin"), "CUMEMTRACE_QUIET": "1"})
    argv = [cmtest.program("live_writer"), str(threads)]
    if cmtest.VALGRIND:
        argv = cmtest.VALGRIND_CMD + argv
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    eq(p.stdout.readline(), "ready\n", "the writer started")
    traces = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".bin")]
    eq(len(traces), 1, "one trace")
    return p, traces[0]


def keep_site(rep, section):
    """The rows of keep_buffers in a report's section."""
    return [s for s in rep[section]["sites"] if s["frames"] and s["frames"][0]["function"] == "keep_buffers"]


def test_read_while_written():
    d = tempfile.mkdtemp(prefix="cmt-live-")
    p, trace = start_writer(d)
    try:
        # Read several times while the threads keep appending: each read is
        # a snapshot of what was committed, never damage.
        for _ in range(3):
            q = cmtest.cli("report", "--json", "--no-symbols", trace)
            eq(q.returncode, 0, f"report while written: {q.stderr}")
            rep = json.loads(q.stdout)
            eq((rep["trace_state"], rep["in_progress"], rep["clean_exit"], rep["damage"], rep["leaks"]["basis"]),
               ("incomplete", True, False, None, "in_progress"), "in progress, not damaged")
            check(not any("damaged" in w or "truncated" in w or "did not exit normally" in w
                          for w in rep["warnings"]), rep["warnings"])
            check(any(w.startswith("the trace is still being written (process ") for w in rep["warnings"]),
                  rep["warnings"])
            check(rep["events"] >= 4 + 2 * 2 * 2000, f"the events committed so far: {rep['events']}")
        rep = cmtest.report(trace)
        rows = keep_site(rep, "leaks")
        eq([(s["bytes"], s["count"]) for s in rows], [(3 * MiB, 3)], "the kept buffers, live when read")
        q = cmtest.cli("report", trace)
        eq(q.returncode, 0, q.stderr)
        text = q.stdout
        check(re.search(r"^  recorded: .*, still being written \(the process is running\)$", text, re.M), text)
        check("\nLive when read (the process is still running: these are not leaks, not yet): " in text, text)
        for bad in ("copy it again", "damaged", "did not exit normally", "Leaks (live at exit)", "live at exit"):
            check(bad not in text, f"{bad!r} in:\n{text}")
        cmtest.check_catalogued(q.stderr)
        q = cmtest.cli("check", trace)
        eq(q.returncode, 2, f"check: incomplete: {q.stdout}")
        check(re.search(r"cumemtrace check: ERROR \S+ \(live_writer 2, pid \d+\): the process is still running: its "
                        r"trace is still being written, so it is incomplete; read up to what it had committed, leaks "
                        r"were not checked \(--check-incomplete checks what was live then\)", q.stdout), q.stdout)
        doc = json.loads(cmtest.cli("check", "--format", "json", trace).stdout)
        eq((doc["traces"][0]["trace_state"], doc["traces"][0]["in_progress"]), ("incomplete", True), "check json")
        for args in (["frag", trace], ["timeline", trace], ["export", "--format", "folded", trace]):
            q = cmtest.cli(*args)
            eq(q.returncode, 0, f"{args[0]} while written: {q.stderr}")
    finally:
        p.communicate("go\n", timeout=600)
    eq(p.returncode, 0, "the writer exited")
    # Finished: the same file reads complete, nothing live.
    rep = cmtest.report(trace, "--no-symbols")
    eq((rep["trace_state"], rep["in_progress"], rep["leaks"]["basis"], rep["leaks"]["count"]),
       ("complete", False, "exit", 0), "complete once the process exited")
    eq(cmtest.cli("check", trace).returncode, 0, "check passes once it exited")
    cmtest.cleanup(cmtest.Run(p, d))


def test_killed_is_not_in_progress():
    """A writer killed is no writer: its trace reads whole, as before."""
    d = tempfile.mkdtemp(prefix="cmt-live-")
    p, trace = start_writer(d, threads=1)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=600)
    rep = cmtest.report(trace, "--no-symbols")
    eq((rep["trace_state"], rep["in_progress"], rep["leaks"]["basis"]), ("incomplete", False, "recording_ended"),
       "killed")
    check(any("did not exit normally" in w for w in rep["warnings"]), rep["warnings"])
    cmtest.cleanup(cmtest.Run(p, d))


def test_truncated_states_no_leaks():
    """A trace cut short: what was live at the cut is no leak (it may have
    been freed after the cut), in text, JSON and check."""
    r = cmtest.run([cmtest.program("leak_peak")])
    eq(r.proc.returncode, 0, r.proc.stderr)
    data = open(r.trace, "rb").read()
    d = tempfile.mkdtemp(prefix="cmt-cut-")
    for name, size in (("half", len(data) // 2), ("most", len(data) - 200)):
        cut = os.path.join(d, name + ".bin")
        with open(cut, "wb") as f:
            f.write(data[:size])
        q = cmtest.cli("report", cut)
        eq(q.returncode, 2, f"{name}: report of a cut trace exits 2")
        text = q.stdout
        check("Leaks (live at exit)" not in text and "nothing was live at exit" not in text, text)
        # said once, at the top, with what it means for the leaks; referred to below (issue 33: five times)
        check(re.search(r"\n  trace:    TRUNCATED: the file ends at offset \d+ but its chunks reach offset \d+ "
                        r"\(\d+ bytes missing\); the figures below cover the events before the cut, and what is live "
                        r"at the cut is not a list of leaks \(it may have been released after it\)\n", text), text)
        check(re.search(r"\nLive at the cut(?: \(not leaks: see trace: above\): \S+ \S+ \(\d+ B\) in \d+ "
                        r"allocations?|: nothing \(see trace: above\))\n", text), text)
        eq((text.lower().count("truncated"), text.count("not a list of leaks")), (2, 1), f"{name}: said once: {text}")
        check("the trace ends at a cut" not in text and "file ends at offset" not in text[text.index("\n  program"):],
              text)
        q = cmtest.cli("report", "--json", cut)
        rep = json.loads(q.stdout)
        eq((rep["trace_state"], rep["leaks"]["basis"]), ("truncated", "cut"), f"{name}: json")
        q = cmtest.cli("check", cut)
        eq(q.returncode, 2, f"{name}: check")
        check("leaks were not checked" in q.stdout and "leaked" not in q.stdout, q.stdout)
    cmtest.cleanup(r)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
