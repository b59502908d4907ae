# SPDX-License-Identifier: MIT
"""End-to-end: `cumemtrace whatif` (issue 28) and the report's "What if".

The H200 traces of tests/data/blocks (torch 2.11.0+cu130, train_mlp.py)
replayed under their own settings give PyTorch's own max_memory_reserved()
and max_memory_allocated() to the byte; under the other settings, the
model's predictions (the real runs under them: docs/report.md, "What if",
the matrix). gen_whatif_trace writes a run whose every figure under every
setting follows from PyTorch's rules by hand (its comment says how): a
segment freed and retried before a failure, empty_cache(), two streams,
steps, a memory fraction found from an out-of-memory error. torch_train
with PYTORCH_NO_CUDA_MEMORY_CACHING=1 on the simulated device: a cudaMalloc
per tensor, replayed with the cache."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

DATA = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "data", "blocks")
GEN = cmtest.program("gen_whatif_trace")
TRAIN = cmtest.program("torch_train")


def whatif(trace, *opts, status=0):
    p = cmtest.cli("whatif", "--json", *opts, trace)
    eq(p.returncode, status, f"whatif {' '.join(opts)}: {p.stderr}")
    cmtest.check_catalogued(p.stderr)
    return json.loads(p.stdout)


def rows(dev):
    return {r["setting"]: r for r in dev["settings"]}


SCRATCH = tempfile.mkdtemp(prefix="cmt-whatif-")
atexit.register(shutil.rmtree, SCRATCH, True)


def generated(*flags):
    path = os.path.join(SCRATCH, "run%s.bin" % "".join(flags).replace("-", "_"))
    p = subprocess.run([GEN, path, *flags], capture_output=True, text=True)
    eq(p.returncode, 0, f"gen_whatif_trace: {p.stderr}")
    return path


def test_h200_recorded():
    """Each trace under its own settings (inferred: traces before format
    2.4 did not record them; the first segment was mapped or not): the
    recorded peaks to the byte."""
    for name, setting, reserved, allocated in (
            ("h200_train_mlp.bin", "", 10687086592, 8831542784),
            ("h200_train_mlp_expandable.bin", "expandable_segments:True", 8896118784, 8827348480),
            ("h200_train_mlp_oom.bin", "", 149107507200, 149106950144)):
        w = whatif(os.path.join(DATA, name))
        eq((w["source"], w["recorded_settings"]["known"], w["recorded_settings"]["inferred"]), ("blocks", False, True),
           name)
        dev = w["devices"][0]
        eq(len(dev["settings"]), 1, f"{name}: the recorded settings only, none asked")
        r = dev["settings"][0]
        eq((r["setting"], r["recorded"], r["peak_reserved_bytes"], r["peak_allocated_bytes"]),
           (setting, True, reserved, allocated), name)
        eq((dev["recorded"]["peak_reserved_bytes"], dev["recorded"]["peak_allocated_bytes"], dev["replays_exactly"]),
           (reserved, allocated, True), name)


def test_h200_compare():
    """--compare on the H200 traces: the candidates' reserves as the model
    replays them (the real runs under two of them are the other trace: 4 MiB
    apart, as their tensors' peaks are), and the out-of-memory run fails
    the recorded request under every candidate, a capacity verdict with how
    much the peak must shrink."""
    w = whatif(os.path.join(DATA, "h200_train_mlp.bin"), "--compare")
    dev = w["devices"][0]
    eq({k: r["peak_reserved_bytes"] for k, r in rows(dev).items()},
       {"": 10687086592, "expandable_segments:True": 8900313088, "max_split_size_mb:128": 12159287296,
        "max_split_size_mb:512": 10687086592, "roundup_power2_divisions:4": 10745806848,
        "garbage_collection_threshold:0.6": 10687086592}, "reserved peaks")
    eq((dev["best"], rows(dev)["garbage_collection_threshold:0.6"]["garbage_collection_inert"]),
       ("expandable_segments:True", True), "best, inert garbage collection")
    eq(rows(dev)[""]["recorded"] and not rows(dev)[""]["out_of_memory"], True, "the recorded row fits")
    w = whatif(os.path.join(DATA, "h200_train_mlp_expandable.bin"), "--set", "default")
    eq([(r["setting"], r["peak_reserved_bytes"]) for r in w["devices"][0]["settings"]],
       [("expandable_segments:True", 8896118784), ("", 10682892288)], "the defaults from the expandable run")
    w = whatif(os.path.join(DATA, "h200_train_mlp_oom.bin"), "--compare")
    dev = w["devices"][0]
    eq(dev["best"], None, "nothing fits")
    f = rows(dev)[""]["first_failure"]
    eq((f["verdict"], f["requested_bytes"], f["short_by_bytes"], f["recorded_run_failed_it"]),
       ("capacity", 3276800000, 2991947776, True), "the recorded failure, replayed")
    check(f["site"].endswith("train_mlp.py:44"), f["site"])
    eq((f["allocated_bytes"] + f["rounded_bytes"] - f["room_bytes"]), f["short_by_bytes"], "short by")


# torch_workloads.py on an H100 80GB (torch 2.11.0+cu130, 2026-12-06,
# run_tensor_validation.sh's matrix part): each run under the default
# allocator stored in tests/data/whatif, and what PyTorch itself said when
# the same workload ran under each setting (json/NAME.json of that run:
# max_memory_reserved(), and whether it raised torch.OutOfMemoryError).
# Under roundup_power2_divisions:4 frag_oom's first tensor (n x 424 MiB)
# rounds past the device: that run failed at once, reserving nothing.
H100 = {
    "h100_train.bin": {"": (6150946816, False), "expandable_segments:True": (5874122752, False),
                       "max_split_size_mb:128": (6218055680, False), "max_split_size_mb:512": (6150946816, False),
                       "roundup_power2_divisions:4": (6209667072, False)},
    "h100_varlen.bin": {"": (4347396096, False), "expandable_segments:True": (3527409664, False),
                        "max_split_size_mb:128": (16970153984, False), "max_split_size_mb:512": (4347396096, False),
                        "roundup_power2_divisions:4": (4689231872, False),
                        "garbage_collection_threshold:0.6": (4347396096, False)},
    "h100_frag_oom.bin": {"": (83584090112, True), "expandable_segments:True": (83592478720, False),
                          "max_split_size_mb:128": (84028686336, False), "max_split_size_mb:512": (84028686336, False),
                          "roundup_power2_divisions:4": (0, True), "garbage_collection_threshold:0.6": (83584090112, True)},
    "h100_capacity_oom.bin": {"": (83751862272, True), "expandable_segments:True": (83760250880, True),
                              "max_split_size_mb:128": (83751862272, True), "max_split_size_mb:512": (83751862272, True),
                              "roundup_power2_divisions:4": (83751862272, True)},
}


def test_h100_matrix():
    """Each H100 run under the defaults, replayed under every setting of
    the matrix: PyTorch's own max_memory_reserved() of the real run under
    that setting to the byte (up to the first failure for a setting that
    runs out: what a program that stops there reaches), and the same
    out-of-memory verdict. varlen's max_split_size_mb:128 quadruples the
    reserve; frag_oom's fragmentation goes with expandable segments or a
    split limit, and gets worse with roundup_power2_divisions."""
    data = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "data", "whatif")
    for name, real in H100.items():
        args = []
        for setting in real:
            args += ["--set", setting or "default"]
        w = whatif(os.path.join(data, name), *args)
        dev = w["devices"][0]
        eq((w["recorded_settings"]["known"], dev["replays_exactly"], dev["name"]), (True, True, "NVIDIA H100 80GB HBM3"),
           name)
        got = {k: (r["peak_reserved_bytes"], r["out_of_memory"]) for k, r in rows(dev).items()}
        eq(got, real, name)
    w = whatif(os.path.join(data, "h100_frag_oom.bin"), "--set", "expandable_segments:True")
    d, e = rows(w["devices"][0])[""], rows(w["devices"][0])["expandable_segments:True"]
    f = d["first_failure"]
    eq((f["verdict"], f["requested_bytes"], f["recorded_run_failed_it"], e["served_recorded_failures"]),
       ("fragmentation", 1 << 30, True, 1), "frag_oom: 1 GiB stranded in 424 MiB holes, served by expandable segments")


def test_generated():
    """gen_whatif_trace's run: every figure worked out in its comment."""
    path = generated()
    w = whatif(path, "--compare")
    eq((w["recorded_settings"]["known"], w["recorded_settings"]["variable"], w["empty_cache_calls"]),
       (True, None, 1), "2.4 settings (none set), one empty_cache()")
    dev = w["devices"][0]
    eq((dev["total_bytes"], dev["context_max_bytes"], dev["other_allocations_max_bytes"], dev["min_room_bytes"]),
       (1024 * MiB, 100 * MiB, 50 * MiB, 874 * MiB), "the device and its room")
    eq((dev["recorded"]["peak_reserved_bytes"], dev["recorded"]["peak_allocated_bytes"], dev["replays_exactly"]),
       (700 * MiB, 600 * MiB, True), "recorded")
    got = {k: (r["peak_reserved_bytes"], r["peak_allocated_bytes"], r["out_of_memory"], r["min_room_left_bytes"])
           for k, r in rows(dev).items()}
    eq(got, {"": (700 * MiB, 600 * MiB, False, 174 * MiB),
             "expandable_segments:True": (600 * MiB, 600 * MiB, False, 274 * MiB),
             "max_split_size_mb:128": (800 * MiB, 600 * MiB, False, 74 * MiB),
             "max_split_size_mb:512": (700 * MiB, 600 * MiB, False, 174 * MiB),
             "roundup_power2_divisions:4": (768 * MiB, 672 * MiB, False, 106 * MiB),
             "garbage_collection_threshold:0.6": (700 * MiB, 600 * MiB, False, 174 * MiB)}, "each setting")
    d = rows(dev)[""]
    eq((d["segments_made"], d["segments_released"], d["retries"], d["released_for_retry_bytes"],
        d["empty_cache_released_bytes"]), (4, 2, 1, 300 * MiB, 400 * MiB), "the defaults' segments")
    e = rows(dev)["expandable_segments:True"]
    eq((e["expandable_segments"], e["maps"], e["mapped_bytes"], e["unmaps"], e["unmapped_bytes"]),
       (2, 3, 660 * MiB, 1, 400 * MiB), "expandable segments: one per stream, D's pages unmapped")
    eq(rows(dev)["max_split_size_mb:128"]["released_for_retry_bytes"], 600 * MiB, "both oversize blocks freed for D")
    eq(dev["best"], "expandable_segments:True", "best")


def test_capacity():
    """On a 700 MiB device the context and the library still take 150 MiB:
    B does not fit in step 1 under either setting; 50 MiB too many."""
    w = whatif(generated(), "--capacity", "700MiB", "--set", "expandable_segments:True")
    eq(w["capacity_asked_bytes"], 700 * MiB, "capacity asked")
    dev = w["devices"][0]
    eq(dev["min_room_bytes"], 550 * MiB, "room")
    for k, r in rows(dev).items():
        f = r["first_failure"]
        eq((r["out_of_memory"], f["verdict"], f["requested_bytes"], f["short_by_bytes"], f["site"], f["phase"],
            f["recorded_run_failed_it"]),
           (True, "capacity", 300 * MiB, 50 * MiB, "Model.forward at model.py:11", "step 1", False), k)
    eq(rows(dev)[""]["failures"], 2, "B, and D later")
    p = cmtest.cli("whatif", "--capacity", "700MiB", generated())
    eq(p.returncode, 0, p.stderr)
    check("runs out at 900.0 us: a request of 300.0 MiB (314572800 B) at Model.forward at model.py:11, in step 1\n"
          in p.stdout, p.stdout)
    check("capacity: the tensors' peak must be 50.0 MiB smaller to fit" in p.stdout, p.stdout)


def test_fraction():
    """A request refused with the device not full: the memory fraction's
    limit, inferred from it, applies to the replays from there on; the
    releases before PyTorch's OOM record are its own, no empty_cache()."""
    w = whatif(generated("--fraction"), "--set", "expandable_segments:True")
    dev = w["devices"][0]
    eq((dev["memory_fraction_allowed_bytes"], dev["recorded_failures"], w["empty_cache_calls"]),
       (700 * MiB - 1, 1, 0), "the fraction's limit")
    d, e = rows(dev)[""], rows(dev)["expandable_segments:True"]
    f = d["first_failure"]
    eq((d["peak_reserved_bytes"], f["verdict"], f["phase"], f["recorded_run_failed_it"], dev["replays_exactly"]),
       (600 * MiB, "fraction", "step 2 > forward", True, True), "the defaults fail where the run did")
    eq((e["out_of_memory"], e["served_recorded_failures"], e["peak_reserved_bytes"], e["min_room_left_bytes"]),
       (False, 1, 660 * MiB, 40 * MiB - 1), "expandable segments serve D from the cache")


def test_uncached():
    """PYTORCH_NO_CUDA_MEMORY_CACHING=1: three tensors of 20, 6 and 8 MiB,
    each a cudaMalloc; with the cache, 20 MiB of its own and a 20 MiB
    segment the 6 and then the 8 MiB tensors split."""
    r = cmtest.run([TRAIN], env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    try:
        eq(r.proc.returncode, 0, r.proc.stderr)
        w = whatif(r.trace, "--set", "expandable_segments:True")
        eq(w["source"], "uncached", "source")
        dev = w["devices"][0]
        eq((dev["tensor_requests"], dev["recorded"]["peak_reserved_bytes"]), (3, 28 * MiB), "recorded")
        eq({k: (x["peak_reserved_bytes"], x["peak_allocated_bytes"]) for k, x in rows(dev).items()},
           {"": (40 * MiB, 28 * MiB), "expandable_segments:True": (40 * MiB, 28 * MiB)}, "with the cache")
        p = cmtest.cli("whatif", r.trace)
        check("with PyTorch's cache these requests would reserve as below" in p.stdout, p.stdout)
        rep = cmtest.report(r.trace)
        eq(rep["whatif"]["source"], "uncached", "the report's what if")
    finally:
        cmtest.cleanup(r)


ASSUMES = ("each cudaMalloc PyTorch made for a tensor is that tensor's request, of the bytes it asked (with the cache "
           "off PyTorch asks cudaMalloc for the tensor's own size), and each cudaFree its release, done at once (with "
           "the cache off PyTorch frees at once); every request on one stream (a cudaMalloc names none, so a program "
           "on several streams would keep a pool per stream and reserve more); the program asks for the same tensors "
           "in the same order with its cache on; PyTorch's tensors are told from its other allocations by their "
           "stacks")
PYTORCH_GEN = cmtest.program("gen_pytorch_trace")


def pytorch_generated(*flags):
    path = os.path.join(SCRATCH, "pt%s.bin" % "".join(flags).replace("-", "_"))
    p = subprocess.run([PYTORCH_GEN, path, *flags], capture_output=True, text=True)
    eq(p.returncode, 0, f"gen_pytorch_trace: {p.stderr}")
    return path


def test_uncached_built():
    """gen_pytorch_trace --uncached (its comment works the figures out):
    PyTorch with its cache off, tensors of 6, 8, 20 and 4 MiB and one of
    79.5 GiB that failed, beside an extension's 32 MiB; with the cache:
    40 MiB reserved, 34 MiB allocated, and the 79.5 GiB 576 MiB too many
    under every setting. What the replay assumes is said in every format."""
    path = pytorch_generated("--uncached")
    w = whatif(path, "--compare")
    eq((w["source"], w["assumes"], w["reason"]), ("uncached", ASSUMES, None), "source")
    dev = w["devices"][0]
    eq((dev["tensor_requests"], dev["tensor_releases"], dev["recorded_failures"], dev["recorded"]["peak_reserved_bytes"],
        dev["recorded"]["peak_allocated_bytes"], dev["other_allocations_max_bytes"], dev["context_max_bytes"]),
       (4, 4, 1, 34 * MiB, 34 * MiB, 32 * MiB, 1024 * MiB), "the recorded tensors and what was outside them")
    for k, r in rows(dev).items():
        f = r["first_failure"]
        # roundup_power2_divisions:4 rounds 79.5 GiB up to 80 GiB (64, 80, 96, 112 GiB): 512 MiB more short
        rounded = 80 * 1024 * MiB if k == "roundup_power2_divisions:4" else 79 * 1024 * MiB + 512 * MiB
        eq((r["peak_reserved_bytes"], r["peak_allocated_bytes"], r["out_of_memory"], f["verdict"], f["requested_bytes"],
            f["rounded_bytes"], f["short_by_bytes"], f["recorded_run_failed_it"], f["site"], f["room_bytes"]),
           (40 * MiB, 34 * MiB, True, "capacity", 79 * 1024 * MiB + 512 * MiB, rounded,
            576 * MiB + rounded - (79 * 1024 * MiB + 512 * MiB), True, "forward at /home/u/proj/model.py:42",
            79 * 1024 * MiB - 32 * MiB), k or "the defaults")
    eq(rows(dev)[""]["segments_made"], 2, "t1's 20 MiB segment (t2 in its rest), t3's own")
    text = cmtest.cli("whatif", path).stdout
    check("with PyTorch's cache these requests would reserve as below\nassumes: " + ASSUMES + "\n" in text, text)
    check("capacity: the tensors' peak must be 576.0 MiB smaller to fit" in text, text)
    rep = cmtest.report(path)
    eq((rep["whatif"]["source"], rep["whatif"]["assumes"]), ("uncached", ASSUMES), "the report's JSON")
    text = cmtest.cli("report", "--chart-width", "0", path).stdout
    check("\nWhat if (PyTorch ran with its cache off; its tensors replayed with it; `cumemtrace whatif --compare` says "
          "more)\n  with PyTorch's cache these requests would reserve as below; this assumes " + ASSUMES + "\n" in text,
          text)
    html = cmtest.cli("report", "--format", "html", path).stdout
    check(json.dumps(ASSUMES)[1:-1] in html, "the HTML page's data")
    # the cache-off run's failure: its verdict (R4, the request alone too
    # large) keeps its advice, and says what the cache would have done
    found = ("with PyTorch's cache on (its cudaMalloc and cudaFree calls replayed as tensor requests through "
             "PyTorch's allocator on the recorded device, room for its cache 79.0 GiB at the tightest): the defaults "
             "fail here too; expandable_segments:True, max_split_size_mb:128, max_split_size_mb:512, "
             "roundup_power2_divisions:4 and garbage_collection_threshold:0.6 would not (capacity, each)")
    case = rep["oom"]["cases"][0]
    p = case["replayed"]
    eq((case["rule"], p["cache_off"], p["reproduced"], p["room_bytes"], p["short_by_bytes"], p["best"], p["found"],
        p["what_to_try"]), ("R4", True, True, 79 * 1024 * MiB - 32 * MiB, 576 * MiB, None, found, None),
       "the failure, replayed with the cache on")
    check(case["explanation"].endswith("; " + found) and case["what_to_try"].startswith("ask for less at once"),
          case)
    p = cmtest.cli("check", path)
    check("note: the failure at 2.0 ms (cudaMalloc of 79.5 GiB on device 0): capacity (rule R4), the verdict of the "
          "report's out-of-memory forensics; " + found + "; the report says what to try\n" in p.stdout, p.stdout)


def test_segments_only():
    """PyTorch's cache without the block layer (gen_pytorch_trace: segments
    made through the cache, one allocation that went around it): nothing to
    replay, and the report says so, and how to record what is needed,
    rather than replaying the one allocation as a cache-off run."""
    path = pytorch_generated()
    reason = ("whatif needs PyTorch's block layer (its tensors inside the cache's segments): this trace has the "
              "cache's segments only (recorded with CUMEMTRACE_BLOCKS=0, or by a shim before the block layer); "
              "record the program again with cumemtrace run, CUMEMTRACE_BLOCKS unset (the block layer is on by "
              "default for PyTorch 2.11)")
    w = whatif(path)
    eq((w["source"], w["reason"], w["devices"]), ("none", reason, []), "whatif")
    eq((cmtest.report(path)["whatif"]["source"], cmtest.report(path)["whatif"]["reason"]), ("none", reason),
       "the report's JSON")
    text = cmtest.cli("report", "--chart-width", "0", path).stdout
    check("\nWhat if: nothing replayed\n  " + reason + "\n" in text, text)
    html = cmtest.cli("report", "--format", "html", path).stdout
    check(json.dumps(reason)[1:-1] in html, "the HTML page's data")


def test_report():
    """The report runs the candidates too (JSON "whatif", a text section);
    --no-whatif leaves them out."""
    path = generated()
    rep = cmtest.report(path)
    eq(rep["whatif"]["devices"][0]["best"], "expandable_segments:True", "report JSON")
    eq(cmtest.report(path, "--no-whatif")["whatif"], None, "--no-whatif")
    p = cmtest.cli("report", path)
    check("\nWhat if (PyTorch's tensor requests replayed through its caching allocator" in p.stdout, p.stdout)
    check("    fits with the least reserve: expandable_segments:True (reserved peak 600.0 MiB, -100.0 MiB against "
          "the recorded run)\n" in p.stdout, p.stdout)


def test_needs_blocks():
    """A program of its own cudaMalloc calls: nothing to replay, said."""
    r = cmtest.run([cmtest.program("leak_peak")])
    try:
        w = whatif(r.trace)
        eq((w["source"], w["devices"]), ("none", []), "nothing replayed")
        eq(w["reason"], "whatif needs PyTorch's block layer: this trace has none, and no allocation PyTorch made with "
           "its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) to replay instead; it replays PyTorch's caching "
           "allocator only, so a program's own cudaMalloc calls have nothing to replay; a PyTorch program recorded "
           "with cumemtrace run has the block layer by default", "the reason, and how to record what is needed")
        check("What if" not in cmtest.cli("report", r.trace).stdout, "no section for a program of its own")
        eq(cmtest.report(r.trace)["whatif"], None, "no section in the report")
    finally:
        cmtest.cleanup(r)


def test_bad_options():
    path = generated()
    for args, what in ((["--set", "max_split_size_mb:10"], "whatif: --set 'max_split_size_mb:10': max_split_size_mb "
                                                           "must be at least 20"),
                       (["--set", "backend:cudaMallocAsync"], "whatif: --set 'backend:cudaMallocAsync': "
                                                              "backend:cudaMallocAsync is CUDA's stream-ordered"),
                       (["--set", "frobnicate:1"], "'frobnicate' is no key of PyTorch's caching allocator"),
                       (["--capacity", "lots"], "whatif: --capacity needs a device size such as 80GiB or 40GB, "
                                                "got 'lots'")):
        p = cmtest.cli("whatif", *args, path)
        eq(p.returncode, 2, f"{args}: {p.stdout}")
        check(what in p.stderr, p.stderr)
        cmtest.check_catalogued(p.stderr)
    p = cmtest.cli("whatif")
    eq((p.returncode, p.stderr.splitlines()[0]), (2, "cumemtrace: whatif: no trace given"), "no trace")
    p = cmtest.cli("whatif", path, path)
    eq(p.returncode, 2, "two traces")
    cmtest.check_catalogued(p.stderr)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
