# SPDX-License-Identifier: MIT
"""End-to-end: failed allocations of every verdict, fragmentation, waste,
churn, pools and device samples (docs/fragmentation.md), from
programs/oom_scenarios.c run under the shim on a simulated 16 GiB device
with no context overhead. Every figure asserted follows from the program's
sizes."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

GiB = 1024 * MiB
DEVICE = {"SIMCUDA_CAPACITY": "16GiB", "SIMCUDA_CONTEXT_BYTES": "0", "SIMCUDA_EXTERNAL_USED": "0",
          "SIMCUDA_DEVICES": "1", "SIMCUDA_POOL_GRANULARITY": "2MiB"}
UNLIMITED = 2**64 - 1


def scenario(name, program="oom_scenarios", env=None):
    e = dict(DEVICE)
    e.update(env or {})
    r = cmtest.run([cmtest.program(program), name], env=e)
    eq(r.proc.returncode, 0, f"{name}: exit status ({r.proc.stderr})")
    return r


def only_case(rep):
    eq(rep["oom"]["failures"], 1, "failures seen")
    eq(rep["oom"]["examined"], 1, "failures examined")
    eq(len(rep["oom"]["cases"]), 1, "cases")
    return rep["oom"]["cases"][0]


def sites(rows):
    return [(cmtest.first_function(s), s["bytes"], s["count"]) for s in rows]


def text_report(trace, *opts):
    p = cmtest.cli("report", *opts, trace)
    eq(p.returncode, 0, f"text report status ({p.stderr})")
    return p.stdout


def test_capacity():
    r = scenario("capacity")
    eq(r.proc.stdout, "hold=0 ask=2\n", "program output")
    rep = cmtest.report(r.trace)
    eq(rep["failed"][0]["verdict"], "capacity", "verdict in the failed list")
    c = only_case(rep)
    eq((c["api"], c["size"], c["device"], c["error"]), ("cudaMalloc", 6 * GiB, 0, "cudaErrorMemoryAllocation"),
       "the failed call")
    eq((c["verdict"], c["rule"]), ("capacity", "R5"), "verdict and rule")
    f = c["figures"]
    eq((f["live"], f["free"], f["total"], f["used"], f["shortfall"]), (12 * GiB, 4 * GiB, 16 * GiB, 12 * GiB, 2 * GiB),
       "figures")
    eq((f["unexplained"], f["context_allowance"], f["other_consumers"], f["pool_unused"]), (0, 0, 0, 0),
       "nothing but this process on the device")
    eq(c["live_by_kind"], {"device": 12 * GiB}, "live by kind")
    eq((c["span"]["allocations"], c["span"]["holes"], c["span"]["span_bytes"]), (1, 0, 12 * GiB), "span")
    eq(sites(c["top_sites"]), [("hold_data", 12 * GiB, 1)], "live call sites")
    eq(cmtest.first_function(c), "ask_for_more", "failing call site")
    eq((c["after"]["retried"], c["after"]["releases"]), (False, 1), "afterwards: frees its data, no retry")
    text = text_report(r.trace)
    check("verdict: capacity (rule R5): this process's live data (12.0 GiB) plus the request (6.0 GiB) and the "
          "context's share (0 B) exceed the device's 16.0 GiB: the data does not fit" in text, text)
    check("device 0 then: 4.0 GiB free of 16.0 GiB" in text, text)
    # Every sample is explained (no context, no other process on the device):
    # no "largest gap" row, the first and last samples say so (one device:
    # named in the heading, no line of its own).
    unexplained = text[text.index("\nDevice memory in use that this process"):]
    check(unexplained.splitlines()[1].endswith(" device samples of device 0:"), unexplained)
    eq([line.split()[0] for line in unexplained.splitlines()[2:]], ["first", "at"], "sample rows")
    rows = unexplained.splitlines()[2:]
    check(rows[0].endswith(": 12.0 GiB in use of 16.0 GiB: this process's allocations 12.0 GiB: all explained"),
          unexplained)
    check(rows[1].endswith(": 0 B in use of 16.0 GiB: this process's allocations 0 B: all explained"), unexplained)
    check("largest gap" not in text, text)
    cmtest.cleanup(r)


def test_fragmentation():
    r = scenario("fragmentation")
    eq(r.proc.stdout, "ask=2\n", "program output")
    rep = cmtest.report(r.trace)
    c = only_case(rep)
    eq((c["verdict"], c["rule"], c["size"]), ("fragmentation", "R10", 2 * GiB), "verdict, rule, request")
    f = c["figures"]
    eq((f["free"], f["live"], f["shortfall"], f["span_free"], f["largest_hole"]),
       (8 * GiB, 8 * GiB, 0, 7 * GiB, GiB), "figures")
    s = c["span"]
    eq((s["lo"], s["span_bytes"], s["allocations"], s["holes"], s["free_bytes"], s["largest_hole"]),
       (0x500000000000, 15 * GiB, 8, 7, 7 * GiB, GiB), "address span at the failure")
    eq(sites(c["top_sites"]), [("fill_block", 8 * GiB, 8)], "live call sites")
    frag = rep["fragmentation"]
    eq(frag["tracked_releases"], False, "report: no per-release tracking")
    eq(len(frag["devices"]), 1, "devices")
    w = frag["devices"][0]["worst"]
    eq((w["holes"]["holes"], w["holes"]["free_bytes"], w["holes"]["largest_hole"], w["holes"]["stranded_bytes"]),
       (7, 7 * GiB, GiB, 6 * GiB), "worst instant")
    eq(round(w["holes"]["ratio"], 4), round(1 - 1 / 7, 4), "fragmentation ratio")
    hole = w["largest_holes"][0]
    eq((hole["addr"], hole["size"], hole["left"]["addr"], hole["right"]["addr"]),
       (0x500000000000 + GiB, GiB, 0x500000000000, 0x500000000000 + 2 * GiB), "largest hole and its neighbours")
    eq((hole["left"]["live_at_exit"], hole["opened_by_stack_id"]), (False, None), "neighbour freed; opener unknown")
    eq(len(w["largest_holes"]), 7, "holes listed")
    pins = w["pinning_sites"]
    # Each hole counts once for its site, although both its sides are that site's.
    eq([(cmtest.first_function(p), p["hole_bytes"], p["holes"], p["allocations"]) for p in pins],
       [("fill_block", 7 * GiB, 7, 8)], "allocations bounding the holes")
    eq(frag["devices"][0]["at_exit"]["holes"], 0, "no holes at exit")
    text = text_report(r.trace)
    check("verdict: fragmentation (rule R10): the device had 8.0 GiB free, at least the 2.0 GiB asked for, but no "
          "free range that large; in this process's address span 7 holes held 7.0 GiB, the largest 1.0 GiB" in text,
          text)
    check("worst at" in text and "7 holes, 7.0 GiB free between live allocations, largest 1.0 GiB, fragmentation "
          "ratio 0.86 (6.0 GiB outside the largest hole, usable only by requests of 1.0 GiB or less)" in text, text)
    cmtest.cleanup(r)


def check_caching_pool(program, create_api, failed_api):
    r = scenario("caching", program)
    eq(r.proc.stdout, "pool=0 use=0 ask=2 trim=0 ask_again=0\n", "program output")
    rep = cmtest.report(r.trace)
    c = only_case(rep)
    eq((c["api"], c["size"], c["verdict"], c["rule"]), (failed_api, 8 * GiB, "caching", "R6"), "verdict")
    f = c["figures"]
    eq((f["free"], f["live"], f["shortfall"], f["pool_unused"], f["pool_unused_other"], f["other_consumers"]),
       (6 * GiB, 0, 2 * GiB, 10 * GiB, 10 * GiB, 0), "figures")
    eq((c["sample"]["pool_reserved"], c["sample"]["pool_used"]), (10 * GiB, 0), "pools in the failure sample")
    pools = {p["default"]: p for p in c["pools"]}
    eq((pools[True]["reserved"], pools[False]["reserved"], pools[False]["release_threshold"]),
       (0, 10 * GiB, UNLIMITED), "pools at the failure")
    a = c["after"]
    eq((a["pool_trims"], a["trimmed_bytes"], a["retried"], a["retry_error_code"], a["releases"]),
       (1, 10 * GiB, True, 0, 0), "trimmed, then the same request succeeded")
    created = [p for p in rep["pools"] if p["created_in_trace"]]
    eq(len(created), 1, "pools created")
    p = created[0]
    eq((p["create_api"], p["device"], p["max_size"], p["peak_reserved_bytes"], p["peak_unused_bytes"], p["trims"],
        p["destroyed"], p["reserved_bytes"]),
       (create_api, 0, 0, 10 * GiB, 10 * GiB, 1, True, 0), "the pool's life")
    eq(cmtest.first_function(p["created_by"]), "make_pool", "pool created by")
    eq(p["handle"], pools[False]["handle"], "the same pool")
    text = text_report(r.trace)
    check("verdict: caching (rule R6): the device had 6.0 GiB free, 2.0 GiB short of the request; stream-ordered "
          "pools held 10.0 GiB reserved but unused, enough to cover it" in text, text)
    check("cudaMemPoolTrimTo(pool, 0)" in text, text)
    check("afterwards this thread trimmed pools 1 time, giving back 10.0 GiB and asked for the same size again: "
          "success" in text, text)
    cmtest.cleanup(r)


def test_caching_pool():
    check_caching_pool("oom_scenarios", "cudaMemPoolCreate", "cudaMalloc")


def test_caching_pool_static():
    # The static runtime reaches cuMemPoolCreate through cuGetProcAddress.
    check_caching_pool("oom_scenarios_static", "cuMemPoolCreate", "cuMemAlloc")


def test_other_consumer():
    r = scenario("other")
    eq(r.proc.stdout, "hold=0 ask=2\n", "program output")
    rep = cmtest.report(r.trace)
    c = only_case(rep)
    eq((c["verdict"], c["rule"]), ("other-consumers", "R7"), "verdict")
    f = c["figures"]
    eq((f["free"], f["used"], f["live"], f["unexplained"], f["context_allowance"], f["other_consumers"],
        f["shortfall"]), (4 * GiB, 12 * GiB, 2 * GiB, 10 * GiB, GiB, 9 * GiB, 2 * GiB), "figures")
    samples = rep["device_samples"]
    eq(len(samples), 1, "devices sampled")
    s = samples[0]
    eq(s["samples"], 3, "start, failure, exit")
    eq((s["first"]["why"], s["first"]["unexplained"], s["first"]["live"]), ("start", 0, 2 * GiB), "first sample")
    eq((s["largest_unexplained"]["why"], s["largest_unexplained"]["unexplained"]), ("failure", 10 * GiB),
       "largest unexplained memory: the other consumer")
    eq((s["last"]["why"], s["last"]["unexplained"], s["last"]["live"]), ("exit", 10 * GiB, 0), "exit sample")
    text = text_report(r.trace)
    # the context's share is an estimate: both bounds are said
    check("verdict: other consumers (rule R7): the device had 4.0 GiB free, 2.0 GiB short of the request; at least "
          "9.0 GiB of the 12.0 GiB in use are not this process's, 10.0 GiB if its context holds nothing" in text, text)
    check("nvidia-smi lists the processes" in text, text)
    check("largest gap" in text and "not explained 10.0 GiB" in text, text)
    cmtest.cleanup(r)


def test_context_allowance():
    r = scenario("other")
    # All 10 GiB of unexplained memory granted to the context: the data does not fit.
    c = only_case(cmtest.report(r.trace, "--context-allowance", "10GiB"))
    eq((c["verdict"], c["rule"], c["figures"]["context_allowance"]), ("capacity", "R5", 10 * GiB), "allowance 10GiB")
    c = only_case(cmtest.report(r.trace, "--context-allowance", "0"))
    eq((c["verdict"], c["rule"], c["figures"]["other_consumers"]), ("other-consumers", "R7", 10 * GiB), "allowance 0")
    p = cmtest.cli("report", "--context-allowance", "lots", r.trace)
    eq(p.returncode, 2, "bad allowance: usage error")
    check("--context-allowance needs a size" in p.stderr, p.stderr)
    cmtest.cleanup(r)


def test_caching_retry():
    r = scenario("retry")
    eq(r.proc.stdout, "cache=0 hold=0 cached_malloc=0\n", "program output")
    rep = cmtest.report(r.trace)
    c = only_case(rep)
    eq((c["verdict"], c["rule"], c["size"]), ("caching", "R1", 6 * GiB), "verdict")
    a = c["after"]
    eq((a["released_bytes"], a["releases"], a["retried"], a["retry_error_code"]), (12 * GiB, 4, True, 0),
       "released the cache, retried, succeeded")
    eq(sites(c["top_sites"]), [("cache_fill", 12 * GiB, 4), ("hold_data", 2 * GiB, 1)], "live call sites")
    eq(cmtest.first_function(c), "cached_malloc", "failing call site")
    text = text_report(r.trace)
    check("verdict: caching (rule R1): a caching allocator held freed memory: right after the failure this thread "
          "released 12.0 GiB in 4 allocations and asked for the same 6.0 GiB again, which succeeded" in text, text)
    cmtest.cleanup(r)


def test_torch_fragmentation():
    # The failing call comes from a caching allocator named like PyTorch's:
    # the verdict's advice names PyTorch's remedies. It asked twice with
    # nothing cached to release, so neither attempt is the retry rule's
    # (R1); the second is the allocator's own retry: one failure, one case.
    r = scenario("torch_fragmentation")
    eq(r.proc.stdout, "ask=2\n", "program output")
    rep = cmtest.report(r.trace)
    eq((rep["oom"]["failures"], rep["oom"]["examined"]), (2, 1), "two calls, one failure examined")
    (first,) = rep["oom"]["cases"]
    eq(first["allocator_retries"], 1, "the allocator's retry folded in")
    for c in (first,):
        eq((c["verdict"], c["rule"], c["size"], c["allocator"]), ("fragmentation", "R10", 2 * GiB, "PyTorch"),
           "verdict, rule, request, allocator")
        f = c["figures"]
        eq((f["free"], f["live"], f["shortfall"], f["span_free"], f["largest_hole"]),
           (8 * GiB, 8 * GiB, 0, 7 * GiB, GiB), "figures")
        check("expandable_segments:True" in c["what_to_try"] and "backend:cudaMallocAsync" in c["what_to_try"],
              c["what_to_try"])
        eq(cmtest.first_function(c), "fake_CUDACachingAllocator_alloc", "failing call site")
    eq((first["after"]["retried"], first["after"]["retry_error_code"], first["after"]["released_bytes"]),
       (True, 2, 0), "the allocator asked again at once, released nothing, failed again")
    text = text_report(r.trace)
    check("this allocation came from PyTorch's caching allocator: set PYTORCH_CUDA_ALLOC_CONF="
          "expandable_segments:True" in text, text)
    cmtest.cleanup(r)


def test_torch_capacity():
    # Through a caching allocator named like PyTorch's. The live data and the
    # request do not fit (R5): the allocator's cache may be what holds the
    # memory, so its settings are suggested. A request larger than the device
    # (R4) fits whatever the settings: none is suggested, and the report says
    # by how much it exceeds the device.
    r = scenario("torch_capacity")
    eq(r.proc.stdout, "hold=0 ask=2\n", "program output")
    rep = cmtest.report(r.trace)
    first = rep["oom"]["cases"][0]
    eq((first["verdict"], first["rule"], first["size"], first["allocator"]), ("capacity", "R5", 6 * GiB, "PyTorch"),
       "the live data and the request")
    check("expandable_segments:True" in first["what_to_try"], first["what_to_try"])
    cmtest.cleanup(r)
    r = scenario("torch_too_large")
    eq(r.proc.stdout, "ask=2\n", "program output")
    rep = cmtest.report(r.trace)
    eq((rep["oom"]["failures"], rep["oom"]["examined"]), (2, 1), "two calls, one failure examined")
    for c in rep["oom"]["cases"]:
        eq((c["verdict"], c["rule"], c["size"], c["allocator"]), ("capacity", "R4", 20 * GiB, "PyTorch"),
           "larger than the device")
        eq(c["explanation"], "the request alone (20.0 GiB) exceeds what the device can hold by 4.0 GiB: its 16.0 GiB "
           "less the context's share (0 B) leaves 16.0 GiB", "explanation")
        eq(c["what_to_try"], "ask for less at once: this one request is 4.0 GiB more than the device can hold "
           "(16.0 GiB), which no allocator setting changes; split the data into smaller batches or tiles, shard it "
           "across GPUs, or use a GPU with more memory", "what to try: no allocator setting")
    text = text_report(r.trace)
    check("PYTORCH_CUDA_ALLOC_CONF" not in text and "expandable_segments" not in text, text)
    check("verdict: capacity (rule R4): the request alone (20.0 GiB) exceeds what the device can hold by 4.0 GiB"
          in text, text)
    cmtest.cleanup(r)


def test_waste_and_churn():
    r = scenario("waste")
    rep = cmtest.report(r.trace)
    eq(rep["failed_count"], 0, "no failures")
    eq(rep["oom"]["cases"], [], "no cases")
    w = rep["waste"]
    # cudaMallocPitch(1000 x 10): pitch 1024, 24 B per row; cudaMalloc(1000): 24 B to 1024.
    eq((w["pitch_bytes"], w["rounding_bytes"]), (240, 24), "waste totals")
    eq([(cmtest.first_function(s), s["pitch_bytes"], s["pitch_allocations"], s["rounding_bytes"]) for s in w["sites"]],
       [("pitched", 240, 1, 0), ("odd_size", 0, 0, 24)], "waste by call site")
    churn = rep["churn"]
    eq([(cmtest.first_function(s), s["distinct_sizes"], s["allocations"], s["released"], s["min_size"],
         s["max_size"], s["pattern"]) for s in churn],
       [("churn_sizes", 40, 40, 40, MiB, 40 * MiB, "short-lived"),
        ("fake_CUDACachingAllocator_malloc", 11, 12, 0, 3 * MiB, 31 * MiB, "kept")],
       "size churn ranking (kept_sizes's 5 sizes are a few classes already: not listed)")
    eq(churn[0]["at_least"], False, "exact count")
    eq([(s["allocator"], s["call_paths"]) for s in churn], [("", 1), ("PyTorch", 2)],
       "a caching allocator's callers are one row")
    check("expandable_segments:True" in churn[1]["what_to_try"], churn[1]["what_to_try"])
    # 3, 6, ..., 18 MiB and 6, 11, ..., 31 MiB: 6 MiB is asked by both callers, so 11 distinct sizes.
    eq(churn[1]["bytes"], sum(i * 3 * MiB for i in range(1, 7)) + sum(i * 5 * MiB + MiB for i in range(1, 7)),
       "bytes")
    text = text_report(r.trace)
    check("Internal waste (granted beyond the request, summed over allocations): pitch padding 240 B, rounding to "
          "512 B 24 B" in text, text)
    check("40 distinct sizes (1.0 MiB to 40.0 MiB) in 40 allocations, 40 released during the run" in text, text)
    cmtest.cleanup(r)


def test_frag_command():
    r = scenario("fragmentation")
    p = cmtest.cli("frag", "--json", r.trace)
    eq(p.returncode, 0, f"frag status ({p.stderr})")
    out = json.loads(p.stdout)
    frag = out["fragmentation"]
    eq(frag["tracked_releases"], True, "frag tracks releases")
    opened = frag["holes_opened_by"]
    # Releases 1, 3, ..., 13 each open a hole between live neighbours; 15 is the
    # last block (the span shrinks); the releases after the failure are at the edge.
    eq([(cmtest.first_function(o), o["releases"], o["largest_hole"], o["hole_bytes"]) for o in opened],
       [("fill_block", 7, GiB, 7 * GiB)], "releases that opened holes")
    hole = frag["devices"][0]["worst"]["largest_holes"][0]
    eq(hole["opened_by_stack_id"], opened[0]["stack_id"], "the worst hole's opener")
    eq(out["oom"]["cases"][0]["verdict"], "fragmentation", "same verdict as the report")
    series = frag["devices"][0]["series"]
    check(len(series) >= 3, f"series: {series}")
    eq(max(pt["holes"] for pt in series), 7, "most holes over time")
    text = cmtest.cli("frag", r.trace)
    eq(text.returncode, 0, "frag text status")
    check("opened at" in text.stdout and "by releasing an allocation from fill_block" in text.stdout, text.stdout)
    check("call sites whose releases opened holes" in text.stdout, text.stdout)
    plain = cmtest.report(r.trace, "--no-forensics")
    check("oom" not in plain and "fragmentation" not in plain and "churn" not in plain, sorted(plain))
    eq(plain["failed"][0]["verdict"], None, "no verdict without forensics")
    p = cmtest.cli("frag")
    eq(p.returncode, 2, "frag without a trace")
    check("frag: no trace given" in p.stderr, p.stderr)
    cmtest.cleanup(r)


def frag_figures(dev):
    e = dev["at_exit"]
    return (e["holes"], e["free_bytes"], e["largest_hole"], e["span_bytes"], e["address_space_bytes"],
            e["vmm_reserved_bytes"], e["vmm_mapped_bytes"])


def test_expandable_segments():
    # PyTorch's expandable_segments as a GPU lays it out (gen_expandable_trace.c
    # works the figures out): address space reserved beyond the device, the
    # driver's plain allocations on either side of the reservations and
    # 127 TiB apart. Holes are only the free ranges that can be memory.
    d = tempfile.mkdtemp(prefix="cmt-expandable-")
    trace = os.path.join(d, "expandable.bin")
    p = subprocess.run([cmtest.program("gen_expandable_trace"), trace], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_expandable_trace: {p.stderr}")
    hole_bytes = 768 * MiB + 1024
    address_space = (0x1b84000000 - 0x1b02240800) + (0x7fbda2000000 - 0x1b84100000)
    live = 1024 + 2 * 128 * 1024 + MiB + 2 * 64 * MiB
    want = (2, hole_bytes, 768 * MiB, live + hole_bytes, address_space, 98 * GiB, 80 * MiB)
    p = cmtest.cli("frag", "--json", trace)
    eq(p.returncode, 0, f"frag status ({p.stderr})")
    frag = json.loads(p.stdout)["fragmentation"]
    dev = frag["devices"][0]
    eq(dev["device_bytes"], 80 * GiB, "the device's memory, from its samples")
    eq(frag_figures(dev), want, "frag at exit: holes, bytes, largest, span, address space, reserved, mapped")
    w = dev["worst"]["holes"]
    eq((w["holes"], w["free_bytes"], w["stranded_bytes"], w["address_space_bytes"], w["between_regions_bytes"]),
       (2, hole_bytes, 1024, address_space, 0), "the worst instant")
    eq([(h["addr"], h["size"]) for h in dev["worst"]["largest_holes"]],
       [(0x7fbda6000000, 768 * MiB), (0x1b02220400, 1024)], "the holes: between the two workspaces, and s3's")
    eq([(o["releases"], o["hole_bytes"]) for o in frag["holes_opened_by"]], [(1, 1024)], "s3's release opened one")
    # The report finds the same by sorting at its checkpoints.
    rep = cmtest.report(trace)
    eq(frag_figures(rep["fragmentation"]["devices"][0]), want, "report at exit")
    text = cmtest.cli("frag", trace).stdout
    check("worst at 8.0 ms: 2 holes, 768.0 MiB free between live allocations, largest 768.0 MiB" in text, text)
    check("address space reserved (VMM) at exit: 98.0 GiB, mapped 80.0 MiB: not memory, no hole is counted in it"
          in text, text)
    check("address space between allocations at exit, left out of the span: 127.6 TiB (gaps with a VMM reservation "
          "or another process's memory mapped in them or wider than the device's 80.0 GiB: not free memory)" in text, text)
    check("TiB free" not in text and "TiB largest" not in text, text)
    shutil.rmtree(d, ignore_errors=True)
    # The H200's own run (tests/data/blocks): one hole of 768 MiB between
    # cuBLAS's two 64 MiB workspaces, not 127.1 TiB.
    h200 = os.path.join(os.environ["CMT_SOURCE_ROOT"], "tests", "data", "blocks", "h200_train_mlp_expandable.bin")
    p = cmtest.cli("frag", "--json", "--no-symbols", h200)
    eq(p.returncode, 0, f"frag status ({p.stderr})")
    dev = json.loads(p.stdout)["fragmentation"]["devices"][0]
    eq(frag_figures(dev), (1, 768 * MiB, 768 * MiB, 939788288, 139801489307648, 337758912512, 8896118784),
       "the H200's expandable_segments run at its last checkpoint")
    eq(dev["worst"], None, "no fragmentation: one hole")


def sample_reasons(trace):
    p = cmtest.cli("frag", "--json", trace)
    eq(p.returncode, 0, f"frag status ({p.stderr})")
    samples = json.loads(p.stdout)["device_samples"]
    eq(len(samples), 1, "devices sampled")
    return [s["why"] for s in samples[0]["series"]], samples[0]


def test_samples():
    # 20 ms between allocations, a sample at most every 10 ms: each is sampled.
    r = scenario("periodic", env={"CUMEMTRACE_SAMPLE_MS": "10"})
    reasons, s = sample_reasons(r.trace)
    eq(reasons, ["start", "periodic", "periodic", "periodic", "periodic", "exit"], "sample reasons")
    eq((s["first"]["live"], s["first"]["used"], s["first"]["total"]), (MiB, MiB, 16 * GiB), "start sample")
    eq((s["last"]["why"], s["last"]["live"], s["last"]["used"]), ("exit", 0, 0), "exit sample")
    cmtest.cleanup(r)
    for period in ("0", "10000"):
        r = scenario("periodic", env={"CUMEMTRACE_SAMPLE_MS": period})
        eq(sample_reasons(r.trace)[0], ["start", "exit"], f"sample reasons with CUMEMTRACE_SAMPLE_MS={period}")
        cmtest.cleanup(r)


def test_ipc_mapping():
    # An importer's own blocks on either side of another process's memory
    # mapped (gen_ipc_frag_trace.c works the figures out): the mapping's
    # 256 MiB gap is no free range of this process, so the failed 128 MiB
    # cudaMalloc is fragmentation (no free range that large: the largest is
    # C's 32 MiB), and the span leaves the mapping out.
    d = tempfile.mkdtemp(prefix="cmt-ipc-frag-")
    trace = os.path.join(d, "ipc_frag.bin")
    p = subprocess.run([cmtest.program("gen_ipc_frag_trace"), trace], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gen_ipc_frag_trace: {p.stderr}")
    rep = cmtest.report(trace)
    c = only_case(rep)
    eq((c["verdict"], c["rule"], c["size"]), ("fragmentation", "R10", 128 * MiB), "verdict, rule, request")
    f = c["figures"]
    eq((f["free"], f["live"], f["span_free"], f["largest_hole"]), (512 * MiB, 192 * MiB, 32 * MiB, 32 * MiB),
       "figures")
    s = c["span"]
    eq((s["lo"], s["span_bytes"], s["allocations"], s["holes"], s["free_bytes"], s["largest_hole"]),
       (0x7f0000000000, 224 * MiB, 3, 1, 32 * MiB, 32 * MiB), "address span at the failure")
    want = (1, 32 * MiB, 32 * MiB, 224 * MiB, 256 * MiB, 0, 0)
    eq(frag_figures(rep["fragmentation"]["devices"][0]), want, "report at exit")
    p = cmtest.cli("frag", "--json", trace)
    eq(p.returncode, 0, f"frag status ({p.stderr})")
    frag = json.loads(p.stdout)["fragmentation"]
    eq(frag_figures(frag["devices"][0]), want, "frag at exit (tracked releases)")
    eq([(o["releases"], o["hole_bytes"]) for o in frag["holes_opened_by"]], [(1, 32 * MiB)], "C's release opened one")
    text = cmtest.cli("frag", trace).stdout
    check("address space between allocations at exit, left out of the span: 256.0 MiB (gaps with a VMM reservation "
          "or another process's memory mapped in them or wider than the device's 1.0 GiB: not free memory)" in text,
          text)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
