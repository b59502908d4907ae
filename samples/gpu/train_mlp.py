#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small PyTorch training script of the kind our users write: a 12-block
MLP (each block Linear -> GELU -> Linear with a residual) trained with AdamW on
random batches, every step synchronised and timed. Used by
run_python_validation.sh to check that cumemtrace names this script's lines.

The largest tensors the script itself makes come from three known lines,
marked below with `# site:NAME` comments (the validation finds their line
numbers by these marks, so editing the file keeps the check right):
  site:batch       the input batch, BATCH x WIDTH floats
  site:activation  each block's hidden activation, BATCH x 4*WIDTH (made
                   inside torch by the first Linear of the block's forward)
  site:weights     the model's parameters (made at model construction)
  site:kept        with --keep N, N tensors of 1 MiB made once and never
                   released: a list given an extra reference (as a C
                   extension's missing Py_DECREF would), so they are still
                   allocated when the process exits (a tensor leak)

    train_mlp.py [--blocks 12] [--width 2048] [--batch 4096] [--warmup 5] [--steps 30] [--keep 0]

Prints one JSON line: step times (median, min, quartiles), steps, and PyTorch's
own figures: max_memory_allocated, max_memory_reserved, memory_reserved at the
end, so the report can be held against them."""
import argparse
import ctypes
import json
import statistics
import time

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up = nn.Linear(width, 4 * width)  # site:weights
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.up(x)  # site:activation
        h = torch.nn.functional.gelu(h)
        return x + self.down(h)


def make_model(blocks, width):
    return nn.Sequential(*[Block(width) for _ in range(blocks)]).cuda()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--keep", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = make_model(args.blocks, args.width)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        x = torch.randn(args.batch, args.width, device="cuda")  # site:batch
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    if args.keep:
        kept = [torch.empty(1 << 18, device="cuda") for _ in range(args.keep)]  # site:kept
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))  # never released: the leak under test
        del kept

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter_ns()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    q = statistics.quantiles(times, n=4)
    print(json.dumps({
        "median_step_ms": statistics.median(times), "min_step_ms": min(times), "q1_step_ms": q[0],
        "q3_step_ms": q[2], "steps_measured": args.steps, "steps_total": args.steps + args.warmup,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_reserved_at_end": torch.cuda.memory_reserved(),
        "memory_allocated_at_end": torch.cuda.memory_allocated(),
        "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
    }), flush=True)


if __name__ == "__main__":
    main()
