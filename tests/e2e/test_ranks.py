# SPDX-License-Identifier: MIT
"""End-to-end: a job of several ranks on the simulated device, started as
torchrun, mpirun and srun start them (tests/e2e/launch_ranks.py sets each
launcher's variables) under `cumemtrace run`, one trace per rank
(trace.%r.bin), and the job view of `report` on all of them.

tests/e2e/programs/rank_worker.c: rank r peaks at 8 + 24 (r + 1) + r MiB on
its own device (LOCAL_RANK), 8 MiB of it NCCL's (a libnccl.so.2 double),
leaks r MiB; with `stray` every rank but 0 holds 2 MiB on device 0; with
`fail` the last rank asks for 64 GiB once; with `shared` every rank works on
device 0; with `vmm` every rank but 0 maps 2 MiB of VMM memory located on
device 0; with `ipc` rank 0 exports 64 and 8 MiB to rank 1 over CUDA IPC
(`ipc_leak`: rank 1 never closes the 8 MiB mapping)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_ranks.py")
# Nothing of the developer's shell: no launcher variable, all devices visible.
SIM = {"SIMCUDA_DEVICES": "3", "SIMCUDA_CAPACITY": "1GiB", "CUDA_VISIBLE_DEVICES": None, "CUDA_DEVICE_ORDER": None,
       "TORCHELASTIC_RUN_ID": None, "SLURM_JOB_ID": None, "PMIX_NAMESPACE": None, "OMPI_MCA_ess_base_jobid": None,
       "RANK": None, "OMPI_COMM_WORLD_RANK": None, "PMI_RANK": None, "SLURM_PROCID": None, "MASTER_ADDR": None,
       "MASTER_PORT": None, "SLURM_STEP_ID": None}


def launch(style, n, *worker_args, env=None, tmp=None, worker="rank_worker"):
    """Runs the job under `cumemtrace run`; returns (dir, traces by rank order)."""
    tmp = tmp or cmtest.run(["true"], preload=False).dir
    extra = dict(SIM)
    extra.update(env or {})
    if cmtest.PRELOAD_PREFIX:
        extra["LAUNCH_CHILD_ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "")
    p = subprocess.run([cmtest.CLI, "run", "-o", os.path.join(tmp, "trace.%r.bin"), "--", sys.executable, LAUNCH,
                        style, str(n), cmtest.program(worker), *worker_args],
                       capture_output=True, text=True, env=cmtest.sim_env(extra, preload=False, foreign=True), timeout=300)
    eq(p.returncode, 0, f"the job ran: {p.stderr}")
    traces = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith("trace."))
    return tmp, traces


def job_report(traces, *opts):
    p = cmtest.cli("report", "--json", *opts, *traces)
    eq(p.returncode, 0, f"report: {p.stderr}")
    return json.loads(p.stdout)


def cleanup(tmp):
    cmtest.cleanup(cmtest.Run(None, tmp))


def peak_of(rank):
    return (8 + 24 * (rank + 1) + rank) * MiB


def test_torchrun():
    tmp, traces = launch("torchrun", 3, "stray", "fail")
    eq([os.path.basename(t) for t in traces], ["trace.0.bin", "trace.1.bin", "trace.2.bin"], "one trace per rank")
    rep = job_report(traces)
    eq(len(rep["jobs"]), 1, "one job")
    job = rep["jobs"][0]
    eq(job["job_id"], "torch:127.0.0.1:29500", "job id (torchrun's run 'none': its rendezvous address)")
    eq(job["launcher"], "torchrun", "launcher")
    eq(job["world_size"], 3, "world size")
    eq((job["missing_ranks"], job["duplicate_ranks"]), ([], []), "every rank once")
    eq(job["clock"]["hosts"], 1, "one host")
    eq(job["clock"]["tolerance_ns"], 0, "one host: no tolerance")
    eq([r["rank"] for r in job["ranks"]], [0, 1, 2], "ranks in order")
    for r in job["ranks"]:
        n = r["rank"]
        eq((r["local_rank"], r["world_size"], r["local_world_size"]), (n, 3, 3), f"rank {n} identity")
        eq(r["own_device"], n, f"rank {n} own device (LOCAL_RANK)")
        eq(r["peak_bytes"], peak_of(n), f"rank {n} peak")
        eq(r["peak_by_holder"]["nccl"], 8 * MiB, f"rank {n} NCCL's bytes at the peak")
        eq(r["own_peaks"]["nccl"], 8 * MiB, f"rank {n} NCCL's own peak")
        eq(r["peak_by_holder"]["other"], peak_of(n) - 8 * MiB, f"rank {n} the program's bytes at the peak")
        check(r["peak_site"].startswith("load_weights at "), f"rank {n} peak site: {r['peak_site']}")
        eq((r["leak_bytes"], r["leak_count"]), (n * MiB, 1 if n else 0), f"rank {n} leaks")
        eq(r["failed_count"], 1 if n == 2 else 0, f"rank {n} failures")
        eq(r["elsewhere_peak_bytes"], 2 * MiB if n else 0, f"rank {n} on other GPUs")
        check(r["start_time_ns"] <= r["peak_time_ns"] <= r["end_time_ns"], f"rank {n} peak within its run: {r}")
    eq(job["ranks"][2]["failed_first_size_bytes"], 64 << 30, "the failed request")
    eq(min(r["start_time_ns"] for r in job["ranks"]), 0, "the job starts with its first trace")
    im = job["imbalance"]
    eq((im["peak_max_rank"], im["peak_max_bytes"]), (2, peak_of(2)), "highest rank")
    eq((im["next_rank"], im["peak_max_over_next_bytes"]), (1, peak_of(2) - peak_of(1)), "over the next")
    eq((im["peak_min_rank"], im["peak_min_bytes"]), (0, peak_of(0)), "lowest rank")
    eq(im["peak_mean_bytes"], peak_of(1), "mean")
    eq(round(im["peak_max_over_mean"], 4), round(peak_of(2) / peak_of(1), 4), "highest / mean")
    peers = [(p["rank"], p["device"], p["gpu"], p["owner_ranks"], p["peak_bytes"], p["live_at_end_bytes"])
             for p in job["peer_memory"]]
    eq(peers, [(1, 0, "0", [0], 2 * MiB, 0), (2, 0, "0", [0], 2 * MiB, 0)], "memory on rank 0's GPU")
    check(all(p["peak_site"].startswith("stray_on_device0 at ") for p in job["peer_memory"]), "stray site")
    tl = job["timeline"]
    eq((tl["columns"], [r["rank"] for r in tl["ranks"]]), (64, [0, 1, 2]), "timeline shape")
    for r, row in zip(job["ranks"], tl["ranks"]):
        eq(len(row["own_device_max_bytes"]), 64, "columns")
        eq(max(row["own_device_max_bytes"]), r["peak_bytes"], f"rank {r['rank']} timeline reaches its peak")
    text = cmtest.cli("report", "--chart-width", "32", *traces).stdout
    check(any(l.startswith("Job torch:127.0.0.1:29500 (torchrun): 3 ranks of 3, 1 host (") for l in text.splitlines()),
          f"job header:\n{text}")
    for line in [
                 "  imbalance: rank 2 peaked highest, 82.0 MiB, 25.0 MiB over rank 1 (the next highest); "
                 "1.44x the mean 57.0 MiB; lowest rank 0, 32.0 MiB",
                 "  failed:   rank 2: 1 failed allocation, the first of 64.0 GiB (its section above says why)"]:
        check(line in text.splitlines(), f"text has {line!r}:\n{text}")
    check(any(l.startswith("    rank 1: 2.0 MiB at most on its device 0 (GPU 0 of ") and "rank 0's own" in l
              for l in text.splitlines()), f"text names the stray memory:\n{text}")
    rows = [l for l in text.splitlines() if l.startswith("    rank ") and l.endswith("|")]
    eq([len(l) for l in rows], [len("    rank    0 |") + 32 + 1] * 3, f"a 32-column row per rank:\n{text}")
    cleanup(tmp)


def test_launchers():
    for style, job_id in [("openmpi", "pmix:prterun-sim-0@1"), ("pmi", ""), ("slurm", "slurm:4000.0")]:
        tmp, traces = launch(style, 2)
        rep = job_report(traces)
        eq(len(rep["jobs"]), 1, f"{style}: one job")
        job = rep["jobs"][0]
        eq((job["job_id"], job["launcher"], job["world_size"]), (job_id, style, 2), f"{style}: the job")
        eq([(r["rank"], r["local_rank"], r["own_device"], r["peak_bytes"]) for r in job["ranks"]],
           [(0, 0, 0, peak_of(0)), (1, 1, 1, peak_of(1))], f"{style}: ranks")
        cleanup(tmp)


def test_two_jobs_and_missing():
    tmp, _ = launch("torchrun", 2)
    os.rename(os.path.join(tmp, "trace.0.bin"), os.path.join(tmp, "a.0.bin"))
    os.rename(os.path.join(tmp, "trace.1.bin"), os.path.join(tmp, "a.1.bin"))
    _, _ = launch("torchrun", 3, env={"LAUNCH_JOB_TAG": "7"}, tmp=tmp)
    os.remove(os.path.join(tmp, "trace.1.bin"))
    traces = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".bin"))
    rep = job_report(traces)
    eq([(j["job_id"], [r["rank"] for r in j["ranks"]], j["missing_ranks"]) for j in rep["jobs"]],
       [("torch:127.0.0.1:29500", [0, 1], []), ("torch:127.0.0.1:29507", [0, 2], [1])], "two jobs, one rank missing")
    text = cmtest.cli("report", *traces).stdout
    check("  missing:  no trace of rank 1 (world size 3)" in text.splitlines(), f"missing rank said:\n{text}")
    cleanup(tmp)


def test_wall_clock():
    """Ranks started one after the other: the job's clock puts each after the
    previous one's end."""
    tmp, traces = launch("torchrun", 3, env={"LAUNCH_SERIAL": "1"})
    ranks = job_report(traces)["jobs"][0]["ranks"]
    for a, b in zip(ranks, ranks[1:]):
        check(b["start_time_ns"] >= a["end_time_ns"], f"rank {b['rank']} after rank {a['rank']}: {a} {b}")
        check(b["peak_time_ns"] > a["peak_time_ns"], "peaks in order")
    two_hosts = job_report(traces, "--clock-tolerance", "5ms")["jobs"][0]["clock"]
    eq((two_hosts["hosts"], two_hosts["tolerance_ns"]), (1, 0), "one host: the tolerance does not apply")
    cleanup(tmp)


