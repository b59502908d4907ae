#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PyTorch training loop for the overhead benchmark (run_overhead_bench.sh):
an MLP of LAYERS Linear+ReLU layers trained with SGD on one fixed batch,
every step synchronised and timed. With PYTORCH_NO_CUDA_MEMORY_CACHING=1 each
step makes about 6 allocations per layer (forward: the Linear and ReLU
outputs; backward: the ReLU gradient and the three Linear gradients), 52
layers about 320; with the caching allocator, none after the first steps.

    torch_train.py [--layers 52] [--hidden 512] [--batch 64] [--warmup 30] [--steps 200]

Prints one JSON line: step times in ms (median, min, quartiles), steps run in
all (warmup included), torch version and device."""
import argparse
import json
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=52)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()

    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers - 1):
        layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
    layers.append(nn.Linear(args.hidden, 10))
    model = nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(args.batch, args.hidden, device="cuda")
    y = torch.randint(0, 10, (args.batch,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

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
        "layers": args.layers, "hidden": args.hidden, "batch": args.batch, "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
    }))


if __name__ == "__main__":
    main()
