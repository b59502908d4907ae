#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch under cumemtrace with the four allocator settings.

  torch_allocators.py check OUTDIR      run the workload once per setting under the shim and compare
  torch_allocators.py workload OUT.json (inside the traced process) the workload itself

For each setting the workload records torch's own figures; the check then
reads the trace (cmt_trace.py) and computes the peak of the allocations made
from PyTorch's allocator (stacks through libc10_cuda.so):
  - default caching allocator and expandable_segments:True: that peak must
    equal torch.cuda.max_memory_reserved() (the allocator's segments, plain
    cudaMalloc or cuMemCreate physical memory);
  - backend:cudaMallocAsync and PYTORCH_NO_CUDA_MEMORY_CACHING=1: reported next
    to max_memory_allocated() and max_memory_reserved() (the async backend's
    reserved figure is the driver pool's, which no API call shows);
and lists every other device allocation (cuBLAS, cuDNN, NCCL, the runtime)
with its size and where it came from, and the device memory in use that no
allocation explains (the CUDA context, module images). Needs CMT_SHIM
(libcumemtrace.so) and CMT_CLI (the cumemtrace command) in the environment."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SETTINGS = {
    "default": ({}, True),
    "expandable_segments": ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, True),
    "cudaMallocAsync": ({"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}, False),
    "no_caching": ({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, False),
}
MiB = 1 << 20


def workload(out_path):
    import torch
    import torch.nn as nn

    marks = {}

    def mark(name):
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        marks[name] = {"ts": time.monotonic_ns(), "device_used": total - free, "total": total}

    torch.cuda.init()
    torch.zeros(1, device="cuda")  # context and allocator up
    mark("after_init")
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(64 * 64, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).cuda()
    opt = torch.optim.Adam(model.parameters())
    for batch in [16, 64, 8, 128, 32, 96]:  # changing shapes make the caching allocator work
        x = torch.randn(batch, 3, 64, 64, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    big = [torch.empty(64 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]  # a transient peak
    a = torch.randn(2048, 2048, device="cuda")
    _ = a @ a  # cuBLAS
    del big, a, _
    nccl = "not tried"
    try:
        import torch.distributed as dist
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29531", rank=0, world_size=1)
        t = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        dist.destroy_process_group()
        nccl = "ran"
    except Exception as e:  # a single-GPU box without NCCL: still a valid run
        nccl = f"failed: {e}"
    mark("end")
    stats = {
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "memory_allocated": torch.cuda.memory_allocated(),
        "allocator_backend": torch.cuda.get_allocator_backend(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl,
        "marks": marks,
    }
    with open(out_path, "w") as f:
        json.dump(stats, f, indent=1)


def category(trace, stack):
    """Where an allocation came from, by the first library on its stack that
    is not the profiler, the runtime or the driver."""
    for module in trace.stack_modules(stack):
        if module.startswith(("libcumemtrace", "libcudart", "libcuda.so")) or not module:
            continue
        for prefix, name in [("libc10_cuda", "PyTorch caching allocator"), ("libcublasLt", "cuBLASLt"),
                             ("libcublas", "cuBLAS"), ("libcudnn", "cuDNN"), ("libnccl", "NCCL"),
                             ("libtorch_cuda", "libtorch_cuda (outside the allocator)"), ("libcufft", "cuFFT"),
                             ("libcurand", "cuRAND"), ("libcusparse", "cuSPARSE")]:
            if module.startswith(prefix):
                return name
        return module
    return "the CUDA runtime itself (no library frame)"


def is_allocator(trace, event):
    return any(m.startswith("libc10_cuda") for m in trace.stack_modules(event.stack))


def analyse(name, out, expect_reserved, failures):
    import cmt_trace

    with open(os.path.join(out, f"torch_{name}.json")) as f:
        stats = json.load(f)
    traces = sorted(p for p in os.listdir(out) if p.startswith(f"torch_{name}.") and p.endswith(".bin"))
    if len(traces) != 1:
        failures.append(f"{name}: expected one trace, found {traces}")
        return
    trace = cmt_trace.Trace(os.path.join(out, traces[0]))
    device = lambda e: e.device == 0 and e.kind not in (cmt_trace.MANAGED, cmt_trace.HOST_PINNED)  # noqa: E731
    allocator = lambda e: device(e) and is_allocator(trace, e)  # noqa: E731
    peak, _ts, _at, _exit = cmt_trace.replay(trace, allocator)
    # Live device bytes of every allocation at each mark, to explain device use.
    timeline = []
    total_peak, _t, at_total_peak, at_exit = cmt_trace.replay(trace, device, lambda ts, v: timeline.append((ts, v)))

    def live_at(ts):
        v = 0
        for t, x in timeline:
            if t > ts:
                break
            v = x
        return v

    print(f"\n== {name}: {stats['allocator_backend']} backend, torch {stats['torch']}, CUDA {stats['cuda']}, "
          f"NCCL {stats['nccl']}")
    print(f"  cumemtrace: peak of the allocator's allocations {peak} B ({peak / MiB:.1f} MiB)")
    print(f"  torch: max_memory_reserved {stats['max_memory_reserved']} B, max_memory_allocated "
          f"{stats['max_memory_allocated']} B")
    if expect_reserved:
        ok = peak == stats["max_memory_reserved"]
        print(f"  {'PASS' if ok else 'FAIL'}  peak of allocator allocations == torch.cuda.max_memory_reserved() "
              f"(difference {peak - stats['max_memory_reserved']} B)")
        if not ok:
            failures.append(f"{name}: allocator peak {peak} != max_memory_reserved {stats['max_memory_reserved']}")
    else:
        print(f"  note  difference to max_memory_allocated {peak - stats['max_memory_allocated']} B, "
              f"to max_memory_reserved {peak - stats['max_memory_reserved']} B")
    others = {}
    for e in trace.events:
        if e.type == cmt_trace.REC_ALLOC and e.result == 0 and e.addr and device(e) and not allocator(e):
            key = (category(trace, e.stack), cmt_trace.APIS[e.api][0], e.size)
            others[key] = others.get(key, 0) + 1
    print(f"  device allocations NOT made by the allocator ({sum(others.values())}):")
    for (cat, api, size), n in sorted(others.items(), key=lambda kv: -kv[0][2] * kv[1]):
        print(f"    {size:>12} B x{n:<4} {api:<24} {cat}")
    for mark in ("after_init", "end"):
        m = stats["marks"][mark]
        ours = live_at(m["ts"])
        print(f"  at {mark}: device in use {m['device_used']} B (cudaMemGetInfo), live in the trace {ours} B, "
              f"not from any allocation (context, module images, other processes) {m['device_used'] - ours} B")
    print(f"  device peak of every allocation {total_peak} B; live at exit {sum(x.event.size for x in at_exit)} B")


def check(out):
    shim, cli = os.environ["CMT_SHIM"], os.environ["CMT_CLI"]
    failures = []
    for name, (env_extra, expect_reserved) in SETTINGS.items():
        env = dict(os.environ)
        for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING"):
            env.pop(k, None)
        env.update(env_extra)
        env["LD_PRELOAD"] = shim
        env["CUMEMTRACE_OUTPUT"] = os.path.join(out, f"torch_{name}.%p.bin")
        env["CUMEMTRACE_QUIET"] = "1"
        with open(os.path.join(out, f"torch_{name}.log"), "w") as log:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "workload",
                                os.path.join(out, f"torch_{name}.json")], env=env, stdout=log, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            failures.append(f"{name}: workload exited with {p.returncode} (see torch_{name}.log)")
            print(f"\n== {name}: workload FAILED, exit {p.returncode}; see torch_{name}.log")
            continue
        for trace in sorted(os.listdir(out)):
            if trace.startswith(f"torch_{name}.") and trace.endswith(".bin"):
                with open(os.path.join(out, f"torch_{name}.report.txt"), "w") as f:
                    subprocess.run([cli, "report", "--top", "20", os.path.join(out, trace)], stdout=f,
                                   stderr=subprocess.STDOUT)
        analyse(name, out, expect_reserved, failures)
    print("\ntorch_allocators: " + ("all checks passed" if not failures else "FAILED: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "workload":
        workload(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