def test_shared_gpu():
    tmp, traces = launch("torchrun", 2, "shared")
    job = job_report(traces)["jobs"][0]
    eq([(r["rank"], r["own_device"], r["peak_bytes"]) for r in job["ranks"]], [(0, 0, peak_of(0)), (1, 0, peak_of(1))],
       "both ranks' own device is device 0")
    eq(job["peer_memory"], [], "no memory on another rank's GPU: device 0 is each one's own")
    text = cmtest.cli("report", *traces).stdout
    check(any(l.startswith("  shared:   GPU 0 of ") and l.endswith("is the own GPU of ranks 0 and 1: their peaks add up on it")
              for l in text.splitlines()), f"shared GPU said:\n{text}")
    cleanup(tmp)


# cuDeviceGetUuid of the simulated device 0: "simcuda-device-0", as nvidia-smi writes a UUID.
SIM_UUID0 = "GPU-" + "simc".encode().hex() + "-" + "ud".encode().hex() + "-" + "a-".encode().hex() + "-" + \
    "de".encode().hex() + "-" + "vice-0".encode().hex()


def test_shared_gpu_by_uuid():
    """Two ranks on one GPU that CUDA_VISIBLE_DEVICES names by index in one
    and by UUID in the other: matched by the UUID each trace recorded."""
    tmp, traces = launch("torchrun", 2, "shared", env={"LAUNCH_RANK_CVD": f"0;{SIM_UUID0}"})
    job = job_report(traces)["jobs"][0]
    eq([r["cuda_visible_devices"] for r in job["ranks"]], ["0", SIM_UUID0], "named two ways")
    eq([[(d["gpu"], d["uuid"], d["owner_ranks"]) for d in r["devices"]] for r in job["ranks"]],
       [[("0", SIM_UUID0, [0, 1])], [(SIM_UUID0, SIM_UUID0, [0, 1])]], "one GPU, both ranks' own")
    eq(job["peer_memory"], [], "nothing on another rank's GPU")
    text = cmtest.cli("report", *traces).stdout
    check(any(l.startswith("  shared:   GPU 0 of ") and l.endswith("is the own GPU of ranks 0 and 1: their peaks add up on it")
              for l in text.splitlines()), f"shared GPU said:\n{text}")
    cleanup(tmp)


