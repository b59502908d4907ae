#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch with input shapes that grow from step to step, under the default
caching allocator: every step needs blocks larger than any it cached, so the
allocator reserves a new segment per size and keeps the old ones; reserved
memory ends far above allocated memory. Then one large tensor that fits only
once the cache is released: PyTorch's allocator frees its cached segments and
retries (the report's rule R1).

  torch_varying_shapes.py check OUTDIR       run the workload under the shim (default allocator, then
                                             expandable_segments:True) and check the reports
  torch_varying_shapes.py workload OUT.json  (inside the traced process) the workload itself

The check passes when, under the default allocator, max_memory_reserved is at
least twice max_memory_allocated, the report's size churn names a call site
of PyTorch's caching allocator and the remedy (expandable_segments), and the
large tensor's first failed cudaMalloc gets the caching verdict (R1). Needs
CMT_SHIM and CMT_CLI in the environment."""
import json
import os
import subprocess
import sys

MiB = 1 << 20
GiB = 1 << 30
STEPS = 40


def workload(out_path):
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    dev = torch.device("cuda")
    hidden = 1024
    model = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = 32
    for step in range(STEPS):
        seq = 256 + 96 * step  # growing sequence length: every step's tensors are larger than the last
        x = torch.randn(batch, seq, hidden, device=dev)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss
    torch.cuda.synchronize()
    stats = {
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_allocated": torch.cuda.memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    # A tensor larger than what is free but smaller than free + the cache:
    # the allocator's first cudaMalloc fails, it releases cached segments and
    # asks again.
    free, total = torch.cuda.mem_get_info()
    unused_cache = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    big = free + unused_cache // 2
    stats.update({"free_before_big": free, "total": total, "unused_cache_before_big": unused_cache, "big": big})
    try:
        t = torch.empty(big, dtype=torch.uint8, device=dev)
        torch.cuda.synchronize()
        stats["big_ok"] = True
        del t
    except torch.OutOfMemoryError as e:
        stats["big_ok"] = False
        stats["big_error"] = str(e).splitlines()[0]
    stats["num_alloc_retries"] = torch.cuda.memory_stats().get("num_alloc_retries", 0)
    with open(out_path, "w") as f:
        json.dump(stats, f, indent=1)


def run_setting(name, env_extra, outdir):
    env = dict(os.environ)
    env.update(env_extra)
    env["LD_PRELOAD"] = os.environ["CMT_SHIM"]
    env["CUMEMTRACE_QUIET"] = "1"
    env["CUMEMTRACE_OUTPUT"] = os.path.join(outdir, f"torch_shapes_{name}.%p.bin")
    stats_path = os.path.join(outdir, f"torch_shapes_{name}.stats.json")
    for old in os.listdir(outdir):  # a rerun into the same OUTDIR: only this run's trace
        if old.startswith(f"torch_shapes_{name}.") and old.endswith(".bin"):
            os.unlink(os.path.join(outdir, old))
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "workload", stats_path], env=env,
                           capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        print(f"FAIL  {name}: the workload was still running after 150 s, killed")
        return None, None
    with open(os.path.join(outdir, f"torch_shapes_{name}.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        print(f"FAIL  {name}: the workload exited with {p.returncode} (torch_shapes_{name}.log)")
        return None, None
    traces = sorted(t for t in os.listdir(outdir) if t.startswith(f"torch_shapes_{name}.") and t.endswith(".bin"))
    if not traces:
        print(f"FAIL  {name}: the workload wrote no trace (torch_shapes_{name}.log)")
        return None, None
    trace = os.path.join(outdir, traces[-1])
    cli = os.environ["CMT_CLI"]
    for args, suffix in ((["report"], "report.txt"), (["report", "--json"], "report.json"),
                         (["frag"], "frag.txt")):
        with open(os.path.join(outdir, f"torch_shapes_{name}.{suffix}"), "w") as f:
            subprocess.run([cli, *args, trace], stdout=f, stderr=subprocess.STDOUT, timeout=120)
    try:
        with open(stats_path) as f:
            stats = json.load(f)
        with open(os.path.join(outdir, f"torch_shapes_{name}.report.json")) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL  {name}: no statistics or no JSON report ({e}); see torch_shapes_{name}.log and .report.json")
        return None, None
    return stats, rep


def check(outdir):
    ok = True
    for name, env_extra in (("default", {}), ("expandable_segments",
                                             {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})):
        print(f"== {name}")
        stats, rep = run_setting(name, env_extra, outdir)
        if stats is None:
            ok = False
            continue
        reserved, allocated = stats["max_memory_reserved"], stats["max_memory_allocated"]
        ratio = reserved / allocated if allocated else 0
        print(f"  torch: max_memory_reserved {reserved / GiB:.2f} GiB, max_memory_allocated "
              f"{allocated / GiB:.2f} GiB (ratio {ratio:.2f}); large tensor of {stats['big'] / GiB:.2f} GiB "
              f"{'allocated' if stats['big_ok'] else 'failed: ' + stats.get('big_error', '')}; "
              f"num_alloc_retries {stats['num_alloc_retries']}")
        churn = [c for c in rep["churn"] if c["allocator"] == "PyTorch"]
        for c in rep["churn"][:3]:
            print(f"  churn: {c['distinct_sizes']} distinct sizes in {c['allocations']} allocations "
                  f"({c['min_size'] / MiB:.0f} to {c['max_size'] / MiB:.0f} MiB), {c['released']} released, "
                  f"pattern {c['pattern']}, allocator '{c['allocator']}', top frame "
                  f"{c['frames'][0]['function'] if c['frames'] else '?'}")
        cases = rep["oom"]["cases"]
        for c in cases:
            print(f"  failed {c['api']} of {c['size'] / GiB:.2f} GiB: {c['verdict']} ({c['rule']}), released after "
                  f"{c['after']['released_bytes'] / GiB:.2f} GiB in {c['after']['releases']}, retried "
                  f"{c['after']['retried']}, allocator '{c['allocator']}'")
        if name != "default":
            print(f"NOTE  {name}: reserved/allocated {ratio:.2f} (the remedy's effect)")
            continue
        if ratio >= 2:
            print(f"PASS  default: max_memory_reserved is {ratio:.1f}x max_memory_allocated")
        else:
            print(f"FAIL  default: max_memory_reserved only {ratio:.2f}x max_memory_allocated: the workload did "
                  "not strand cache")
            ok = False
        if churn and "expandable_segments" in churn[0]["what_to_try"]:
            print(f"PASS  default: the report's size churn names PyTorch's caching allocator "
                  f"({churn[0]['distinct_sizes']} distinct sizes) and expandable_segments")
        else:
            print("FAIL  default: no churn row for PyTorch's caching allocator with the remedy")
            ok = False
        r1 = [c for c in cases if c["rule"] == "R1" and c["verdict"] == "caching"]
        if r1:
            print("PASS  default: the large tensor's failed cudaMalloc is caching (R1): the allocator released "
                  f"{r1[0]['after']['released_bytes'] / GiB:.2f} GiB of cached segments and retried")
        elif not cases:
            print("NOTE  default: no cudaMalloc failed (the large tensor fit without releasing the cache)")
        else:
            print(f"FAIL  default: expected a caching (R1) failure, got {[(c['verdict'], c['rule']) for c in cases]}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "workload":
        workload(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
