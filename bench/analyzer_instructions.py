#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `cumemtrace report --no-symbols` costs per event, in instructions,
by side: reproducible where the wall times of bench/analyzer_throughput.py
are not (a shared machine slows runs unevenly; docs/performance.md).

Runs the analyzer under callgrind, one thread (CUMEMTRACE_ANALYZER_THREADS=1),
on two lengths of bench_gen_trace's synthetic trace (and of a trace given
with --trace-pair), and prints per event, from the difference between the
two lengths (so that start-up, symbolization and the report's fixed costs
cancel out):

    whole      the whole process
    reading    the reading side: decoding, merging, packing, the reading
               passes (cmt_reader_run without the replay)
    decode     of it, the general decoding path (cursor_decode_slow; the
               fast path, which takes most records, is inlined into
               cmt_reader_run and counted in `reading` only; cursor_decode
               in builds before it)
    passes     of it, the reading passes (cmt_read_passes_event)
    replay     the replay's side (cmt_replay_events)
    views      of it, the views that follow every change with the
               fragmentation tracker (alloc_views.c's on_change calling
               frag.c's on_change_plain; from obs5 on, one function:
               frag.c's on_views_plain_all, or on_views_plain)
    frag       of that, the fragmentation tracker (frag.c's on_change_plain;
               "-" where it is inlined into the views' function)
    live set   of the replay, the live set's insertions and removals: by
               address (cmt_live_set_put, cmt_live_set_take) and by the
               pairing's id (cmt_live_set_put_id, cmt_live_set_take_id,
               inline: their lines of live_set.h in cmt_replay_events, and
               the _slow paths called from them)
    pairing    of the reading side, the pairing of releases with their
               allocations (pairing.h and live_set.h inlined into feed.c's
               hand_over, on the reading thread): counted in `reading`, not
               in `replay`

With two threads the slower of `reading` and `replay` sets the pace.
Several --cli give the figures side by side (the same traces).

    bench/analyzer_instructions.py --cli build/analyzer/cumemtrace \\
        --gen build/bench/bench_gen_trace [--cli OTHER] [--events 1000000,2000000]

Instruction counts vary by a few tenths of a percent from run to run: the
analyzer's hash tables take random multipliers.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# (label, function names whose inclusive counts are summed)
PARTS = [
    ("reading", None),  # computed
    ("decode", ["cursor_decode", "cursor_decode_slow"]),
    ("passes", ["cmt_read_passes_event"]),
    ("replay", ["cmt_replay_events"]),
    ("views", ["alloc_views.c:on_change", "frag.c:on_views_plain_all", "frag.c:on_views_plain"]),
    ("frag", ["frag.c:on_change_plain"]),
    # the _id functions are inline: callgrind files their lines under
    # live_set.h and the function they are inlined into (inclusive of the
    # _slow paths they call)
    ("live set", ["cmt_live_set_put", "cmt_live_set_take", "live_set.h:cmt_replay_events"]),
    ("pairing", ["pairing.h:hand_over", "live_set.h:hand_over"]),
]


def profile(cli, trace, workdir):
    """Inclusive instructions of the whole process and of the functions of
    PARTS (the outermost entry of each name)."""
    out = os.path.join(workdir, "callgrind.out")
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, CUMEMTRACE_ANALYZER_THREADS="1")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, cli, "report", "--no-symbols",
                    trace], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # run from a directory of its own: from the source tree, callgrind_annotate
    # splits each function between absolute and relative file names
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", out], check=True,
                          capture_output=True, text=True, cwd=workdir).stdout
    counts = {}
    total = None
    for line in text.splitlines():
        # inlined code is listed as file:function without the [binary]
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S+)(?: \[.*)?$", line)
        if not m:
            m2 = re.match(r"\s*([\d,]+) \([^)]*\)\s+PROGRAM TOTALS", line)
            if m2:
                total = int(m2.group(1).replace(",", ""))
            continue
        n, where = int(m.group(1).replace(",", "")), m.group(2)
        fn = where.rsplit(":", 1)[-1]
        for key in (fn, where.rsplit("/", 1)[-1]):
            counts.setdefault(key, n)  # callgrind_annotate lists the largest first
    if total is None:
        raise RuntimeError("no PROGRAM TOTALS in callgrind_annotate's output")
    counts["whole"] = total
    counts["reading"] = counts.get("cmt_reader_run", 0) - counts.get("cmt_replay_events", 0)
    return counts


def generate(gen, path, events):
    if not os.path.exists(path):
        print(f"generating {path} ({events:,} events)...", file=sys.stderr)
        subprocess.run([gen, path + ".tmp", str(events)], check=True, stdout=subprocess.DEVNULL)
        os.replace(path + ".tmp", path)


def part(counts, label, names):
    """None when none of names is a function of its own in the profile (the
    decoder, for one, is inlined into the reading loop in later builds)."""
    if names is None:
        return counts[label]
    found = [counts[n] for n in names if n in counts]
    return sum(found) if found else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", action="append", required=True, help="cumemtrace to measure (repeat to compare)")
    ap.add_argument("--gen", required=True, help="bench_gen_trace")
    ap.add_argument("--dir", help="where the traces go (default: a temporary directory)")
    ap.add_argument("--events", default="1000000,2000000", help="the two lengths, comma-separated")
    ap.add_argument("--trace-pair", nargs=2, metavar=("SHORT", "LONG"),
                    help="two recordings of the same program at two lengths (the twin's, bench/twin_bench.py)")
    args = ap.parse_args()
    import shutil
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        print("analyzer_instructions: valgrind (callgrind) is not installed: nothing measured")
        return
    short, long_ = (int(x) for x in args.events.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        d = args.dir or tmp
        os.makedirs(d, exist_ok=True)
        sets = []
        a, b = os.path.join(d, f"synthetic-{short}.bin"), os.path.join(d, f"synthetic-{long_}.bin")
        generate(args.gen, a, short)
        generate(args.gen, b, long_)
        sets.append((f"bench_gen_trace, {short:,} and {long_:,} events", a, b))
        if args.trace_pair:
            sets.append(("--trace-pair", args.trace_pair[0], args.trace_pair[1]))
        for title, t_short, t_long in sets:
            print(f"{title}: instructions per event (one thread; the difference of the two lengths)")
            print(f"  {'':10}" + "".join(f"{'cli ' + str(i + 1):>12}" for i in range(len(args.cli))))
            rows = {}
            for cli in args.cli:
                p_short, p_long = profile(cli, t_short, tmp), profile(cli, t_long, tmp)
                n = events_of(cli, t_long) - events_of(cli, t_short)
                for label, names in [("whole", None)] + PARTS:
                    a, b = part(p_short, label, names), part(p_long, label, names)
                    rows.setdefault(label, []).append(None if a is None or b is None else (b - a) / n)
            for label, values in rows.items():
                print(f"  {label:10}" + "".join(f"{v:12.1f}" if v is not None else f"{'-':>12}" for v in values))
        for i, cli in enumerate(args.cli):
            print(f"cli {i + 1}: {cli}")


def events_of(cli, trace):
    """The trace's events, as `report --format json` counts them."""
    out = subprocess.run([cli, "report", "--no-symbols", "--format", "json", trace], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["events"]


if __name__ == "__main__":
    main()