def test_vmm_on_peer():
    """Physical memory created on device 0 by rank 1 (cuMemCreate, located
    by its properties, not by the current device) is rank 1's memory on rank
    0's GPU."""
    tmp, traces = launch("torchrun", 2, "vmm")
    job = job_report(traces)["jobs"][0]
    eq([(r["rank"], r["own_device"], r["peak_bytes"]) for r in job["ranks"]], [(0, 0, peak_of(0)), (1, 1, peak_of(1))],
       "own devices untouched")
    eq([(p["rank"], p["device"], p["owner_ranks"], p["peak_bytes"], p["live_at_end_bytes"]) for p in job["peer_memory"]],
       [(1, 0, [0], 2 * MiB, 0)], "the VMM memory on rank 0's GPU")
    check(job["peer_memory"][0]["peak_site"].startswith("map_peer_memory at "), f"site: {job['peer_memory']}")
    cleanup(tmp)


WORKER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "rank_worker.c")


def worker_line(text):
    """The line of rank_worker.c holding text (exactly once)."""
    lines = [i + 1 for i, l in enumerate(open(WORKER_SRC).read().splitlines()) if text in l]
    eq(len(lines), 1, f"{text!r} once in rank_worker.c")
    return lines[0]


def site(frames):
    f = frames["frames"][frames["site_frame"]]
    return f"{f['function']} at {os.path.basename(f['file'])}:{f['line']}"


