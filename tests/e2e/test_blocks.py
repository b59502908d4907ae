# SPDX-License-Identifier: MIT
"""End-to-end: PyTorch's block layer on the simulated device (issue 20).

blocks_train drives the test double of libc10_cuda.so
(blocks/c10_cuda_allocator_double.cpp: 2.11's allocator interface, a small
caching allocator splitting segments by PyTorch's rule) through the sequence
its comment gives; every figure below follows from it. The shim loads its
PyTorch bridge at the double's first segment, the bridge finds 2.11 in the
double's torch/version.py, checks name() and attaches; the double's own
figures are the ground truth the block layer must reproduce to the byte."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

sys.path.insert(0, os.path.join(os.environ["CMT_SOURCE_ROOT"], "samples", "gpu"))
import blocks_check  # noqa: E402
import cmt_trace  # noqa: E402

TRAIN = cmtest.program(os.path.join("blocks", "blocks_train"))
DOUBLE = cmtest.program(os.path.join("blocks", "lib", "libc10_cuda.so"))  # beside a version.py of 2.11
DOUBLE_OLD = cmtest.program(os.path.join("blocks", "old", "lib", "libc10_cuda.so"))  # of 2.4.1
ALLOC, FREE_REQ, FREE_DONE, SEG_ALLOC, SEG_FREE = 51, 52, 53, 54, 55
NOTE_BLOCKS = 3
BASE = 0x500000000000  # the simulated device 0's first address


def traced(env=None, double=DOUBLE):
    r = cmtest.run([TRAIN, double], env=env)
    check(r.proc.returncode == 0, f"blocks_train failed ({r.proc.returncode}): {r.proc.stderr}")
    own = [int(x) for x in r.proc.stdout.split()]
    return r, cmt_trace.Trace(r.trace), own


def notes(t):
    return [t.strings.get(text) for src, text in t.notes if src == NOTE_BLOCKS]


def test_records():
    r, t, own = traced()
    try:
        eq(notes(t), ["PyTorch 2.11.0+sim caching allocator: block layer on (tensors inside segments)"], "notes")
        eq([(fw, t.strings.get(v), st, t.strings.get(b)) for fw, v, st, b in t.allocators],
           [(1, "2.11.0+sim", 0, "native")], "ALLOCATOR record")
        seen = [(e.api, e.addr - BASE, e.size, e.kind) for e in t.blocks]
        a, b, c, d, f = 0, 1024, 2 * MiB, 2 * MiB + 5 * MiB, 22 * MiB
        eq(seen, [(SEG_ALLOC, 0, 2 * MiB, 9), (ALLOC, a, 1000, 8), (ALLOC, b, 3000, 8),
                  (SEG_ALLOC, c, 20 * MiB, 9), (ALLOC, c, 5 * MiB, 8), (ALLOC, d, 14 * MiB + MiB // 2, 8),
                  (SEG_ALLOC, f, 12 * MiB, 9), (ALLOC, f, 12 * MiB, 8),
                  (FREE_REQ, b, 3000, 8), (FREE_DONE, b, 3000, 8), (ALLOC, b, 2000, 8),
                  (FREE_REQ, c, 5 * MiB, 8), (FREE_DONE, c, 5 * MiB, 8),
                  (FREE_REQ, f, 12 * MiB, 8), (FREE_DONE, f, 12 * MiB, 8), (SEG_FREE, f, 12 * MiB, 9)],
           "block records")
        check(all(e.device == 0 for e in t.blocks), "every block record on device 0")
        # a tensor's stack: the bridge's callback, then the allocator double
        for e in t.blocks:
            mods = t.stack_modules(e.stack)
            if e.api == ALLOC:
                check("libc10_cuda.so" in mods, f"an allocation's stack goes through libc10_cuda.so: {mods}")
            else:
                eq(e.stack, 0, "stack of a free or segment record")
        # every segment of the block layer is a cudaMalloc of the driver layer, same address and size
        drv = [(e.addr, e.size) for e in t.events if e.type == cmt_trace.REC_ALLOC and e.api == 1]
        eq(sorted(drv), sorted((e.addr, e.size) for e in t.blocks if e.api == SEG_ALLOC), "segments as cudaMalloc")
    finally:
        cmtest.cleanup(r)


def test_figures():
    """The block layer replayed with PyTorch's split rule gives the double's
    own figures to the byte, and every block lies in a live segment."""
    r, t, own = traced()
    try:
        allocated, reserved, peak_allocated, peak_reserved, trackers = own
        eq((peak_allocated, peak_reserved, trackers), (33558528, 35651584, 1), "the double's own figures")
        m = blocks_check.Model()
        for e in t.blocks:
            m.on(e)
        eq(m.errors, [], "inconsistencies between the two layers")
        eq((m.peak_allocated, m.peak_reserved), (peak_allocated, peak_reserved), "peaks of the block layer")
        eq((m.allocated, m.reserved), (allocated, reserved), "allocated and reserved at exit")
        live = sorted((a - BASE, b[0], b[1]) for a, b in m.occupied.items() if b[3])
        eq(live, [(0, 1024, 1000), (1024, 2048, 2000), (2 * MiB + 5 * MiB, 15 * MiB, 14 * MiB + MiB // 2)],
           "tensors never freed (block, block bytes, bytes asked)")
    finally:
        cmtest.cleanup(r)


def test_report():
    """The report's block layer (JSON "blocks"): the same figures, the
    tensors at the peak and never released by the driving program's lines,
    the cache per segment class at the peak."""
    r, t, own = traced()
    try:
        rep = cmtest.report(r.trace)
        b = rep["blocks"]
        check(b is not None, "no blocks object in the report")
        eq((b["framework"], b["version"], b["backend"], b["events"]), ("pytorch", "2.11.0+sim", "native", 16),
           "the block layer's identity")
        eq((b["peak_allocated_bytes"], b["peak_reserved_bytes"]), (33558528, 35651584), "peaks")
        eq((b["leaked_blocks"], b["leaked_bytes"], b["inconsistencies"]), (3, 15 * MiB + 3072, 0),
           "tensor leaks and inconsistencies")
        d = b["devices"][0]
        eq((d["allocated_at_exit_bytes"], d["reserved_at_exit_bytes"]), (15 * MiB + 3072, 22 * MiB), "at exit")
        p = d["at_peak"]
        eq((p["allocated_bytes"], p["reserved_bytes"], p["unallocated_bytes"]),
           (33558528, 35651584, 35651584 - 33558528), "the cache at the peak")
        eq([(c["class"], c["segments"], c["reserved_bytes"], c["allocated_bytes"], c["largest_free_bytes"])
            for c in p["size_classes"]],
           [("small", 1, 2 * MiB, 4096, 2 * MiB - 4096), ("large", 1, 20 * MiB, 20 * MiB, 0),
            ("huge", 1, 12 * MiB, 12 * MiB, 0)], "size classes at the peak")
        src = "blocks_train.c"

        def line(site):
            f = site["frames"][site["site_frame"]]
            check(f["file"].endswith(src), f"site named by {f['file']}, not {src}")
            return f["line"]

        lines = {}
        with open(os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "blocks", src)) as f:
            for i, text in enumerate(f, 1):
                for v in "abcdef":
                    if f"void *{v} = c10_double_alloc" in text:
                        lines[v] = i
        eq([(line(s), s["bytes"]) for s in p["sites"]],
           [(lines["d"], 15 * MiB), (lines["f"], 12 * MiB), (lines["c"], 5 * MiB), (lines["b"], 3072),
            (lines["a"], 1024)], "tensors at the peak by line")
        eq([(line(s), s["bytes"], s["blocks"]) for s in d["leaks"]],
           [(lines["d"], 15 * MiB, 1), (lines["e"], 2048, 1), (lines["a"], 1024, 1)], "tensors never released")
        text = cmtest.cli("report", "--chart-width", "0", r.trace).stdout
        check("PyTorch's tensors (block layer of its caching allocator 2.11.0+sim, 16 allocator events)" in text, text)
        # The report leads with the tensors: their section comes before the device's.
        check(text.index("PyTorch's tensors") < text.index("\nDevice 0: peak"), text)
        check("  tensors alive at exit: 15.0 MiB (15731712 B) in 3 tensors" in text, text)
        # No steps (a C program driving the allocator): nothing kept step after step.
        check("kept step after step (leaks)" not in text, text)
        # With the block layer the held-at-exit section points to it rather
        # than to PYTORCH_NO_CUDA_MEMORY_CACHING=1.
        check("the tensors inside these segments were recorded too (PyTorch's block layer)" in text, text)
        check("To tell them apart" not in text, text)
        held = [h for h in rep["held_at_exit"] if h["holder"] == "PyTorch"]
        eq([(h["tensors_recorded"], h["advice"]) for h in held],
           [(True, "the tensors inside these segments were recorded too (PyTorch's block layer): \"PyTorch's "
                   "tensors\" shows them, and tensors kept step after step are leaks there")],
           "JSON (and the HTML page) point to the block layer too")
    finally:
        cmtest.cleanup(r)


def test_check():
    """Tensors alive at exit that no step kept one after another are not
    leaks by default (a note says so); --tensors-alive-at-exit checks every
    one, as leaks, with the cache on."""
    r, t, own = traced()
    try:
        import json
        p = cmtest.cli("check", "--format", "json", r.trace)
        eq(p.returncode, 0, f"check's exit status: {p.stdout}")
        tr = json.loads(p.stdout)["traces"][0]
        eq((tr["leaks"]["tensor_count"], tr["leaks"]["tensor_bytes"], tr["leaks"]["tensor_alive_count"],
            tr["leaks"]["tensor_alive_bytes"]), (0, 0, 3, 15 * MiB + 3072), "tensors: none kept, 3 alive")
        check(any("15.0 MiB in 3 tensors alive at exit were not kept step after step" in n for n in tr["notes"]),
              tr["notes"])
        p = cmtest.cli("check", "--format", "json", "--tensors-alive-at-exit", r.trace)
        eq(p.returncode, 1, "check's exit status")
        tr = json.loads(p.stdout)["traces"][0]
        eq((tr["leaks"]["tensor_count"], tr["leaks"]["tensor_bytes"]), (3, 15 * MiB + 3072), "tensor leaks")
        tensor = [f for f in tr["findings"] if "never released" in f["message"]]
        eq(len(tensor), 3, f"tensor leak findings in {[f['message'] for f in tr['findings']]}")
    finally:
        cmtest.cleanup(r)


def test_workspace():
    """A cuBLAS workspace PyTorch keeps to exit, allocated through its cache
    under at::cuda::getCurrentCUDABlasHandle, and an ordinary tensor of the
    same operation, both kept to exit (blocks_train workspace): folding files
    both under aten::addmm at one line of blocks_train.c, and the default
    suppression still matches the workspace by its own stack as recorded, so
    only the 4 MiB tensor is a leak (the regression of commit a10bfba), in
    report as in check (the same suppressions, the same figures)."""
    r = cmtest.run([TRAIN, DOUBLE, "workspace"])
    try:
        check(r.proc.returncode == 0, f"blocks_train workspace failed ({r.proc.returncode}): {r.proc.stderr}")
        eq([int(x) for x in r.proc.stdout.split()][:4], [36 * MiB, 52 * MiB, 36 * MiB, 52 * MiB],
           "the double's own figures (allocated, reserved, peaks)")
        rep = cmtest.report(r.trace)
        dev = rep["blocks"]["devices"][0]
        leaks = dev["leaks"]
        eq([(s["bytes"], s["blocks"]) for s in leaks], [(4 * MiB, 1)], "the folded site, the workspace aside")
        eq([(s["bytes"], s["blocks"], s["suppression"]["pattern"], s["suppression"]["reason"])
            for s in dev["suppressed"]],
           [(32 * MiB, 1, "at::cuda::getCurrentCUDABlasHandle", "PyTorch's cuBLAS and cuBLASLt workspaces")],
           "the workspace, suppressed by its own stack")
        eq((rep["blocks"]["leaked_bytes"], rep["blocks"]["leaked_blocks"], rep["blocks"]["suppressed_bytes"],
            rep["blocks"]["suppressed_blocks"]), (4 * MiB, 1, 32 * MiB, 1), "the report's tensor totals")
        whole = cmtest.report(r.trace, "--no-default-suppressions")["blocks"]["devices"][0]["leaks"]
        eq([(s["bytes"], s["blocks"]) for s in whole], [(36 * MiB, 2)], "one folded site of both tensors")
        site = whole[0]
        eq([f["function"] for f in site["frames"][:site["site_frame"]]], ["aten::addmm"], "the folded operation")
        line = 0
        with open(os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "e2e", "blocks", "blocks_train.c")) as f:
            for i, text in enumerate(f, 1):
                if "= c10_double_addmm(" in text:
                    line = i
        f = site["frames"][site["site_frame"]]
        check(f["file"].endswith("blocks_train.c") and f["line"] == line, f"site {f['file']}:{f['line']}")

        p = cmtest.cli("check", r.trace)
        eq(p.returncode, 0, f"by default neither tensor is kept step after step: {p.stdout}{p.stderr}")
        p = cmtest.cli("check", "--tensors-alive-at-exit", r.trace)
        eq(p.returncode, 1, f"check's exit status: {p.stdout}{p.stderr}")
        found = [ln for ln in p.stdout.splitlines() if "[leak]" in ln]
        eq(len(found), 1, f"leak findings in {p.stdout}")
        check(found[0].endswith(f"blocks_train.c:{line}: error: leaked 4.0 MiB in 1 tensor never released "
                                "(PyTorch's block layer, device 0) [leak]"), found[0])
        check("leaked 4.0 MiB in 1 tensor never released (32.0 MiB in 1 tensor suppressed); " in p.stdout, p.stdout)

        import json
        p = cmtest.cli("check", "--format", "json", "--tensors-alive-at-exit", r.trace)
        eq(p.returncode, 1, "check's exit status (JSON)")
        tr = json.loads(p.stdout)["traces"][0]
        lk = tr["leaks"]
        eq((lk["tensor_bytes"], lk["tensor_count"], lk["tensor_suppressed_bytes"], lk["tensor_suppressed_count"]),
           (4 * MiB, 1, 32 * MiB, 1), "the JSON's tensor figures")
        eq((lk["bytes"], lk["count"], lk["suppressed_bytes"], lk["suppressed_count"]),
           (rep["leaks"]["bytes"], rep["leaks"]["count"], rep["leaks"]["suppressed"]["bytes"],
            rep["leaks"]["suppressed"]["count"]), "check's leak totals are the report's")
        eq((lk["tensor_bytes"], lk["tensor_count"], lk["tensor_suppressed_bytes"], lk["tensor_suppressed_count"]),
           (rep["blocks"]["leaked_bytes"], rep["blocks"]["leaked_blocks"], rep["blocks"]["suppressed_bytes"],
            rep["blocks"]["suppressed_blocks"]), "check's tensor totals are the report's")
        eq([(f["rule"], f["bytes"]) for f in tr["findings"]], [("leak", 4 * MiB)], "findings (JSON)")

        p = cmtest.cli("check", "--print-suppressions", "--tensors-alive-at-exit", r.trace)
        n = 0
        with open(os.path.join(os.environ["CMT_SOURCE_ROOT"], "analyzer", "check", "default.supp")) as f:
            for i, text in enumerate(f, 1):
                if text.strip() == "leak:at::cuda::getCurrentCUDABlasHandle":
                    n = i
        check(f"            1    32.0 MiB  leak:at::cuda::getCurrentCUDABlasHandle (default list, line {n})\n"
              in p.stdout, p.stdout)
        check("suppressions used: 1 of " in p.stdout, p.stdout)
    finally:
        cmtest.cleanup(r)


def test_expandable():
    """Segments mapped as expandable segments map them (cuMemCreate and
    cuMemMap through the driver's entry points): the attach is made at the
    first cuMemCreate (its caller found through the shim's own frames), the
    figures are the same."""
    r, t, own = traced({"CMT_DOUBLE_EXPANDABLE": "1"})
    try:
        eq(own[4], 1, "trackers attached to the double")
        apis = [e.api for e in t.blocks]
        eq((apis.count(56), apis.count(57), apis.count(SEG_ALLOC)), (3, 1, 0), "maps, unmaps, segment records")
        b = cmtest.report(r.trace)["blocks"]
        eq((b["peak_allocated_bytes"], b["peak_reserved_bytes"], b["leaked_blocks"], b["inconsistencies"]),
           (own[2], own[3], 3, 0), "the block layer's figures")
    finally:
        cmtest.cleanup(r)


def test_h200_traces():
    """Two traces of samples/gpu/train_mlp.py --keep 4 recorded on the H200
    (torch 2.11.0+cu130, run_blocks_validation.sh, 2026-12-02): the block
    layer's peaks are PyTorch's own max_memory_allocated() and
    max_memory_reserved() to the byte, with the default allocator and with
    expandable segments (whose blocks split any rest of 512 bytes or more)."""
    data = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "data", "blocks")
    for name, allocated, reserved, leaked in (("h200_train_mlp.bin", 8831542784, 10687086592, 7),
                                              ("h200_train_mlp_expandable.bin", 8827348480, 8896118784, 3)):
        b = cmtest.report(os.path.join(data, name))["blocks"]
        eq((b["peak_allocated_bytes"], b["peak_reserved_bytes"], b["inconsistencies"], b["leaked_blocks"]),
           (allocated, reserved, 0, leaked), name)


def test_h200_oom():
    """samples/gpu/train_mlp.py --batch 400000 on the H200 (torch 2.11.0+cu130,
    2026-12-02): a real torch.OutOfMemoryError. PyTorch said 544.00 KiB was
    reserved but unallocated; the block layer's OOM record says the same, so
    the fatal failure is capacity by PyTorch's own record (R12), its retry
    the same failure, and no allocator setting is suggested, while the
    earlier 12.2 GiB failure, which the allocator's own release and retry
    served, keeps them (caching, R1). Read here, where neither PyTorch nor
    the recorded modules exist: the same verdicts. The replay of the usual
    settings fails there under each (roundup_power2_divisions:4 before
    it): the tensors' peak must be 2991947776 B smaller (the 3276800000 B
    asked less the cache's 557056 B and the device's 284295168 B free),
    most of it the rest (134388645888 B, no steps marked)."""
    rep = cmtest.report(os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "data", "blocks", "h200_train_mlp_oom.bin"))
    cases = rep["oom"]["cases"]
    eq([(c["verdict"], c["rule"], c["size"], c["allocator_retries"]) for c in cases],
       [("caching", "R1", 13107200000, 0), ("capacity", "R12", 3277848576, 1)],
       "the failures: PyTorch's record decides the fatal one, its retry folded in")
    eq(cases[0]["allocator_oom"], None, "the served failure has no allocator OOM")
    check("expandable_segments:True" in cases[0]["what_to_try"], cases[0]["what_to_try"])
    for c in cases[1:]:
        eq((c["allocator_oom"]["verdict"], c["allocator_oom"]["unallocated"],
            c["allocator_oom"]["expandable_segments_would_serve"]), ("capacity", 557056, False), "PyTorch's OOM record")
        eq(c["what_to_try"], "the tensors' peak must be 2.8 GiB (2991947776 B) smaller for this request to fit; the "
           "rest hold most of it: 125.2 GiB at the tensors' peak, 90% of the device memory then: release the tensors "
           "kept across steps or made outside them once used; no allocator setting serves it (all 6 replayed run "
           "out): release or reuse what the call sites hold before this point, use smaller batches, or a GPU with "
           "more memory", "what to try")
        p = c["replayed"]
        eq((p["reproduced"], p["short_by_bytes"], p["category"]["category"], p["category"]["bytes"], p["best"]),
           (True, 2991947776, "other", 134388645888, None), "the replay")
        eq([(x["label"], x["outcome"], x["verdict"]) for x in p["settings"]],
           [("the defaults", "fails-here", "capacity"), ("expandable_segments:True", "fails-here", "capacity"),
            ("max_split_size_mb:128", "fails-here", "capacity"), ("max_split_size_mb:512", "fails-here", "capacity"),
            ("roundup_power2_divisions:4", "fails-before", "capacity"),
            ("garbage_collection_threshold:0.6", "fails-here", "capacity")], "each setting")


def test_unknown_version():
    """A release the bridge has no layout for: nothing attached, a note says why."""
    r, t, own = traced(double=DOUBLE_OLD)
    try:
        eq(own[4], 0, "trackers attached to the double")
        eq(t.blocks, [], "block records")
        eq(notes(t), ["PyTorch block layer off: PyTorch 2.4.1 is not a release this build knows the allocator of "
                      "(it knows 2.11): driver layer only; CUMEMTRACE_TORCH_LAYOUT gives its layout"], "notes")
        eq([(fw, t.strings.get(v), st) for fw, v, st, b in t.allocators], [(1, "2.4.1", 1)], "ALLOCATOR record")
    finally:
        cmtest.cleanup(r)


def test_bad_override():
    r, t, own = traced({"CUMEMTRACE_TORCH_LAYOUT": "attach=43,name=48"})
    try:
        eq(own[4], 0, "trackers attached to the double")
        eq(notes(t), ["PyTorch block layer off: CUMEMTRACE_TORCH_LAYOUT is not a layout line of "
                      "samples/gpu/torch_layout_probe.cpp: set it to the probe's output, or unset it"], "notes")
    finally:
        cmtest.cleanup(r)


def test_override():
    """The probe's line by hand: the same layer as the built-in layout."""
    line = "attach=44,name=49,action=0,device=4,addr=8,stream=32,size=40,mempool=48,actions=0:1:2:3:4:5:6:7:8"
    r, t, own = traced({"CUMEMTRACE_TORCH_LAYOUT": line}, DOUBLE_OLD)
    try:
        eq(own[4], 1, "trackers attached to the double")
        eq(len(t.blocks), 16, "block records")
    finally:
        cmtest.cleanup(r)


def test_off():
    r, t, own = traced({"CUMEMTRACE_BLOCKS": "0"})
    try:
        eq((own[4], t.blocks, t.allocators, notes(t)), (0, [], [], []), "trackers, records, ALLOCATOR, notes")
        eq(len([e for e in t.events if e.type == cmt_trace.REC_ALLOC]), 3, "driver allocations still recorded")
    finally:
        cmtest.cleanup(r)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
