#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a cumemtrace report of a PyTorch script against the script's own
figures (issue 14, run_python_validation.sh):

    python_check.py MODE SCRIPT SCRIPT_JSON REPORT_JSON

SCRIPT_JSON is the last line the script printed (train_mlp.py, train_hf.py);
REPORT_JSON is `cumemtrace report --format json` of its trace. MODE:
  cached    the default caching allocator: PyTorch's own peak in the report
            equals max_memory_reserved() to the byte; what PyTorch held at
            exit equals memory_reserved() at the end and is not a leak (no
            leaked site has a caching-allocator frame)
  nocache   PYTORCH_NO_CUDA_MEMORY_CACHING=1: the largest sites at the peak
            are named by the script's lines (the lines marked `# site:NAME`
            in it), or by an operation on autograd's threads
Prints PASS/FAIL/NOTE lines; exit status 1 when one failed."""
import json
import os
import re
import sys

failed = 0


def verdict(ok, name, detail):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ": " + detail)
    failed += 0 if ok else 1


def site_frame(site):
    frames = site.get("frames") or []
    i = site.get("site_frame")
    return frames[i] if frames and i is not None and i < len(frames) else (frames[0] if frames else {})


def describe(f):
    where = f.get("file") or f.get("module") or "?"
    line = f.get("line")
    return f"{f.get('function') or '?'} at {os.path.basename(where)}" + (f":{line}" if line else "")


def marked_lines(script):
    marks = {}
    with open(script) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"# site:(\w+)", text)
            if m:
                marks[n] = m.group(1)
    return marks


def main():
    mode, script, script_json, report_json = sys.argv[1:5]
    fig = json.loads(open(script_json).read().strip().splitlines()[-1])
    rep = json.load(open(report_json))
    dev = next(d for d in rep["devices"] if d["ordinal"] == 0)
    name = os.path.basename(script)
    print(f"NOTE {name} {mode}: device peak {dev['peak_bytes']} B; PyTorch max_memory_allocated "
          f"{fig['max_memory_allocated']} B, max_memory_reserved {fig['max_memory_reserved']} B; "
          f"median step {fig['median_step_ms']:.1f} ms")
    if mode == "cached":
        own = (dev.get("own_peaks") or {}).get("pytorch") or {}
        verdict(own.get("bytes") == fig["max_memory_reserved"], f"{name} own peak",
                f"PyTorch's own peak in the report {own.get('bytes')} B, max_memory_reserved() "
                f"{fig['max_memory_reserved']} B")
        print(f"NOTE {name} peak by holder: {json.dumps(dev.get('peak_by_holder'))}")
        held = [h for h in rep.get("held_at_exit") or [] if h["holder"] == "PyTorch"]
        held_bytes = held[0]["bytes"] if held else None
        verdict(held_bytes == fig["memory_reserved_at_end"], f"{name} held at exit",
                f"held by PyTorch at exit {held_bytes} B, memory_reserved() at the end "
                f"{fig['memory_reserved_at_end']} B")
        cache_leaks = [s for s in rep["leaks"]["sites"]
                       if any("CachingAllocator" in (f.get("function") or "") for f in s.get("frames") or [])]
        verdict(not cache_leaks, f"{name} no cache leak",
                f"{len(cache_leaks)} leaked sites with a caching-allocator frame; leaks in all "
                f"{rep['leaks']['bytes']} B in {rep['leaks']['count']} allocations")
    else:
        marks = marked_lines(script)
        top = dev.get("top_sites_at_peak") or []
        named = []
        for s in top[:8]:
            f = site_frame(s)
            named.append((s["bytes"], describe(f), f))
            print(f"NOTE {name} top site at peak: {s['bytes']} B in {s['count']} allocations: {describe(f)}")
        ours = [f for _, _, f in named if (f.get("file") or "").endswith(name)]
        other_python = [d for _, d, f in named
                        if (f.get("file") or "").endswith(".py") and not (f.get("file") or "").endswith(name)]
        verdict(ours and not other_python, f"{name} sites by the script's lines",
                f"{len(ours)} of the top {len(named)} sites named by {name}; named by other Python files: "
                f"{other_python}")
        hit = sorted({marks[f["line"]] for f in ours if f.get("line") in marks})
        verdict(bool(hit), f"{name} marked lines", f"marked lines among the top sites: {hit} (marks: {marks})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
