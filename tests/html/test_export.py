#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`cumemtrace export` (docs/export.md) on gen_golden's traces: the Perfetto
JSON against the Trace Event format (fields, units, counter values equal to
`timeline --json` at the sampled instants, failures with stacks, steps,
one named process per trace on one time axis); the folded stacks summing
exactly to the report's figures; the block layer's counters of a real H200
trace reaching its peaks exactly.

  test_export.py CUMEMTRACE GEN_GOLDEN BLOCKS_TRACE"""
import decimal
import json
import os
import subprocess
import sys
import tempfile

cumemtrace, gen_golden, blocks_trace = sys.argv[1:4]
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok: " if ok else "FAIL: ") + what)
    if ok:
        passed += 1
    else:
        failed += 1


def run(*args):
    return subprocess.run([cumemtrace, *args], check=True, capture_output=True, text=True).stdout


def folded_total(text):
    total = 0
    for line in text.splitlines():
        stack, _, weight = line.rpartition(" ")
        assert weight.isdigit() and stack, line
        total += int(weight)
    return total


with tempfile.TemporaryDirectory() as d:
    subprocess.run([gen_golden, d], check=True)
    mixed = os.path.join(d, "mixed.bin")
    ranks = [os.path.join(d, f"rank{i}.bin") for i in range(3)]
    report = json.loads(run("report", "--json", mixed))
    timeline = json.loads(run("timeline", "--json", mixed))

    # ---- folded
    peaks = sum(a["peak_bytes"] for k in ("devices", "managed", "pinned_host") for a in report[k])
    out = run("export", "--format", "folded", mixed)
    check(folded_total(out) == peaks == 699400192, f"folded peak sums to the accounts' peaks: {folded_total(out)}")
    dev0 = sum(int(line.rpartition(" ")[2]) for line in out.splitlines() if line.startswith("device 0;"))
    check(dev0 == report["devices"][0]["peak_bytes"], f"its device 0 lines sum to device 0's peak: {dev0}")
    check("device 0;main main.c:40;train train.c:120;load_weights model.c:31 268435456" in out.splitlines(),
          "a line: frames outermost first, file:line, bytes")
    out = run("export", "--format", "folded", "--metric", "leaks", mixed)
    check(folded_total(out) == report["leaks"]["bytes"] == 507510784, f"folded leaks sum to leaks.bytes: {folded_total(out)}")
    out = run("export", "--format", "folded", "--metric", "allocated", mixed)
    # weights 256+128, VMM 64, pinned 16, managed 8, the loader 3x10, 100 steps
    # of 4x8+1+32, four backward activations of 24 (MiB)
    check(folded_total(out) == 7098 * 1024 * 1024, f"folded allocated sums to what the scenario allocated: {folded_total(out)}")

    # ---- perfetto
    path = os.path.join(d, "mixed.json")
    run("export", "--format", "perfetto", "-o", path, mixed)
    doc = json.load(open(path))
    events = doc["traceEvents"]
    check(doc.get("displayTimeUnit") == "ms" and isinstance(events, list), "an object with traceEvents and displayTimeUnit")
    bad = [e for e in events if not {"ph", "name", "pid", "tid"} <= e.keys()
           or (e["ph"] != "M" and not (isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0))]
    check(not bad, f"every event has ph, name, pid, tid and (but metadata) a ts >= 0: {bad[:2]}")
    check({e["ph"] for e in events} == {"M", "C", "i", "X"}, f"phases M, C, i, X: {sorted({e['ph'] for e in events})}")
    names = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    check(len(names) == 1 and names[0]["args"]["name"] == "train (%s)" % mixed, f"the process is named: {names}")
    threads = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    check({"main", "loader", "steps"} <= threads, f"threads named: {sorted(threads)}")
    # counters: bucket b's highest at its start, its last at its middle (microseconds)
    width = timeline["bucket_ns"]
    total0 = next(s for s in timeline["series"] if s["device"] == 0 and s["kind"] == "total")
    kinds0 = {s["kind"]: s for s in timeline["series"] if s["device"] == 0}
    dev0 = [e for e in events if e["ph"] == "C" and e["name"] == "device 0 live bytes"]
    nb = len(timeline["buckets"])
    check(len(dev0) == 2 * nb, f"two counter samples per bucket: {len(dev0)} for {nb} buckets")
    mismatch = []
    for b in range(nb):
        hi, last = dev0[2 * b], dev0[2 * b + 1]
        start = timeline["buckets"][b]["start_ns"]
        if hi["ts"] != start / 1000 or last["ts"] != (start + width // 2) / 1000:
            mismatch.append(("ts", b, hi["ts"], last["ts"]))
        for k, s in kinds0.items():
            if hi["args"].get(k) != s["max"][b] or last["args"].get(k) != s["last"][b]:
                mismatch.append((k, b))
    check(not mismatch, f"counter values equal timeline --json's max and last at the sampled instants: {mismatch[:3]}")
    check(max(e["args"]["total"] for e in dev0) == report["devices"][0]["peak_bytes"], "the counters reach the peak")
    fails = [e for e in events if e["ph"] == "i"]
    check(len(fails) == 1 and fails[0]["s"] == "p" and fails[0]["args"]["size"] == 100 * 1024 ** 3
          and fails[0]["args"]["stack"][0] == "try_huge_batch /src/app/train.c:140"
          and fails[0]["ts"] == report["failed"][0]["time_ns"] / 1000,
          f"the failed allocation: an instant with size, error and stack: {fails}")
    steps = [e for e in events if e["ph"] == "X"]
    check(len(steps) == 100 and steps[0]["name"] == "step 0" and steps[0]["ts"] == 10000 and steps[0]["dur"] == 19000,
          f"100 steps as slices, step 0 from 10 ms for 19 ms: {steps[:1]}")

    path = os.path.join(d, "job.json")
    run("export", "--format", "perfetto", "-o", path, *ranks)
    events = json.load(open(path))["traceEvents"]
    procs = sorted((e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "process_name")
    check([p for p, _ in procs] == [2000, 2001, 2002] and all(n.startswith(f"rank {i}: train") for i, (_, n) in enumerate(procs)),
          f"one named process per rank: {procs}")
    firsts = [min(e["ts"] for e in events if e["ph"] == "C" and e["pid"] == p) for p, _ in procs]
    check(max(firsts) - min(firsts) < 1e4, f"the ranks on one time axis: first samples at {firsts} us")

    # the block layer (tests/data/blocks/h200_train_mlp.bin): tensors and
    # segments per device over time, every bucket's highest then its last
    blocks = json.loads(run("report", "--json", blocks_trace))["blocks"]["devices"][0]
    path = os.path.join(d, "blocks.json")
    run("export", "--format", "perfetto", "-o", path, blocks_trace)
    events = json.load(open(path))["traceEvents"]
    bc = [e for e in events if e["ph"] == "C" and e["name"] == "device 0 inside PyTorch's cache"]
    check(len(bc) == 2048 and all(set(e["args"]) == {"allocated", "reserved"} for e in bc),
          f"the block layer's track: 1024 buckets, two samples each, allocated and reserved: {len(bc)}")
    check(all(bc[i]["ts"] <= bc[i + 1]["ts"] for i in range(len(bc) - 1)), "its samples in time order")
    top_a = max(e["args"]["allocated"] for e in bc)
    top_r = max(e["args"]["reserved"] for e in bc)
    check(top_a == blocks["peak_allocated_bytes"] == 8831542784 and top_r == blocks["peak_reserved_bytes"] == 10687086592,
          f"its highest: peak allocated 8831542784 B, peak reserved 10687086592 B exactly: {top_a}, {top_r}")
    at_peak = [e["ts"] for e in bc[0::2] if e["args"]["allocated"] == top_a]
    width_us = bc[2]["ts"] - bc[0]["ts"]
    peak_us = blocks["at_peak"]["ts_ns"] / 1000
    check(at_peak and at_peak[0] <= peak_us <= at_peak[0] + width_us,
          f"the bucket reaching the tensors' peak holds its instant ({peak_us} us): {at_peak[:1]}, {width_us} us wide")
    check(bc[-1]["args"] == {"allocated": blocks["allocated_at_exit_bytes"], "reserved": blocks["reserved_at_exit_bytes"]}
          == {"allocated": 72351744, "reserved": 10687086592}, f"its last sample: what was left at exit: {bc[-1]['args']}")
    check(not [e for e in events if e.get("cat") == "block layer failure"], "no failure of the block layer in this run")

    # ts to the nanosecond, exact 3 hours into a run: two failures 300 ns
    # apart (near.bin), read as decimals, not doubles
    near = json.loads(run("export", "--format", "perfetto", os.path.join(d, "near.bin")),
                      parse_float=decimal.Decimal)["traceEvents"]
    ts = [e["ts"] for e in near if e["ph"] == "i"]
    check(ts == [decimal.Decimal("10800001000.100"), decimal.Decimal("10800001000.400")]
          and ts[1] - ts[0] == decimal.Decimal("0.300"),
          f"two failures 300 ns apart, 3 h in: ts 10800001000.100 and 10800001000.400 us: {ts}")
    out = run("export", "--format", "perfetto", os.path.join(d, "near.bin"))
    check('"ts":10800001000.100' in out.replace(" ", ""), "ts written with three decimals")

    r = subprocess.run([cumemtrace, "export", "--format", "folded", *ranks], capture_output=True, text=True)
    check(r.returncode == 2 and "one trace" in r.stderr, f"folded takes one trace: {r.returncode} {r.stderr.strip()}")
    r = subprocess.run([cumemtrace, "export", mixed], capture_output=True, text=True)
    check(r.returncode == 2 and "--format" in r.stderr, f"export without --format says what to add: {r.stderr.strip()[:80]}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
