#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the PyTorch block layer of a trace against PyTorch's own figures
(run_blocks_validation.sh):

    blocks_check.py SCRIPT RUN.json TRACE.bin [REPORT.json] [--kept N]

RUN.json is train_mlp.py's JSON line. Replays the BLOCK records (format 2.1)
with the caching allocator's rule for a block's size inside its segment
(docs/design.md, "Block layer": the request rounded to 512 bytes, or the
whole free range when the rest is too small to split) and prints PASS/FAIL
lines: the block layer's peak allocated against max_memory_allocated(), its
peak reserved against max_memory_reserved(), every block inside a live
segment, the largest tensor sites at the peak named by the script's marked
lines, and with --kept N the kept tensors live at exit. When REPORT.json
(cumemtrace report --json) has a "blocks" object, its figures are held
against the same ones."""
import bisect
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cmt_trace  # noqa: E402

ALLOC, FREE_REQ, FREE_DONE, SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP, OOM = range(51, 59)
MIN_BLOCK, SMALL_SIZE, SMALL_BUFFER = 512, 1 << 20, 2 << 20


def round_size(n):
    return MIN_BLOCK if n < MIN_BLOCK else MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


class Model:
    def __init__(self):
        self.segments = {}      # start -> size
        self.seg_starts = []
        self.occupied = {}      # block addr -> (block size, requested, stack, live)
        self.occ_starts = []
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0
        self.peak_live = []
        self.errors = []

    def segment_of(self, addr):
        i = bisect.bisect_right(self.seg_starts, addr) - 1
        if i >= 0:
            s = self.seg_starts[i]
            if addr < s + self.segments[s]:
                return s, self.segments[s]
        return None

    def on(self, e):
        if e.api == SEG_ALLOC:
            self.segments[e.addr] = e.size
            bisect.insort(self.seg_starts, e.addr)
            self.reserved += e.size
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        elif e.api == SEG_FREE:
            if self.segments.pop(e.addr, None) is None:
                self.errors.append(f"segment {e.addr:#x} freed, never reserved")
            else:
                self.seg_starts.remove(e.addr)
                self.reserved -= e.size
        elif e.api == ALLOC:
            seg = self.segment_of(e.addr)
            if not seg:
                self.errors.append(f"block {e.addr:#x} outside every live segment")
                return
            start, size = seg
            j = bisect.bisect_right(self.occ_starts, e.addr)
            nxt = self.occ_starts[j] if j < len(self.occ_starts) else start + size
            gap = min(nxt, start + size) - e.addr
            r = round_size(e.size)
            remaining = gap - r
            small = size == SMALL_BUFFER
            split = remaining >= MIN_BLOCK if small else remaining > SMALL_SIZE
            bsize = r if split else gap
            if gap < r:
                self.errors.append(f"block {e.addr:#x} of {r} bytes overlaps the next block")
            self.occupied[e.addr] = [bsize, e.size, e.stack, True]
            bisect.insort(self.occ_starts, e.addr)
            self.allocated += bsize
            if self.allocated > self.peak_allocated:
                self.peak_allocated = self.allocated
                self.peak_live = [(a, b[0], b[2]) for a, b in self.occupied.items() if b[3]]
        elif e.api == FREE_REQ:
            b = self.occupied.get(e.addr)
            if not b or not b[3]:
                self.errors.append(f"block {e.addr:#x} freed, not allocated")
                return
            b[3] = False
            self.allocated -= b[0]
        elif e.api == FREE_DONE:
            if self.occupied.pop(e.addr, None) is not None:
                self.occ_starts.remove(e.addr)


def site_of(trace, stack, script):
    for fn, fl, line in trace.python_frames(stack):
        if os.path.basename(fl) == os.path.basename(script):
            return line
    return None


def marked_lines(script):
    marks = {}
    with open(script) as f:
        for i, text in enumerate(f, 1):
            m = re.search(r"# site:(\w+)", text)
            if m:
                marks[i] = m.group(1)
    return marks


def main():
    args = sys.argv[1:]
    kept = 0
    if "--kept" in args:
        k = args.index("--kept")
        kept = int(args[k + 1])
        del args[k:k + 2]
    script, run_json, trace_path = args[:3]
    report_json = args[3] if len(args) > 3 else None
    run = json.loads(open(run_json).read().strip().splitlines()[-1])
    t = cmt_trace.Trace(trace_path)
    notes = [t.strings.get(tid, "?") for src, tid in t.notes if src == 3]
    print("NOTE block layer notes: " + ("; ".join(notes) or "(none)"))
    fails = 0
    if not t.blocks:
        print("FAIL blocks: the trace has no BLOCK record")
        return 1
    m = Model()
    for e in t.blocks:
        m.on(e)

    def check(name, ok, text):
        nonlocal fails
        print(("PASS " if ok else "FAIL ") + name + ": " + text)
        fails += 0 if ok else 1

    check("peak allocated", m.peak_allocated == run["max_memory_allocated"],
          f"block layer {m.peak_allocated} bytes, torch.cuda.max_memory_allocated() {run['max_memory_allocated']}")
    check("peak reserved", m.peak_reserved == run["max_memory_reserved"],
          f"segment layer {m.peak_reserved} bytes, torch.cuda.max_memory_reserved() {run['max_memory_reserved']}")
    check("consistency", not m.errors, f"{len(m.errors)} inconsistencies" + (f" (first: {m.errors[0]})" if m.errors else ""))
    # the segments against the driver's cudaMalloc calls
    drv = {e.addr: e.size for e in t.events if e.type == cmt_trace.REC_ALLOC and e.api == 1 and e.result == 0}
    segs = [e for e in t.blocks if e.api == SEG_ALLOC]
    matched = sum(1 for e in segs if drv.get(e.addr) == e.size)
    check("segments are driver allocations", matched == len(segs),
          f"{matched} of {len(segs)} segments match a cudaMalloc of the same address and size")
    marks = marked_lines(script)
    by_site = {}
    for addr, size, stack in m.peak_live:
        line = site_of(t, stack, script)
        by_site[line] = by_site.get(line, 0) + size
    top = sorted(by_site.items(), key=lambda kv: -kv[1])[:5]
    desc = ", ".join(f"{'line %d' % l if l else 'no script line'}"
                     f"{' (' + marks[l] + ')' if l in marks else ''} {b}" for l, b in top)
    # every one of the largest sites is a line of the script (opt.step() for
    # the optimizer's state, gelu(h), ... besides the marked ones), and the
    # marked activation line is among them
    scripted = [l for l, _ in top if l]
    check("top tensors at the peak", len(scripted) == len(top) and any(marks.get(l) == "activation" for l, _ in top),
          f"{len(scripted)} of the {len(top)} largest sites at the peak are the script's lines: {desc}")
    if kept:
        live_exit = [(a, b) for a, b in m.occupied.items() if b[3]]
        kept_line = [l for l, n in marks.items() if n == "kept"]
        kept_live = [b for a, b in live_exit if site_of(t, b[2], script) in kept_line]
        check("kept tensors live at exit", len(kept_live) == kept,
              f"{len(kept_live)} blocks of line {kept_line} live at exit (expected {kept}), "
              f"{len(live_exit)} blocks live at exit in all")
    if report_json and os.path.exists(report_json):
        rep = json.load(open(report_json))
        b = rep.get("blocks")
        if not b:
            print("NOTE report: no \"blocks\" object in the report's JSON")
        else:
            check("report peak allocated", b.get("peak_allocated_bytes") == run["max_memory_allocated"],
                  f"report {b.get('peak_allocated_bytes')} vs {run['max_memory_allocated']}")
            check("report peak reserved", b.get("peak_reserved_bytes") == run["max_memory_reserved"],
                  f"report {b.get('peak_reserved_bytes')} vs {run['max_memory_reserved']}")
            if kept:
                check("report tensor leaks", b.get("leaked_blocks", 0) >= kept,
                      f"report counts {b.get('leaked_blocks')} leaked blocks ({b.get('leaked_bytes')} bytes)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
