#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds the job view of `cumemtrace report --json` on a job's traces against
what each rank's PyTorch said of itself (train_ddp.py's PREFIX.rank<R>.json).

    ranks_check.py MODE PREFIX REPORT_JSON NPROC [STRAY_MIB]

MODE shared (every rank on GPU 0, gloo), nccl1 (one rank, NCCL, GPU 0) or x2
(one GPU per rank, NCCL).
Prints PASS/FAIL/NOTE lines; exits 1 when one failed."""
import json
import sys

mode, prefix, report_path, nproc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
stray = int(sys.argv[5]) if len(sys.argv) > 5 else 0
failed = False


def result(ok, what):
    global failed
    print(("PASS " if ok else "FAIL ") + what)
    failed |= not ok


rep = json.load(open(report_path))
if nproc == 1:
    # One trace: the report has no job view, only the trace's own JOB record
    # and its devices.
    job = rep.get("job") or {}
    mine = json.load(open(f"{prefix}.rank0.json"))
    result(job.get("rank") == 0 and job.get("world_size") == 1 and job.get("launcher") == "torchrun",
           f"{mode}: the trace says rank {job.get('rank')} of {job.get('world_size')}, started by "
           f"{job.get('launcher')}")
    dev = next((d for d in rep["devices"] if d["ordinal"] == mine["device"]), None)
    peaks = (dev or {}).get("own_peaks") or {}
    got = (peaks.get("pytorch") or {}).get("bytes")
    result(got == mine["max_memory_reserved"],
           f"{mode}: PyTorch's own peak {got} B, max_memory_reserved() {mine['max_memory_reserved']} B")
    nccl = peaks.get("nccl") or {}
    result(nccl.get("bytes", 0) > 0, f"{mode}: NCCL's own memory {nccl.get('bytes')} B in {nccl.get('count')} "
           f"allocations (NCCL {mine['nccl']})")
    ph = rep.get("phases") or {}
    still_open = [p["path"] for p in ph.get("list", []) if p.get("open_at_end")]
    result(not still_open, f"{mode}: no NVTX range open at the end ({still_open})")
    sys.exit(1 if failed else 0)
jobs = rep.get("jobs") or []
result(len(jobs) == 1, f"{mode}: one job in the report ({len(jobs)})")
if not jobs:
    sys.exit(1)
job = jobs[0]
print(f"NOTE {mode}: job id {job['job_id']!r}, launcher {job['launcher']}, world size {job['world_size']}, "
      f"ranks {[r['rank'] for r in job['ranks']]}, hosts {job['hosts']}")
result([r["rank"] for r in job["ranks"]] == list(range(nproc)), f"{mode}: ranks 0..{nproc - 1} in order")
for r in job["ranks"]:
    mine = json.load(open(f"{prefix}.rank{r['rank']}.json"))
    result(r["local_rank"] == mine["local_rank"] and r["world_size"] == mine["world_size"],
           f"{mode} rank {r['rank']}: local rank {r['local_rank']}, world size {r['world_size']} as torch says")
    result(r["own_device"] == mine["device"], f"{mode} rank {r['rank']}: own device {r['own_device']} "
           f"(torch: cuda:{mine['device']})")
    dev = next((d for d in r["devices"] if d["ordinal"] == mine["device"]), None)
    got = (dev.get("own_peaks") or {}).get("pytorch") if dev else None
    result(got == mine["max_memory_reserved"],
           f"{mode} rank {r['rank']}: PyTorch's own peak on its device {got} B, max_memory_reserved() "
           f"{mine['max_memory_reserved']} B")
    print(f"NOTE {mode} rank {r['rank']}: device peak {r['peak_bytes']} B at {r['peak_time_ns'] / 1e9:.3f} s "
          f"(job clock), by holder at the peak {r['peak_by_holder']}, own peaks {r['own_peaks']}, "
          f"leaks {r['leak_bytes']} B in {r['leak_count']}, failed {r['failed_count']}, "
          f"site {r['peak_site']!r}; max_memory_allocated {mine['max_memory_allocated']} B")
    if mode in ("x2", "nccl1"):
        nccl = ((dev or {}).get("own_peaks") or {}).get("nccl", 0)
        result(nccl > 0, f"{mode} rank {r['rank']}: NCCL's own memory on its device {nccl} B (NCCL "
               f"{mine['nccl']})")
    if stray and r["rank"] != 0:
        peer = [p for p in job["peer_memory"] if p["rank"] == r["rank"] and p["device"] == 0]
        want = mine["cuda0"]["max_memory_reserved"] if mine.get("cuda0") else None
        got = peer[0]["peak_bytes"] if peer else None
        result(bool(peer) and 0 in peer[0]["owner_ranks"],
               f"{mode} rank {r['rank']}: memory on rank 0's GPU named ({peer[0] if peer else None})")
        d0 = next((d for d in r["devices"] if d["ordinal"] == 0), None)
        d0_pytorch = ((d0 or {}).get("own_peaks") or {}).get("pytorch")
        result(d0 is not None and d0_pytorch == want,
               f"{mode} rank {r['rank']}: PyTorch's peak on cuda:0 {d0_pytorch}"
               f" B, max_memory_reserved(0) {want} B; device peak there {got} B")
im = job["imbalance"]
if im:
    print(f"NOTE {mode}: imbalance: highest {im['peak_max_bytes']} B (rank {im['peak_max_rank']}), "
          f"{im['peak_max_over_next_bytes']} B over rank {im['next_rank']}, highest/mean {im['peak_max_over_mean']:.3f}")
    result(im["peak_max_rank"] == nproc - 1, f"{mode}: the rank with the largest batch peaked highest")
sys.exit(1 if failed else 0)
