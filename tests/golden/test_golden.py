# SPDX-License-Identifier: MIT
"""Golden tests: the CLI's text and JSON output on deterministic traces,
compared byte for byte with tests/golden/expected/*.

The traces come from gen_golden (fixed times, pids, addresses; synthetic
frames name functions and lines), and the CLI runs in the directory holding
them with relative paths, so nothing in the output depends on the machine or
the run: no normalization is needed.

usage: test_golden.py CLI GEN_GOLDEN EXPECTED_DIR [CASE...] [--regenerate]
  --regenerate  write the current output as the expected output instead of
                comparing (review the diff with git before committing)
"""
import difflib
import os
import shutil
import subprocess
import sys
import tempfile

# name: (arguments after the CLI, expected exit status)
CASES = {
    "report.txt": (["report", "mixed.bin"], 0),
    "report.json": (["report", "--json", "mixed.bin"], 0),
    "report_at.txt": (["report", "--at", "1.005s", "mixed.bin"], 0),
    "report_at.json": (["report", "--json", "--at", "1005ms", "mixed.bin"], 0),
    "report_full.txt": (["report", "--full-stacks", "--tree-min-percent", "5", "--chart-width", "0", "--top", "3",
                         "--max-frames", "1", "mixed.bin"], 0),
    # two rows of one site frame whose stacks part beyond the frames shown: the note says where
    "report_twins.txt": (["report", "--chart-width", "0", "--max-frames", "3", "--top", "3", "mixed.bin"], 0),
    "timeline.txt": (["timeline", "--chart-width", "40", "--chart-height", "5", "mixed.bin"], 0),
    "timeline.csv": (["timeline", "--csv", "--buckets", "16", "mixed.bin"], 0),
    "timeline.json": (["timeline", "--json", "--buckets", "8", "mixed.bin"], 0),
    "ranks.txt": (["report", "--chart-height", "3", "rank2.bin", "rank0.bin", "rank1.bin"], 0),
    "ranks.json": (["report", "--json", "rank1.bin", "rank0.bin", "rank2.bin"], 0),
    "frag.txt": (["frag", "frag.bin"], 0),
    "frag.json": (["frag", "--json", "--top", "3", "frag.bin"], 0),
    "report_frag.txt": (["report", "--chart-width", "0", "--top", "3", "frag.bin"], 0),
    "small.txt": (["report", "small.bin"], 0),
    "small.json": (["report", "--json", "small.bin"], 0),
    "small_frag.txt": (["frag", "--top", "3", "small.bin"], 0),
    "small_at_past_end.txt": (["report", "--chart-width", "0", "--at", "100s", "small.bin"], 0),
    "diff.txt": (["diff", "old.bin", "new.bin"], 0),
    "diff.json": (["diff", "--json", "old.bin", "new.bin"], 0),
    "diff_other.txt": (["diff", "--top", "2", "old.bin", "other.bin"], 0),
    "check_other_baseline.txt": (["check", "--baseline", "old.bin", "other.bin"], 0),
    # two baselines, only the second of another program: the note names it
    "check_second_baseline_other.txt": (["check", "--baseline", "new.bin", "--baseline", "other.bin", "old.bin"], 0),
    "report_two_programs.txt": (["report", "--chart-width", "0", "--top", "1", "old.bin", "other.bin"], 0),
    # The trace on the standard input ("-"), where a command takes one trace.
    "timeline_stdin.csv": (["timeline", "--format", "csv", "--buckets", "16", "-"], 0, "mixed.bin"),
    "frag_stdin.txt": (["frag", "-"], 0, "frag.bin"),
    "export_folded_stdin.txt": (["export", "--format", "folded", "-"], 0, "mixed.bin"),
    "help_report.txt": (["help", "report"], 0),
    "help_whatif.txt": (["help", "whatif"], 0),
    # no block layer and no PyTorch without its cache: what-if says what it needs
    "whatif_none.txt": (["whatif", "mixed.bin"], 0),
    # Option errors (.err: stderr is compared, stdout must be empty): the
    # option named, not its value; getopt's complaints in our words; one line
    # saying where the help is instead of the whole usage.
    "err_report_count.err": (["report", "--top", "-1", "mixed.bin"], 2),
    "err_timeline_count.err": (["timeline", "--buckets", "0", "mixed.bin"], 2),
    "err_report_unknown.err": (["report", "--bogus", "mixed.bin"], 2),
    "err_timeline_no_value.err": (["timeline", "mixed.bin", "--buckets"], 2),
    "err_timeline_contradict.err": (["timeline", "--csv", "--json", "mixed.bin"], 2),
    "err_report_contradict.err": (["report", "--json", "--format", "text", "mixed.bin"], 2),
    "err_frag_format.err": (["frag", "--format", "html", "frag.bin"], 2),
    "err_frag_no_trace.err": (["frag"], 2),
    "err_frag_two_traces.err": (["frag", "frag.bin", "mixed.bin"], 2),
    "err_report_stdin_of_many.err": (["report", "-", "mixed.bin"], 2),
    "err_export_stdin_twice.err": (["export", "--format", "perfetto", "-", "-"], 2),
    "err_check_unknown.err": (["check", "--frobnicate", "mixed.bin"], 2),
    "err_no_command.err": ([], 2),
    "err_unknown_command.err": (["bogus"], 2),
    "err_help_unknown.err": (["help", "bogus"], 2),
    "err_whatif_set.err": (["whatif", "--set", "max_split_size_mb:10", "mixed.bin"], 2),
    "err_whatif_no_trace.err": (["whatif"], 2),
}

