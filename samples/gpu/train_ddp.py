#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A data-parallel training of the kind our users start with torchrun: an
8-block MLP wrapped in DistributedDataParallel, AdamW, random batches, every
step synchronised and timed. Used by run_ranks_validation.sh.

    torchrun --nproc-per-node 2 train_ddp.py --out PREFIX [--backend nccl|gloo]
        [--shared] [--stray MIB] [--width 2048] [--batch 1024] [--warmup 3] [--steps 20]

Each rank's batch is BATCH x (rank + 1) rows, so the ranks' peaks differ by
their activations (the model and its gradients are the same on every rank,
as DDP requires): the job view has an imbalance to show.

  --shared   every rank on cuda:0 (two ranks sharing one GPU; NCCL refuses
             that, so use --backend gloo: DDP's gradient buckets still live
             on the GPU, gloo reduces them through host memory)
  --stray M  every rank but 0 also keeps an M MiB tensor on cuda:0 (the
             classic bug that makes rank 0 run out first)

Each rank writes PREFIX.rank<R>.json: its rank, local rank, device, step
times (median), and PyTorch's own figures for its device (and for cuda:0 when
it is another): max_memory_reserved, max_memory_allocated, memory_reserved."""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def nccl_version():
    try:
        v = torch.cuda.nccl.version()
    except (AttributeError, RuntimeError):
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def figures(device):
    return {"max_memory_reserved": torch.cuda.max_memory_reserved(device),
            "max_memory_allocated": torch.cuda.max_memory_allocated(device),
            "memory_reserved": torch.cuda.memory_reserved(device)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--stray", type=int, default=0)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", 0 if args.shared else local)
    torch.cuda.set_device(device)
    if args.backend == "nccl":
        dist.init_process_group("nccl", device_id=device)
    else:
        dist.init_process_group(args.backend)
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(args.width) for _ in range(args.blocks)]).to(device)
    ddp = DDP(model, device_ids=[device.index])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    stray = None
    if args.stray and rank != 0 and device.index != 0:
        stray = torch.empty(args.stray << 20, dtype=torch.uint8, device="cuda:0")
    rows = args.batch * (rank + 1)

    def step():
        x = torch.randn(rows, args.width, device=device)
        loss = ddp(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times = []
    for i in range(args.warmup + args.steps):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize(device)
        if i >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    dist.barrier()
    out = {"rank": rank, "local_rank": local, "world_size": dist.get_world_size(), "backend": args.backend,
           "device": device.index, "rows": rows, "median_step_ms": statistics.median(times),
           "torch": torch.__version__, "nccl": nccl_version(),
           **figures(device)}
    if device.index != 0:
        # Only asked when this rank put memory there: asking creates nothing,
        # but a rank that never touched cuda:0 has nothing to say of it.
        out["cuda0"] = figures(0) if stray is not None else None
    with open(f"{args.out}.rank{rank}.json", "w") as f:
        json.dump(out, f)
    del stray
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
