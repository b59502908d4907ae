#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Hugging Face causal language model built from a config (no download:
transformers' GPT-2 architecture with random weights), trained for a few
steps on random tokens. Used by run_python_validation.sh: the report must name
this script's lines (the forward and backward calls below, marked
`# site:NAME`) and PyTorch's share of the peak must equal
max_memory_reserved().

    train_hf.py [--layers 6] [--hidden 1024] [--seq 1024] [--batch 8] [--warmup 3] [--steps 10]

Prints one JSON line like train_mlp.py."""
import argparse
import json
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()

    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_embd=args.hidden, n_head=args.hidden // 64,
                        n_positions=args.seq, vocab_size=32000)
    model = GPT2LMHeadModel(config).cuda()  # site:model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")  # site:tokens

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(input_ids=tokens, labels=tokens)  # site:forward
        out.loss.backward()  # site:backward
        opt.step()  # site:optimizer

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