def test_ipc():
    """Rank 0 exports two allocations, rank 1 maps them, writes into them
    and leaves the 8 MiB one open: the mappings are rank 1's as memory of
    another process (not in its peak or leaks), the open one is a leak of a
    mapping, the job view names the exporting rank and its site, `check`
    fails on it and a suppression of its site lets it pass."""
    tmp = cmtest.run(["true"], preload=False).dir
    tmp, traces = launch("torchrun", 2, "ipc", "ipc_leak", env={"IPC_DIR": tmp}, tmp=tmp)
    traces = [t for t in traces if t.endswith(".bin")]
    w, c = worker_line("cudaMalloc(&p, 64 * MiB)"), worker_line("cudaMalloc(&p, 8 * MiB)")
    open_w, open_c = worker_line("cudaIpcOpenMemHandle(&p, h, "), worker_line("cuIpcOpenMemHandle(&p, ch, ")
    r0, r1 = cmtest.report(traces[0]), cmtest.report(traces[1])
    eq(r0["format_version"], "2.4", "format version")
    x0, x1 = r0["ipc"], r1["ipc"]
    eq([(e["api"], e["bytes"], e["allocation_found"], site(e)) for e in x0["exported"]],
       [("cudaIpcGetMemHandle", 64 * MiB, True, f"export_weights at rank_worker.c:{w}"),
        ("cudaIpcGetMemHandle", 8 * MiB, True, f"export_cache at rank_worker.c:{c}")], "rank 0's exports")
    eq((x0["failed_opens"], x0["opened_count"], x0["mapped_peak_bytes"]), (1, 0, 0),
       "rank 0 cannot open its own handle (cudaErrorDeviceUninitialized), as on CUDA")
    peak0 = r0["devices"][0]
    eq(peak0["peak_bytes"], (8 + 64 + 8) * MiB, "rank 0's own peak holds the exported allocations")
    eq(sorted((s["bytes"], s.get("exported", False)) for s in peak0["top_sites_at_peak"]),
       [(8 * MiB, False), (8 * MiB, True), (64 * MiB, True)], "exported sites marked at the peak")
    eq((x1["opened_bytes"], x1["opened_count"], x1["mapped_peak_bytes"]), (72 * MiB, 2, 72 * MiB), "rank 1's mappings")
    eq((x1["never_closed_bytes"], x1["never_closed_count"]), (8 * MiB, 1), "one never closed")
    eq([(m["bytes"], m["count"], m["closed"], m["api"], m["device"], site(m)) for m in x1["mapped"]],
       [(64 * MiB, 1, True, "cudaIpcOpenMemHandle", 1, f"map_peer_weights at rank_worker.c:{open_w}"),
        (8 * MiB, 1, False, "cuIpcOpenMemHandle", 1, f"map_peer_cache at rank_worker.c:{open_c}")], "mapped by site")
    eq([m["handle"] for m in x1["mapped"]], [e["handle"] for e in x0["exported"]], "the same handles on both sides")
    eq(r1["devices"][0]["peak_bytes"], peak_of(1), "rank 1's own peak: no mapped byte in it")
    eq((r1["leaks"]["bytes"], r1["leaks"]["count"]), (1 * MiB, 1), "rank 1's own leak only")
    eq(r1["unmatched_frees"], 0, "nothing unmatched")
    job = job_report(traces)["jobs"][0]
    eq([(m["rank"], m["bytes"], m["closed"], m["exporter_rank"], m["exporter_bytes"]) for m in job["ipc_mappings"]],
       [(1, 64 * MiB, True, 0, 64 * MiB), (1, 8 * MiB, False, 0, 8 * MiB)], "the job matches importer to exporter")
    eq([r["peak_bytes"] for r in job["ranks"]], [(8 + 64 + 8) * MiB, peak_of(1)], "ranks' peaks")
    text = cmtest.cli("report", *traces).stdout.splitlines()
    for want in [f"  ipc:      rank 1 maps 64.0 MiB of rank 0's allocation from export_weights at ",
                 f"  ipc:      rank 1 maps 8.0 MiB of rank 0's allocation from export_cache at "]:
        hit = [l for l in text if l.startswith(want)]
        eq(len(hit), 1, f"the job view says {want!r}:\n" + "\n".join(text))
    check(hit[0].endswith(f"rank_worker.c:{c} (never closed: a leak of a mapping); opened at map_peer_cache at "
                          f"{hit[0].split(' opened at map_peer_cache at ')[-1]}")
          and hit[0].endswith(f"rank_worker.c:{open_c}"), f"the open site: {hit[0]}")
    one = cmtest.cli("report", traces[1]).stdout.splitlines()
    check("Leaks of mappings (mapped from another process and never closed; the memory is the other process's): "
          "8.0 MiB (8388608 B) in 1 mapping" in one, "\n".join(one))
    p = cmtest.cli("check", "--max-leak-bytes", "2MiB", "--format", "json", traces[1])
    eq(p.returncode, 1, f"check fails on the open mapping: {p.stdout} {p.stderr}")
    findings = [(f["rule"], f["bytes"], f["count"]) for t in json.loads(p.stdout)["traces"] for f in t["findings"]
                if f["level"] == "error"]
    eq(findings, [("mapping-leak", 8 * MiB, 1)], "the finding")
    supp = os.path.join(tmp, "ipc.supp")
    with open(supp, "w") as f:
        f.write("leak:map_peer_cache\n")
    p = cmtest.cli("check", "--max-leak-bytes", "2MiB", "--suppressions", supp, traces[1])
    eq(p.returncode, 0, f"suppressed: {p.stdout} {p.stderr}")
    check("8.0 MiB in 1 mapping of another process's memory never closed, suppressed" in p.stdout + p.stderr,
          f"suppression said: {p.stdout} {p.stderr}")
    eq(cmtest.cli("check", traces[0]).returncode, 0, "rank 0 passes: its failed open of its own handle is no leak")
    cleanup(tmp)


