#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The table of run_overhead_bench.sh, from OUTDIR/results.jsonl and the
check logs; also writes OUTDIR/summary.json.

Ratios: each configuration's figure divided by the native figure of the same
round (the two ran moments apart), then the median over rounds; "spread" is
the range of those per-round ratios."""
import glob
import json
import os
import re
import statistics
import sys

TARGETS = {  # (part, api or alloc, config) -> the target
    ("pairs", "async", "stacks"): 1.10,
    ("pairs", "async", "no stacks"): 1.02,
    ("pairs", "plain", "stacks"): 1.02,
    ("pairs", "plain", "no stacks"): 1.02,
    ("torch", "caching", "stacks"): 1.01,
    ("torch", "no_caching", "stacks"): 1.03,
}


def load(out):
    rows = []
    with open(os.path.join(out, "results.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    rows.append({"part": "unreadable", "line": line})
    return rows


def ratios(rows, key, figure, native_config="native"):
    """{config: (median figure, median ratio, min ratio, max ratio, rounds)}
    for the rows matching key (a dict of fields)."""
    sel = [r for r in rows
           if all(r.get(k) == v for k, v in key.items()) and "result" in r and figure in r["result"]]
    by_round = {}
    for r in sel:
        by_round.setdefault(r["round"], {})[r["config"]] = r["result"][figure]
    configs = []
    for r in sel:
        if r["config"] not in configs:
            configs.append(r["config"])
    table = {}
    for c in configs:
        values = [rd[c] for rd in by_round.values() if c in rd]
        rs = [rd[c] / rd[native_config] for rd in by_round.values() if c in rd and native_config in rd]
        if values:
            table[c] = (statistics.median(values), statistics.median(rs) if rs else None,
                        min(rs) if rs else None, max(rs) if rs else None, len(values))
    return table


def timestamp_saving(rows):
    """Per runtime: ns per pair saved by the TSC clock (no stacks against no
    stacks with clock_gettime, each round's pair of runs), median and range,
    and the ratio of the two."""
    lines = []
    for variant in ("dynamic", "static"):
        by_round = {}
        for r in rows:
            if (r.get("part"), r.get("variant"), r.get("api")) == ("pairs", variant, "async") and "result" in r:
                by_round.setdefault(r["round"], {})[r["config"]] = r["result"]["median_ns_per_pair"]
        pairs = [(rd["no stacks, clock_gettime"], rd["no stacks"]) for rd in by_round.values()
                 if "no stacks" in rd and "no stacks, clock_gettime" in rd]
        if not pairs:
            continue
        saved = [g - t for g, t in pairs]
        ratio = [t / g for g, t in pairs]
        lines.append(f"  {variant:<8} saved {statistics.median(saved):.1f} ns per pair (range {min(saved):.1f}.."
                     f"{max(saved):.1f}, {len(pairs)} rounds); TSC / clock_gettime {statistics.median(ratio):.3f} "
                     f"({min(ratio):.3f}..{max(ratio):.3f})")
    return lines


def verdict(target, ratio):
    if target is None or ratio is None:
        return ""
    return f"target {target:.2f}: {'met' if ratio <= target else 'MISSED'}"


def main():
    out = sys.argv[1]
    rows = load(out)
    summary = {"pairs": {}, "torch": {}, "parts": {}, "checks": {}, "torch_trace": {}, "failed": []}
    lines = []
    for r in rows:
        if "failed" in r:
            summary["failed"].append(r)
    lines.append("Allocation pairs, 1 MiB, from a call site ~24 frames deep (ns per pair: median over rounds of "
                 "each process's median block; ratio to native, per round, median and range)")
    lines.append(f"{'runtime':<8} {'pair':<6} {'configuration':<24} {'ns/pair':>10} {'ratio':>7} {'spread':>13}  target")
    for variant in ("dynamic", "static"):
        for api in ("async", "plain"):
            t = ratios(rows, {"part": "pairs", "variant": variant, "api": api}, "median_ns_per_pair")
            for config, (value, ratio, lo, hi, n) in t.items():
                target = TARGETS.get(("pairs", api, config))
                spread = f"{lo:.3f}..{hi:.3f}" if ratio is not None and config != "native" else ""
                rtext = f"{ratio:.3f}" if ratio is not None and config != "native" else ""
                lines.append(f"{variant:<8} {api:<6} {config:<24} {value:>10.1f} {rtext:>7} {spread:>13}  "
                             f"{verdict(target, ratio) if config != 'native' else ''}")
                summary["pairs"][f"{variant}/{api}/{config}"] = {"ns_per_pair": value, "ratio": ratio,
                                                                  "ratio_min": lo, "ratio_max": hi, "rounds": n}
    # The median block hides what happens once per many pairs (a chunk claim,
    # the trace's page faults); the mean over all blocks includes it.
    mean_lines = []
    for variant in ("dynamic", "static"):
        for api in ("async", "plain"):
            t = ratios(rows, {"part": "pairs", "variant": variant, "api": api}, "mean_ns_per_pair")
            for config, (value, ratio, lo, hi, n) in t.items():
                if config == "native" or ratio is None:
                    continue
                mean_lines.append(f"{variant:<8} {api:<6} {config:<24} {value:>10.1f} {ratio:>7.3f} "
                                  f"{lo:.3f}..{hi:.3f}")
                summary["pairs"][f"{variant}/{api}/{config}"]["mean_ratio"] = ratio
    if mean_lines:
        lines.append("The same with each process's mean over all its blocks (ns/pair, ratio, spread)")
        lines.extend(mean_lines)
    clock_lines = timestamp_saving(rows)
    if clock_lines:
        lines.append("The event clock on async pairs without stacks: TSC (the default where the kernel uses it) "
                     "against clock_gettime (CUMEMTRACE_CLOCK=monotonic), same rounds")
        lines.extend(clock_lines)
    pair_traces = [r for r in rows if r.get("part") == "pairs_trace"]
    if pair_traces:
        lines.append("Traces of the first round with stacks: recorded stack depth (frames) and bytes per event")
        summary["pairs_trace"] = {}
        for r in pair_traces:
            lines.append(f"  {r['variant']:<8} {r['api']:<6} {r['stacks']} stacks of at most {r['stack_frames_max']} "
                         f"frames (median {r['stack_frames_median']}), {r['events']} events, file "
                         f"{r['file_bytes_per_event']} B/event, event records {r['record_bytes_per_event']} B/event")
            summary["pairs_trace"][f"{r['variant']}/{r['api']}"] = r
    lines.append("")
    parts = [r for r in rows if r.get("part") == "parts" and "result" in r]
    if parts:
        lines.append("Native cost of what the shim adds per event (ns)")
        for r in parts:
            p = r["result"]
            rdtsc = f", rdtsc {p['rdtsc_ns']:.1f}" if p.get("rdtsc_ns", -1) >= 0 else ""
            lines.append(f"  {r['variant']:<8} clock_gettime {p['clock_gettime_ns']:.1f}{rdtsc}, cudaGetDevice "
                         f"{p['cudaGetDevice_ns']:.1f}, cuCtxGetDevice {p['cuCtxGetDevice_ns']:.1f}, unw_backtrace of "
                         f"{p['unw_backtrace_frames']} frames {p['unw_backtrace_ns']:.1f}")
            summary["parts"][r["variant"]] = p
        lines.append("")
    t_any = False
    for alloc in ("caching", "no_caching"):
        t = ratios(rows, {"part": "torch", "alloc": alloc}, "median_step_ms")
        if not t:
            continue
        if not t_any:
            lines.append("PyTorch training loop (median step time per process: 200 steps with caching, 100 without; "
                         "ratio per round, median and range)")
            t_any = True
        for config, (value, ratio, lo, hi, n) in t.items():
            target = TARGETS.get(("torch", alloc, config))
            rtext = f"{ratio:.4f}" if config != "native" and ratio is not None else ""
            spread = f"{lo:.4f}..{hi:.4f}" if config != "native" and ratio is not None else ""
            lines.append(f"  {alloc:<11} {config:<8} {value:>9.3f} ms {rtext:>7} {spread:>15}  "
                         f"{verdict(target, ratio) if config != 'native' else ''}")
            summary["torch"][f"{alloc}/{config}"] = {"step_ms": value, "ratio": ratio, "ratio_min": lo,
                                                     "ratio_max": hi, "rounds": n}
    traces = [r for r in rows if r.get("part") == "torch_trace"]
    if traces:
        lines.append("")
        lines.append("PyTorch traces (with stacks, default depth 64): bytes per event")
        for alloc in ("caching", "no_caching"):
            ts = [r for r in traces if r["alloc"] == alloc]
            if not ts:
                continue
            steps = next((r["result"]["steps_total"] for r in rows if r.get("part") == "torch"
                          and r.get("alloc") == alloc and "result" in r), None)
            ev = statistics.median(r["events"] for r in ts)
            fb = statistics.median(r["file_bytes_per_event"] for r in ts)
            rb = statistics.median(r["record_bytes_per_event"] for r in ts)
            allocs = statistics.median(r["allocs"] for r in ts)
            per_step = f", {allocs / steps:.0f} allocations per step" if steps else ""
            lines.append(f"  {alloc:<11} {ev:.0f} events{per_step}: file {fb:.2f} B/event, event records "
                         f"{rb:.2f} B/event  {verdict(32, fb) if alloc == 'no_caching' else ''}")
            summary["torch_trace"][alloc] = {"events": ev, "allocations": allocs, "steps": steps,
                                             "file_bytes_per_event": fb, "record_bytes_per_event": rb, "traces": ts}
    lines.append("")
    lines.append("Check modes (every cached stack / remembered device compared with a fresh answer)")
    for path in sorted(glob.glob(os.path.join(out, "logs", "check_*.txt"))):
        name = os.path.basename(path)[6:-4]
        with open(path) as f:
            text = f.read()
        s = re.search(r"stack cache check: (\d+) hits compared with a full unwind, (\d+) wrong; (\d+) stacks cached, "
                      r"(\d+) origins uncacheable", text)
        d = re.search(r"device cache check: (\d+) remembered devices compared, (\d+) wrong, (\d+) context switches "
                      r"unseen", text)
        entry = {}
        if s:
            entry["stack"] = dict(zip(("hits", "wrong", "cached", "uncacheable"), map(int, s.groups())))
        if d:
            entry["device"] = dict(zip(("compared", "wrong", "unseen_switches"), map(int, d.groups())))
        summary["checks"][name] = entry
        st = entry.get("stack")
        dv = entry.get("device")
        lines.append(f"  {name:<18} stacks: " + (f"{st['hits']} hits, {st['wrong']} wrong, {st['cached']} cached, "
                                                 f"{st['uncacheable']} uncacheable" if st else "no check line") +
                     "; devices: " + (f"{dv['compared']} compared, {dv['wrong']} wrong, {dv['unseen_switches']} "
                                      f"switches unseen" if dv else "no check line"))
    if summary["failed"]:
        lines.append("")
        lines.append(f"{len(summary['failed'])} runs failed:")
        for r in summary["failed"]:
            lines.append(f"  {json.dumps(r)}")
    print("\n".join(lines))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