# The trace on the standard input where the output is too large for a golden
# file: it must be the output of the file itself, its name written "-".
# (arguments with "-", the file on stdin, the name the file's output writes)
SAME_AS_FILE = {
    "export_perfetto_stdin": (["export", "--format", "perfetto", "-"], "small.bin", '"tiles (small.bin)"'),
    "export_perfetto_stdin_among": (["export", "--format", "perfetto", "mixed.bin", "-"], "small.bin",
                                    '"tiles (small.bin)"'),
}

# Cases run again with the trace decoded in a second thread: the output must
# not change. frag.bin's samples and pool records travel to the replaying
# thread in batches of their own layout (two entries each), so these cover
# records cut by a batch's end.
TWO_THREADS = ["report.json", "frag.txt", "frag.json"]


def main():
    args = [a for a in sys.argv[1:] if a != "--regenerate"]
    regenerate = "--regenerate" in sys.argv[1:]
    cli, gen, expected_dir = (os.path.abspath(a) for a in args[:3])
    names = args[3:] or sorted(CASES)
    work = tempfile.mkdtemp(prefix="cmt-golden-")
    failed = []
    try:
        subprocess.run([gen, work], check=True)
        env = dict(os.environ, DEBUGINFOD_URLS="", CUMEMTRACE_ANALYZER_THREADS="1")
        for name in names:
            argv, status, *stdin_file = CASES[name]
            stdin = open(os.path.join(work, stdin_file[0]), "rb") if stdin_file else subprocess.DEVNULL
            p = subprocess.run([cli, *argv], cwd=work, env=env, capture_output=True, text=True, stdin=stdin)
            if stdin_file:
                stdin.close()
            if name.endswith(".err"):
                if p.stdout:
                    failed.append(name)
                    print(f"FAIL {name}: wrote on stdout: {p.stdout[:200]!r}")
                    continue
                p.stdout = p.stderr
            path = os.path.join(expected_dir, name)
            if p.returncode != status:
                failed.append(name)
                print(f"FAIL {name}: exit status {p.returncode}, expected {status}\n{p.stderr}")
                continue
            if regenerate:
                with open(path, "w") as f:
                    f.write(p.stdout)
                print(f"wrote {path}")
                continue
            with open(path) as f:
                want = f.read()
            if p.stdout != want:
                failed.append(name)
                diff = difflib.unified_diff(want.splitlines(True), p.stdout.splitlines(True),
                                            f"expected/{name}", f"actual/{name}")
                sys.stdout.writelines(diff)
                print(f"FAIL {name} (regenerate with: meson compile -C BUILD regen-goldens)")
            else:
                print(f"ok {name}")
            if name in TWO_THREADS and not regenerate:
                q = subprocess.run([cli, *argv], cwd=work, env=dict(env, CUMEMTRACE_ANALYZER_THREADS="2"),
                                   capture_output=True, text=True)
                if q.returncode != status or q.stdout != p.stdout:
                    failed.append(name + " (two threads)")
                    diff = difflib.unified_diff(p.stdout.splitlines(True), q.stdout.splitlines(True),
                                                f"one-thread/{name}", f"two-threads/{name}")
                    sys.stdout.writelines(diff)
                    print(f"FAIL {name}: two threads give another output (exit status {q.returncode})")
                else:
                    print(f"ok {name} (two threads)")
        for name, (argv, stdin_file, spelled) in SAME_AS_FILE.items():
            if regenerate or (args[3:] and name not in args[3:]):
                continue
            with open(os.path.join(work, stdin_file), "rb") as stdin:
                p = subprocess.run([cli, *argv], cwd=work, env=env, capture_output=True, text=True, stdin=stdin)
            q = subprocess.run([cli, *[stdin_file if a == "-" else a for a in argv]], cwd=work, env=env,
                               capture_output=True, text=True)
            want = q.stdout.replace(spelled, '"tiles (-)"')
            if p.returncode != 0 or q.returncode != 0 or spelled not in q.stdout or p.stdout != want:
                failed.append(name)
                diff = difflib.unified_diff(want.splitlines(True), p.stdout.splitlines(True), "file", "stdin")
                sys.stdout.writelines(list(diff)[:40])
                print(f"FAIL {name}: from the standard input {p.returncode}, from the file {q.returncode}\n{p.stderr}")
            else:
                print(f"ok {name}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