def test_ipc_closed():
    """Without ipc_leak every mapping is closed: check passes on rank 1."""
    tmp = cmtest.run(["true"], preload=False).dir
    tmp, traces = launch("torchrun", 2, "ipc", env={"IPC_DIR": tmp}, tmp=tmp)
    traces = [t for t in traces if t.endswith(".bin")]
    x1 = cmtest.report(traces[1])["ipc"]
    eq((x1["opened_count"], x1["never_closed_count"], [m["closed"] for m in x1["mapped"]]), (2, 0, [True, True]),
       "all closed")
    eq(cmtest.cli("check", "--max-leak-bytes", "2MiB", traces[1]).returncode, 0, "check passes")
    cleanup(tmp)


def test_ipc_vmm():
    """A VMM handle shared as a fabric handle: rank 1's imported handle is
    no memory of its own (its peak, leaks and physical memory untouched, its
    release no unmatched release), its cuMemMap a mapping of another
    process's memory, matched to rank 0's cuMemCreate."""
    tmp = cmtest.run(["true"], preload=False).dir
    tmp, traces = launch("torchrun", 2, "ipc_vmm", env={"IPC_DIR": tmp}, tmp=tmp)
    traces = [t for t in traces if t.endswith(".bin")]
    r0, r1 = cmtest.report(traces[0]), cmtest.report(traces[1])
    x0, x1 = r0["ipc"], r1["ipc"]
    eq([(e["api"], e["bytes"], e["allocation_found"], site(e)) for e in x0["exported"]],
       [("cuMemExportToShareableHandle", 4 * MiB, True,
         f"export_physical at rank_worker.c:{worker_line('cuMemCreate(&h, 4 * MiB, &prop, 0)')}")], "the export")
    eq([(m["api"], m["bytes"], m["count"], m["closed"], site(m)) for m in x1["mapped"]],
       [("cuMemMap", 4 * MiB, 1, True, f"map_imported at rank_worker.c:{worker_line('cuMemMap(va, 4 * MiB, 0, h, 0)')}")],
       "the mapping of the imported handle")
    eq((x1["imported_handles"], x1["imported_handles_released"], x1["mapped_peak_bytes"]), (1, 1, 4 * MiB), "imported")
    eq(x1["mapped"][0]["handle"], x0["exported"][0]["handle"], "one fingerprint")
    eq(r1["unmatched_frees"], 0, "the imported handle's release is no unmatched release")
    eq(r1["devices"][0]["peak_bytes"], peak_of(1), "rank 1's own peak")
    eq([v["physical_peak_bytes"] for v in r1["vmm"]], [0], "no physical memory of rank 1's own")
    eq((r1["leaks"]["bytes"], r1["leaks"]["count"]), (1 * MiB, 1), "rank 1's own leak only")
    eq([v["physical_peak_bytes"] for v in r0["vmm"]], [4 * MiB], "rank 0's physical memory")
    job = job_report(traces)["jobs"][0]
    eq([(m["rank"], m["bytes"], m["closed"], m["exporter_rank"]) for m in job["ipc_mappings"]], [(1, 4 * MiB, True, 0)],
       "matched to rank 0")
    cleanup(tmp)


