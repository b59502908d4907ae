# SPDX-License-Identifier: MIT
"""End-to-end: `cumemtrace top` and `run --live` (issue 29, docs/top.md).

The program is programs/top_schedule.c: 4 MiB kept by keep_model, then per
step i: cumemtrace_step(i), phase "forward" opened, 1 MiB kept by
leak_activation, 8 MiB allocated and freed by scratch, "step i" printed,
and a line awaited on stdin before the phase closes. When "step i" is
printed: live (4 + i) MiB in 1 + i allocations, peak (12 + i) MiB, step i,
phase forward, growth 1 MiB per step from step 2; the top site by live
bytes is keep_model up to step 4, leak_activation from step 5.

The live view runs in tmux (a pane of 160 x 48); each check waits until
the screen shows what is expected (a refresh is asynchronous) and fails
with the screen when it never does."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

WAIT_S = 120 if cmtest.VALGRIND else 60
_sessions = 0


class Screen:
    """A command in a tmux pane of its own server (-L), kept after it exits
    with its status shown as "[exit N]"."""

    def __init__(self, argv, env, width=160, height=48):
        global _sessions
        if not shutil.which("tmux"):
            print("skipped: no tmux (scripts/setup.sh installs it)")
            sys.exit(77)
        _sessions += 1
        self.sock = f"cmt-top-{os.getpid()}-{_sessions}"
        self.env = dict(env)
        self.env.pop("TMUX", None)
        self.env["TERM"] = "xterm-256color"
        cmd = " ".join(shlex.quote(a) for a in argv) + '; echo "[exit $?]"; sleep 600'
        subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", "new-session", "-d", "-x", str(width), "-y",
                        str(height), "sh", "-c", cmd], env=self.env, check=True)

    def text(self, escapes=False):
        args = ["tmux", "-L", self.sock, "capture-pane", "-p"] + (["-e"] if escapes else [])
        return subprocess.run(args, env=self.env, stdout=subprocess.PIPE, text=True, check=True).stdout

    def wait_for(self, pred, what):
        deadline = time.monotonic() + WAIT_S
        while True:
            t = self.text()
            if pred(t):
                return t
            if time.monotonic() > deadline:
                raise cmtest.Failure(f"the screen never showed {what}:\n{t}")
            time.sleep(0.1)

    def wait_text(self, *needles):
        return self.wait_for(lambda t: all(n in t for n in needles), " and ".join(repr(n) for n in needles))

    def wait_row(self, row, *needles):
        """Waits for a whole frame: the needles and a first row under the
        view's header that matches the regular expression row. A capture
        can fall in the middle of a redraw (the header already new, the row
        still the last view's, as happened under valgrind), so a frame is
        judged only once it is all there; a figure that never shows fails
        with the last screen."""
        return self.wait_for(lambda t: all(n in t for n in needles) and re.match(row, first_row(t)),
                             " and ".join([repr(n) for n in needles] + [f"a first row matching {row!r}"]))

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.sock, "send-keys", *keys], env=self.env, check=True)

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], env=self.env, stderr=subprocess.DEVNULL)


def first_row(screen):
    """The first row under the view's header (CALL SITE, THREAD or PHASE)."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"(CALL SITE|THREAD|PHASE) \(by ", line):
            return lines[i + 1] if i + 1 < len(lines) else ""
    return ""


def top_argv(*args):
    argv = [cmtest.CLI, "top", *args]
    return cmtest.VALGRIND_CMD + argv if cmtest.VALGRIND else argv


class Program:
    """top_schedule under the shim, advanced step by step."""

    def __init__(self, d, steps, env=None):
        extra = {"CUMEMTRACE_OUTPUT": os.path.join(d, "t.%p.bin"), "CUMEMTRACE_QUIET": "1"}
        extra.update(env or {})
        # natively, also in the valgrind setup: that setup checks the
        # viewer (top_argv), and a program under valgrind has its threads
        # renamed and its steps seconds apart
        argv = [cmtest.program("top_schedule"), str(steps)]
        self.p = subprocess.Popen(argv, env=cmtest.sim_env(extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.step = 0

    def expect(self, line):
        eq(self.p.stdout.readline(), line + "\n", "the program's schedule")

    def next(self):
        """Lets the program go on to its next step (or to its end)."""
        if self.step:
            self.p.stdin.write("go\n")
            self.p.stdin.flush()
        self.step += 1
        self.expect(f"step {self.step}")

    def finish(self):
        self.p.stdin.write("go\n" * 64)
        self.p.stdin.close()
        self.p.stdout.read()
        eq(self.p.wait(timeout=WAIT_S), 0, "the program exited")

    def kill(self):
        self.p.kill()
        self.p.wait(timeout=WAIT_S)


def once(*args):
    q = cmtest.cli("top", "--once", *args)
    eq(q.returncode, 0, f"top --once: {q.stderr}")
    cmtest.check_catalogued(q.stderr)
    return q.stdout


def once_json(*args):
    return json.loads(once("--format", "json", *args))


def site_name(row):
    return row["site"].split(" ")[0]


def check_step(doc, i, state="running", phase="forward"):
    eq(len(doc["processes"]), 1, "one process")
    p = doc["processes"][0]
    eq((p["state"], p["step"], p["phase"]), (state, i, phase), "state, step, phase")
    eq(len(p["devices"]), 1, "one device")
    dev = p["devices"][0]
    eq((dev["device"], dev["live_bytes"], dev["live_count"], dev["peak_bytes"]),
       (0, (4 + i) * MiB, 1 + i, (12 + i) * MiB), f"step {i}: live, count, peak")
    eq(dev["holders"], {"pytorch_reserve": 0, "cublas": 0, "nccl": 0, "other": (4 + i) * MiB}, "holders")
    eq((dev["reserve_from"], dev["pytorch_tensors"], dev["failed"], dev["last_failed"]),
       ("stacks", None, 0, None), "no PyTorch, no failure")
    eq(dev["growth_per_step"], MiB if i >= 2 else None, "growth per step")
    return p, dev


def test_once_json_exact():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    prog = Program(d, 6)
    try:
        prog.next()
        prog.next()  # step 2
        doc = once_json(d)
        p, dev = check_step(doc, 2)
        eq(p["command"], "top_schedule 6", "command")
        check(p["pid"] == prog.p.pid and p["rank"] is None and p["how"] is None, p)
        sites = [(site_name(s), s["live_bytes"], s["count"], s["bytes_at_peak"], s["growth_per_step"])
                 for s in dev["sites"]]
        eq(sites, [("keep_model", 4 * MiB, 1, 4 * MiB, 0), ("leak_activation", 2 * MiB, 2, 2 * MiB, MiB),
                   ("scratch", 0, 0, 8 * MiB, 0)], "sites by live at step 2")
        by_count = [site_name(s) for s in once_json("--sort", "count", d)["processes"][0]["devices"][0]["sites"]]
        eq(by_count, ["leak_activation", "keep_model", "scratch"], "sites by count")
        by_peak = [site_name(s) for s in once_json("--sort", "peak", d)["processes"][0]["devices"][0]["sites"]]
        eq(by_peak, ["scratch", "keep_model", "leak_activation"], "sites by bytes at the peak")
        by_growth = [site_name(s) for s in once_json("--sort", "growth", d)["processes"][0]["devices"][0]["sites"]]
        eq(by_growth[0], "leak_activation", "sites by growth")
        eq(len(once_json("--sites", "1", d)["processes"][0]["devices"][0]["sites"]), 1, "--sites 1")
        for _ in range(3):
            prog.next()  # step 5
        trace = doc["processes"][0]["trace"]
        p, dev = check_step(once_json(trace), 5)
        eq([(site_name(s), s["live_bytes"], s["growth_per_step"]) for s in dev["sites"][:2]],
           [("leak_activation", 5 * MiB, MiB), ("keep_model", 4 * MiB, 0)], "leak_activation on top at step 5")
        text = once(d)
        check(text.startswith("cumemtrace top: 1 process, 1 running\n"), text)
        check(f"pid {prog.p.pid} (top_schedule 6): running\n" in text, text)
        check(", step 5, phase forward\n" in text, text)
        check("  device 0: live 9.0 MiB (9437184 B) in 6 allocations, peak 17.0 MiB (17825792 B) at " in text, text)
        check("    holders: PyTorch reserve 0 B, cuBLAS 0 B, NCCL 0 B, other 9.0 MiB\n" in text, text)
        check("    growth: +1.0 MiB per step\n" in text, text)
        check(re.search(r"\n\s+5\.0 MiB\s+5\s+5\.0 MiB\s+\+1\.0 MiB  leak_activation at \S+top_schedule\.c:\d+\n",
                        text), text)
        prog.finish()
        p, dev = check_step(once_json(d), 6, state="exited", phase=None)
        eq(p["how"], "wrote its end record at exit (its status is not recorded)", "how it ended")
    finally:
        if prog.p.poll() is None:
            prog.kill()


def test_live_screen_and_keys():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    prog = Program(d, 6)
    s = None
    try:
        prog.next()
        prog.next()  # step 2
        s = Screen(top_argv("--interval", "0.2", d), cmtest.sim_env(preload=False))
        t = s.wait_row(r"\s*4\.0 MiB.*keep_model at ", "device 0: live 6.0 MiB (6291456 B) in 3, peak 14.0 MiB at ",
                       ", step 2, phase forward", "holders: PyTorch reserve 0 B, cuBLAS 0 B, NCCL 0 B, other 6.0 MiB")
        check(re.search(rf"> -\s+{prog.p.pid}\s+running\s+0\s+6\.0 MiB\s+14\.0 MiB\s+2 forward\s+\+1\.0 MiB\s+0  "
                        r"top_schedule 6", t), t)
        for _ in range(3):
            prog.next()  # step 5
        t = s.wait_text("device 0: live 9.0 MiB (9437184 B) in 6, peak 17.0 MiB at ", ", step 5, phase forward")
        s.wait_for(lambda x: "leak_activation at " in first_row(x), "leak_activation on top")
        # keys: sort
        s.keys("p")
        s.wait_row(r".*8\.0 MiB.*scratch at ", "CALL SITE (by peak)", "sort: peak")
        s.keys("c")
        s.wait_row(r".*leak_activation at ", "CALL SITE (by count)")
        s.keys("g")
        s.wait_row(r".*\+1\.0 MiB.*leak_activation at ", "CALL SITE (by growth)")
        s.keys("s")
        s.wait_text("CALL SITE (by live)")
        # views
        s.keys("v")
        s.wait_row(rf"9\.0 MiB\s+6\s+{prog.p.pid}\s+top_schedule", "THREAD (by live)", "view: threads")
        s.keys("v")
        s.wait_row(r"17\.0 MiB\s+9\.0 MiB\s+\+1\.0 MiB\s+5\s+forward \(open\)", "PHASE (by live)", "view: phases")
        s.keys("1")
        s.wait_text("CALL SITE (by live)", "view: sites")
        # pause: the figures stay while the program goes on
        s.keys("Space")
        s.wait_text("[paused]")
        prog.next()  # step 6
        time.sleep(1.0)
        t = s.text()
        check(", step 5, phase forward" in t and "[paused]" in t, t)
        s.keys("Space")
        s.wait_text(", step 6, phase forward", "device 0: live 10.0 MiB (10485760 B) in 7")
        prog.finish()
        s.wait_text("(top_schedule 6): exited: wrote its end record at exit", "0 running", "phase -")
        s.keys("q")
        s.wait_text("[exit 0]")
    finally:
        if s:
            s.close()
        if prog.p.poll() is None:
            prog.kill()


def test_killed():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    prog = Program(d, 6)
    s = None
    try:
        prog.next()
        prog.next()  # step 2
        s = Screen(top_argv("--interval", "0.2", d), cmtest.sim_env(preload=False))
        s.wait_text(", step 2, phase forward", " running ")
        prog.kill()
        s.wait_text(f"pid {prog.p.pid} (top_schedule 6): killed: ended without an end record: killed or crashed",
                    "device 0: live 6.0 MiB (6291456 B) in 3, peak 14.0 MiB at ")
        doc = once_json(d)
        p, dev = check_step(doc, 2, state="killed")
        eq(p["how"], "ended without an end record: killed or crashed", "how")
        s.keys("q")
        s.wait_text("[exit 0]")
    finally:
        if s:
            s.close()
        if prog.p.poll() is None:
            prog.kill()


def test_ranks_dir():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    progs = []
    s = None
    try:
        out = {"CUMEMTRACE_OUTPUT": os.path.join(d, "t.%r.bin")}
        progs.append(Program(d, 4, dict(out, RANK="0")))
        progs[0].next()
        s = Screen(top_argv("--interval", "0.2", d), cmtest.sim_env(preload=False))
        s.wait_text("1 process, 1 running")
        # rank 1 starts late: the directory is watched
        progs.append(Program(d, 4, dict(out, RANK="1")))
        progs[1].next()
        progs[1].next()
        # rank 1's row comes when its trace is found, its figures at the
        # next poll after that: wait for both (under valgrind the poll is
        # seconds behind the row), then they must be exactly these
        def both_ranks(t):
            rows = [line for line in t.splitlines() if re.match(r"[> ] [01]\s+\d+\s+running", line)]
            return "2 processes, 2 running" in t and len(rows) == 2 and \
                re.match(r"> 0\s+\d+\s+running\s+0\s+5\.0 MiB\s+13\.0 MiB\s+1 forward", rows[0]) and \
                re.match(r"  1\s+\d+\s+running\s+0\s+6\.0 MiB\s+14\.0 MiB\s+2 forward", rows[1])
        s.wait_for(both_ranks, "a row per rank: rank 0 at step 1 (live 5.0 MiB, peak 13.0 MiB), rank 1 at step 2 "
                   "(live 6.0 MiB, peak 14.0 MiB)")
        s.keys("Tab")
        s.wait_text(f"pid {progs[1].p.pid} (top_schedule 4): running", ", step 2, phase forward")
        s.keys("Up")
        s.wait_text(f"pid {progs[0].p.pid} (top_schedule 4): running", ", step 1, phase forward")
        doc = once_json(d)
        eq([(p["rank"], p["pid"], p["step"], p["devices"][0]["live_bytes"]) for p in doc["processes"]],
           [(0, progs[0].p.pid, 1, 5 * MiB), (1, progs[1].p.pid, 2, 6 * MiB)], "both ranks, in rank order")
        progs[0].finish()
        progs[1].kill()
        s.wait_for(lambda t: "2 processes, 0 running" in t and re.search(r"  1\s+\d+\s+killed ", t),
                   "'2 processes, 0 running' and rank 1 killed")
        s.keys("q")
        s.wait_text("[exit 0]")
    finally:
        if s:
            s.close()
        for p in progs:
            if p.p.poll() is None:
                p.kill()


def test_run_live():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    out = os.path.join(d, "program.out")
    argv = [cmtest.CLI, "run", "-o", os.path.join(d, "t.%p.bin"), "--live", "--live-output", out, "--interval", "0.2",
            "--", cmtest.program("top_schedule"), "2"]
    if cmtest.VALGRIND:
        argv = cmtest.VALGRIND_CMD + argv
    env = cmtest.sim_env(preload=False)
    s = Screen(argv, env)
    try:
        # stdin is /dev/null: the program runs through its two steps and exits
        s.wait_row(r".*keep_model at ", "(top_schedule 2): exited: exited with status 0",
                   "device 0: live 6.0 MiB (6291456 B) in 3, peak 14.0 MiB at ", ", step 2, phase -",
                   f"program output (in {out}): done")
        s.keys("q")
        t = s.wait_text("[exit 0]")
        check(f"cumemtrace run: top_schedule exited with status 0; its output is in {out}\n[exit 0]" in t, t)
        with open(out) as f:
            eq(f.read(), "step 1\nstep 2\ndone\n", "the program's output, whole, in its file")
        traces = [f for f in os.listdir(d) if f.endswith(".bin")]
        eq(len(traces), 1, "the usual trace is left behind")
    finally:
        s.close()


def test_no_color():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    prog = Program(d, 3)
    screens = []
    try:
        prog.next()
        colored = re.compile(r"\x1b\[[0-9;]*(3[0-7]|38;5;\d+)m")
        for no_color in (None, "1"):
            s = Screen(top_argv("--interval", "0.2", d), cmtest.sim_env({"NO_COLOR": no_color}, preload=False))
            screens.append(s)
            s.wait_text(", step 1, phase forward")
            t = s.text(escapes=True)
            if no_color:
                check(not colored.search(t), f"colours under NO_COLOR: {t!r}")
                check("\x1b[7m" in t, "reverse video stays")
            else:
                check(colored.search(t), f"no colours: {t!r}")
            s.keys("q")
            s.wait_text("[exit 0]")
        s = Screen(top_argv("--no-color", "--interval", "0.2", d), cmtest.sim_env(preload=False))
        screens.append(s)
        s.wait_text(", step 1, phase forward")
        check(not colored.search(s.text(escapes=True)), "--no-color")
        s.keys("q")
        prog.finish()
    finally:
        for s in screens:
            s.close()
        if prog.p.poll() is None:
            prog.kill()


def test_holders_and_failures():
    """Complete traces: who holds the memory by the frames of its stacks
    (programs/torch_train.c through the PyTorch and cuBLAS doubles: at exit
    the 20 and 8 MiB segments of PyTorch's cache, 2 MiB of cuBLAS, the
    program's 1 MiB leak; the peak 71 MiB), and a failed allocation
    (programs/oom.c: 48 MiB held, 32 MiB refused on a 64 MiB device)."""
    r = cmtest.run([cmtest.program("torch_train")])
    eq(r.proc.returncode, 0, f"torch_train: {r.proc.stderr}")
    p = once_json(r.trace)["processes"][0]
    eq((p["state"], p["step"], p["phase"]), ("exited", None, None), "torch_train ended")
    dev = p["devices"][0]
    eq((dev["live_bytes"], dev["peak_bytes"]), (31 * MiB, 71 * MiB), "live at exit, peak")
    eq(dev["holders"], {"pytorch_reserve": 28 * MiB, "cublas": 2 * MiB, "nccl": 0, "other": MiB}, "holders")
    eq((dev["reserve_from"], dev["pytorch_tensors"], dev["failed"]), ("stacks", None, 0), "by frames, no failure")
    text = once(r.trace)
    check("    holders: PyTorch reserve 28.0 MiB, cuBLAS 2.0 MiB, NCCL 0 B, other 1.0 MiB\n" in text, text)
    cmtest.cleanup(r)

    r = cmtest.run([cmtest.program("oom")], env={"SIMCUDA_CAPACITY": "64MiB"})
    eq(r.proc.returncode, 0, "oom exit status")
    dev = once_json(r.trace)["processes"][0]["devices"][0]
    eq((dev["live_bytes"], dev["peak_bytes"], dev["failed"]), (0, 48 * MiB, 1), "live, peak, failed")
    eq(dev["last_failed"]["size"], 32 * MiB, "the failed request")
    check(dev["last_failed"]["site"].startswith("try_too_big at "), dev["last_failed"])
    text = once(r.trace)
    check("    failed allocations: 1, the last of 32.0 MiB at try_too_big at " in text, text)
    cmtest.cleanup(r)


def test_usage():
    d = tempfile.mkdtemp(prefix="cmt-top-")
    cases = [
        (["top", "--format", "json", d], "cumemtrace: top: --format json is for --once: the live view is a screen"),
        (["top", "--once", "--interval", "0", d], "cumemtrace: top: --interval takes seconds from 0.1 to 60, got '0'"),
        (["top", "--once", "--sort", "size", d],
         "cumemtrace: top: --sort is one of live, peak, count, growth; got 'size'"),
        (["top", "--once", os.path.join(d, "none.bin")],
         f"cumemtrace: top: {d}/none.bin: cannot read it: No such file or directory; give a trace file or a "
         "directory of traces"),
        (["top", d], "cumemtrace: top: the live view needs a terminal: run it in one, or give --once for one "
                     "snapshot"),
        (["run", "--live", "--", "true"], "cumemtrace: run: --live needs a terminal for its view: run it in one, or "
                                          "without --live and watch the traces with `cumemtrace top --once`"),
        (["run", "--live-output", "x", "--", "true"], "cumemtrace: run: --live-output is an option of --live: add "
                                                       "--live"),
    ]
    for args, msg in cases:
        q = cmtest.cli(*args)
        eq(q.returncode, 2, f"{args}: status")
        eq(q.stderr.splitlines()[0], msg, f"{args}: message")
        cmtest.check_catalogued(q.stderr)
    with open(os.path.join(d, "junk.bin"), "wb") as f:
        f.write(b"not a trace at all" * 10)
    q = cmtest.cli("top", "--once", os.path.join(d, "junk.bin"))
    eq(q.returncode, 2, "not a trace")
    cmtest.check_catalogued(q.stderr)
    # an empty directory: nothing running, status 0
    e = tempfile.mkdtemp(prefix="cmt-top-empty-")
    eq(json.loads(once("--format", "json", e)), {"sort": "live", "processes": []}, "an empty directory")


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