def test_ipc_static():
    """The static runtime reaches cuIpc* through cuGetProcAddress: the
    shim's hooks handed out there record them, under the driver's names."""
    tmp = cmtest.run(["true"], preload=False).dir
    tmp, traces = launch("torchrun", 2, env={"IPC_DIR": tmp}, tmp=tmp, worker="ipc_static")
    traces = [t for t in traces if t.endswith(".bin")]
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "ipc_static.c")
    lines = open(src).read().splitlines()
    at = {k: [i + 1 for i, l in enumerate(lines) if k in l][0] for k in ("cudaMalloc(&p", "cudaIpcOpenMemHandle(&p")}
    x0, x1 = cmtest.report(traces[0])["ipc"], cmtest.report(traces[1])["ipc"]
    eq([(e["api"], e["bytes"], site(e)) for e in x0["exported"]],
       [("cuIpcGetMemHandle", 6 * MiB, f"share_buffer at ipc_static.c:{at['cudaMalloc(&p']}")], "the export")
    eq([(m["api"], m["bytes"], m["count"], m["closed"], site(m)) for m in x1["mapped"]],
       [("cuIpcOpenMemHandle", 6 * MiB, 1, True, f"open_buffer at ipc_static.c:{at['cudaIpcOpenMemHandle(&p']}")],
       "the mapping")
    eq(x1["mapped"][0]["handle"], x0["exported"][0]["handle"], "one fingerprint")
    cleanup(tmp)


def test_ipc_pool():
    """A stream-ordered pool shared as a fabric handle: rank 0 exports two
    of its allocations' pointers (runtime, driver), rank 1 imports them and
    frees them with cudaFreeAsync and cuMemFreeAsync. The imports are
    mappings of another process's memory (not in rank 1's peak or leaks),
    their frees close them (no unmatched free), the job view matches them
    to rank 0's allocations, and the header counts every pool IPC call.
    CUDA gives an imported pool pointer no size (cuMemGetAddressRange does
    not answer for it on an H200; the simulator does the same): its mapping
    is counted with its size unknown, and the job view takes the size from
    the exporter's allocation."""
    tmp = cmtest.run(["true"], preload=False).dir
    tmp, traces = launch("torchrun", 2, "ipc_pool", env={"IPC_DIR": tmp}, tmp=tmp)
    traces = [t for t in traces if t.endswith(".bin")]
    r0, r1 = cmtest.report(traces[0]), cmtest.report(traces[1])
    eq(r0["format_version"], "2.4", "format version")
    x0, x1 = r0["ipc"], r1["ipc"]
    t, c = worker_line("cudaMallocFromPoolAsync(&p, 32 * MiB"), worker_line("cuMemAllocFromPoolAsync(&p, 4 * MiB")
    it, ic = worker_line("cudaMemPoolImportPointer(&p, pool"), worker_line("cuMemPoolImportPointer(&p, (CUmemoryPool)")
    eq([(e["api"], e["allocation_found"], e["bytes"], e["offset"], site(e)) for e in x0["exported"]],
       [("cudaMemPoolExportPointer", True, 32 * MiB, 0, f"pool_tensor at rank_worker.c:{t}"),
        ("cuMemPoolExportPointer", True, 4 * MiB, 0, f"pool_cache at rank_worker.c:{c}")], "rank 0's exports")
    eq([(m["bytes"], m["count"], m["closed"], m["api"], m["device"], site(m)) for m in x1["mapped"]],
       [(0, 1, True, "cudaMemPoolImportPointer", 1, f"import_tensor at rank_worker.c:{it}"),
        (0, 1, True, "cuMemPoolImportPointer", 1, f"import_cache at rank_worker.c:{ic}")], "rank 1's imports")
    eq([m["unknown_size_count"] for m in x1["mapped"]] + [x1["unknown_size_count"]], [1, 1, 2],
       "the imports' sizes are unknown")
    eq([m["handle"] for m in x1["mapped"]], [e["handle"] for e in x0["exported"]], "the export data's fingerprints")
    eq((x1["opened_count"], x1["opened_bytes"], x1["never_closed_count"]), (2, 0, 0), "all freed")
    text = cmtest.cli("report", traces[1]).stdout
    check("  2 mappings of unknown size, not in these bytes: CUDA does not say how large an imported pool pointer is "
          "(cuMemGetAddressRange does not answer for it); the exporting process's trace has its allocation\n" in text
          and "    size unknown in 1 mapping (cudaMemPoolImportPointer, device 1, handle " in text, text)
    eq(r1["unmatched_frees"], 0, "the frees of imported pointers close the mappings")
    eq(r1["devices"][0]["peak_bytes"], peak_of(1), "rank 1's own peak: no imported byte in it")
    eq((r1["leaks"]["bytes"], r1["leaks"]["count"]), (1 * MiB, 1), "rank 1's own leak only")
    eq(r0["devices"][0]["peak_bytes"], (8 + 32 + 4) * MiB, "rank 0's peak holds the pool's allocations")
    pool_calls = lambda r: {k: v for k, v in r["events_by_api"].items() if "MemPool" in k}
    eq(pool_calls(r0), {"cudaMemPoolExportToShareableHandle": 1, "cudaMemPoolExportPointer": 1,
                        "cuMemPoolExportPointer": 1}, "rank 0's pool IPC calls in the header")
    eq(pool_calls(r1), {"cudaMemPoolImportFromShareableHandle": 1, "cudaMemPoolImportPointer": 1,
                        "cuMemPoolImportPointer": 1}, "rank 1's pool IPC calls in the header")
    job = job_report(traces)["jobs"][0]
    eq([(m["rank"], m["bytes"], m["closed"], m["exporter_rank"], m["exporter_bytes"]) for m in job["ipc_mappings"]],
       [(1, 0, True, 0, 32 * MiB), (1, 0, True, 0, 4 * MiB)], "the job matches importer to exporter")
    jtext = cmtest.cli("report", *traces).stdout
    hit = [l for l in jtext.splitlines() if l.startswith(
        "  ipc:      rank 1 maps 32.0 MiB (the exporter's figure: CUDA gave this mapping no size) of rank 0's "
        "allocation from pool_tensor at ")]
    eq(len(hit), 1, "the job view's sentence takes the exporter's size:\n" + jtext)
    check(f"rank_worker.c:{t} (closed); opened at import_tensor at " in hit[0] and hit[0].endswith(f"rank_worker.c:{it}"),
          hit[0])
    eq(cmtest.cli("check", "--max-leak-bytes", "2MiB", traces[1]).returncode, 0, "check passes on rank 1: nothing left mapped")
    cleanup(tmp)


def test_ipc_inner():
    """Rank 0 exports a pointer 4 KiB inside a 64 MiB allocation: the export
    names that allocation and the offset (CUDA exports the whole
    allocation); rank 1 maps all 64 MiB. The header's event counts hold the
    IPC records."""
    tmp = cmtest.run(["true"], preload=False).dir
    tmp, traces = launch("torchrun", 2, "ipc_inner", env={"IPC_DIR": tmp}, tmp=tmp)
    traces = [t for t in traces if t.endswith(".bin")]
    r0, r1 = cmtest.report(traces[0]), cmtest.report(traces[1])
    x0, x1 = r0["ipc"], r1["ipc"]
    at = worker_line('cudaMalloc(&p, (size_t)64 * MiB), "export_inner"')
    eq([(e["api"], e["allocation_found"], e["bytes"], e["offset"], site(e)) for e in x0["exported"]],
       [("cudaIpcGetMemHandle", True, 64 * MiB, 4096, f"export_inner at rank_worker.c:{at}")], "the export")
    eq([(m["bytes"], m["count"], m["closed"]) for m in x1["mapped"]], [(64 * MiB, 1, True)], "the whole allocation mapped")
    eq(x1["mapped"][0]["handle"], x0["exported"][0]["handle"], "one fingerprint")
    text = cmtest.cli("report", traces[0]).stdout.splitlines()
    want = [l for l in text if l.startswith("    64.0 MiB (67108864 B) allocation, the pointer 4.0 KiB (4096 B) inside "
                                              "it (CUDA exports the whole allocation) (cudaIpcGetMemHandle at ")]
    eq(len(want), 1, "the export's line:\n" + "\n".join(text))
    # the header: the IPC records among the events counted
    eq(r0["events_by_api"].get("cudaIpcGetMemHandle"), 1, "rank 0's export counted")
    eq((r1["events_by_api"].get("cudaIpcOpenMemHandle"), r1["events_by_api"].get("cudaIpcCloseMemHandle")), (1, 1),
       "rank 1's open and close counted")
    for r in (r0, r1):
        eq(r["events"], sum(r["events_by_api"].values()), "events is the sum of events_by_api")
    allocs0 = {k: v for k, v in r0["events_by_api"].items() if not k.startswith("cudaIpc")}
    eq(r0["events"], sum(allocs0.values()) + 1, "rank 0: its allocations and frees, and one export")
    head = [l for l in text if l.startswith("  events:   ")]
    eq(len(head), 1, "one events line")
    check(f"  events:   {r0['events']} (" in head[0] and "cudaIpcGetMemHandle 1" in head[0], head[0])
    cleanup(tmp)


def test_single_trace_no_job():
    tmp, traces = launch("torchrun", 1)
    rep = cmtest.report(traces[0])
    check("jobs" not in rep, "one trace: the single report")
    eq({k: rep["job"][k] for k in ("launcher", "job_id", "rank", "local_rank", "world_size", "local_world_size")},
       {"launcher": "torchrun", "job_id": "torch:127.0.0.1:29500", "rank": 0, "local_rank": 0, "world_size": 1,
        "local_world_size": 1}, "the single report's job")
    eq(rep["job"]["variables"]["MASTER_PORT"], "29500", "the variables as set")
    text = cmtest.cli("report", traces[0]).stdout
    check("  job:      rank 0 of 1 (local rank 0), started by torchrun, job torch:127.0.0.1:29500" in text.splitlines(),
          f"the header's job line:\n{text}")
    p = cmtest.cli("report", "--clock-tolerance", "soon", traces[0])
    eq(p.returncode, 2, "a bad tolerance")
    cleanup(tmp)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
