#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch workloads for the tensor-level checks (the tensor-first report and
`cumemtrace whatif`): each runs as a new user's script would, with the caching
allocator as PYTORCH_CUDA_ALLOC_CONF sets it, and writes what PyTorch itself
says into a JSON file, so the traces recorded under `cumemtrace run` can be
held against it.

    torch_workloads.py MODE OUT.json [--steps N] [--nvtx] [--leak] [--memtracker]

MODE:
  train     an MLP trained with AdamW, the model and optimizer built at module
            level (alive when the interpreter exits, as in most scripts);
            --leak keeps each step's 64 MiB output (history.append(out.detach()))
  hf        a Hugging Face GPT-2 built from a config (no download), trained
  varlen    a transformer layer fed batches of random sequence lengths (seeded)
  frag_oom  PyTorch's cache fragmented: one large tensor freed, then the same
            room taken again by 424 MiB tensors that split its cached block,
            every other one freed, then 1 GiB asked (an OOM under the default
            allocator, not with expandable segments)
  capacity_oom  tensors of 2 GiB until the device is full (an OOM under every
            setting)
  cats_mlp, cats_gpt  a small model trained for 3 steps; with --memtracker
            under torch.distributed._tools.mem_tracker.MemTracker (not traced),
            which reports PyTorch's own per-category peaks

Each step is an NVTX range "step N" (with forward/backward/optimizer inside)
when --nvtx is given. OUT.json holds: per step memory_allocated and
memory_reserved after the step, max_memory_allocated, max_memory_reserved,
the OOM (its step, size, message) if one was raised, mem_get_info at the
start, the settings, and the script's own category figures (parameter bytes
from model.parameters(), gradient bytes, optimizer state bytes from
optimizer.state)."""
import argparse
import contextlib
import json
import os
import sys

import torch
import torch.nn as nn

MiB = 1 << 20
GiB = 1 << 30

ap = argparse.ArgumentParser()
ap.add_argument("mode")
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--nvtx", action="store_true")
ap.add_argument("--leak", action="store_true")
ap.add_argument("--memtracker", action="store_true")
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
free0, total = torch.cuda.mem_get_info()
result = {
    "mode": args.mode, "steps": args.steps, "leak": args.leak, "nvtx": args.nvtx,
    "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "torch": torch.__version__,
    "device": torch.cuda.get_device_name(0), "device_total": total, "device_free_at_start": free0,
    "per_step": [], "oom": None,
}


def rng(name):
    return torch.cuda.nvtx.range(name) if args.nvtx else contextlib.nullcontext()


def after_step(i):
    torch.cuda.synchronize()
    result["per_step"].append({"step": i, "memory_allocated": torch.cuda.memory_allocated(),
                               "memory_reserved": torch.cuda.memory_reserved()})


def category_figures(model, opt):
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    state = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.is_cuda:
                state += v.numel() * v.element_size()
    return {"parameter_bytes": params, "buffer_bytes": buffers, "gradient_bytes": grads,
            "optimizer_state_bytes": state}


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        h = self.up(x)  # site:activation
        h = torch.nn.functional.gelu(h)
        return x + self.down(h)


# Built at module level, as most scripts do: alive at interpreter exit.
if args.mode in ("train", "cats_mlp"):
    WIDTH = 4096
    model = nn.Sequential(*[Block(WIDTH) for _ in range(4)]).cuda()  # site:model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)  # optimizer state made at its first step
history = []


def train_step(i, batch=4096):
    with rng(f"step {i}"):
        x = torch.randn(batch, WIDTH, device=dev)  # site:batch
        with rng("forward"):
            out = model(x)  # site:forward
            loss = out.float().pow(2).mean()
        with rng("backward"):
            loss.backward()  # site:backward
        with rng("optimizer"):
            opt.step()  # site:optimizer
            opt.zero_grad(set_to_none=True)
        if args.leak:
            history.append(out.detach())  # site:leak  (64 MiB a step: 4096 x 4096 floats)


def run_train():
    for i in range(args.steps):
        train_step(i)
        after_step(i)


def run_hf():
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=4, n_embd=768, n_head=12, n_positions=512, vocab_size=32000)
    m = GPT2LMHeadModel(config).cuda()  # site:hf_model
    o = torch.optim.AdamW(m.parameters(), lr=1e-4)
    tokens = torch.randint(0, config.vocab_size, (8, 512), device=dev)
    for i in range(args.steps):
        with rng(f"step {i}"):
            out = m(input_ids=tokens, labels=tokens)  # site:hf_forward
            out.loss.backward()  # site:hf_backward
            o.step()
            o.zero_grad(set_to_none=True)
        after_step(i)
    result["categories"] = category_figures(m, o)


def run_varlen():
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True).cuda()
    o = torch.optim.SGD(layer.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1234)
    for i in range(args.steps):
        seq = int(torch.randint(64, 2048, (1,), generator=g)) // 8 * 8  # site:varlen_seq
        with rng(f"step {i}"):
            x = torch.randn(16, seq, 1024, device=dev)  # site:varlen_batch
            layer(x).float().pow(2).mean().backward()
            o.step()
            o.zero_grad(set_to_none=True)
        after_step(i)


def run_frag_oom():
    piece = 424 * MiB
    free, _ = torch.cuda.mem_get_info()
    # What is left on the device after the large tensor is under 1 GiB, so
    # the 1 GiB request cannot be served by a new segment either.
    n = (free - 200 * MiB) // piece
    n -= n % 2
    result["frag_pieces"] = n
    big = torch.empty(n * piece, dtype=torch.uint8, device=dev)  # site:frag_big
    del big  # its segment stays in PyTorch's cache
    kept = []
    try:
        for i in range(n):
            kept.append(torch.empty(piece, dtype=torch.uint8, device=dev))  # site:frag_piece
        del kept[::2]  # every other piece freed: free room in 424 MiB holes
        after_step(0)
        x = torch.empty(GiB, dtype=torch.uint8, device=dev)  # site:frag_ask
        del x
    except torch.OutOfMemoryError as e:
        result["oom"] = {"where": "frag", "pieces_made": len(kept), "message": str(e)[:600]}
    after_step(1)


def run_capacity_oom():
    kept = []
    try:
        while True:
            kept.append(torch.empty(2 * GiB, dtype=torch.uint8, device=dev))  # site:capacity_ask
    except torch.OutOfMemoryError as e:
        result["oom"] = {"where": "capacity", "tensors_made": len(kept), "message": str(e)[:600]}
    after_step(0)
    kept.clear()


def run_cats(kind):
    global model, opt
    if kind == "gpt":
        from transformers import GPT2Config, GPT2LMHeadModel
        config = GPT2Config(n_layer=4, n_embd=768, n_head=12, n_positions=512, vocab_size=32000)
        model = GPT2LMHeadModel(config).cuda()  # site:cats_model
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        tokens = torch.randint(0, config.vocab_size, (8, 512), device=dev)

        def one(i):
            with rng(f"step {i}"):
                with rng("forward"):
                    loss = model(input_ids=tokens, labels=tokens).loss
                with rng("backward"):
                    loss.backward()
                with rng("optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=False)
    else:
        def one(i):
            with rng(f"step {i}"):
                x = torch.randn(4096, WIDTH, device=dev)
                with rng("forward"):
                    loss = model(x).float().pow(2).mean()
                with rng("backward"):
                    loss.backward()
                with rng("optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=False)
    if args.memtracker:
        from torch.distributed._tools.mem_tracker import MemTracker
        mt = MemTracker()
        mt.track_external(model, opt)
        with mt:
            for i in range(3):
                if i:
                    # MemTracker refuses a module's second forward without
                    # this (torch 2.11); its global peak is kept.
                    mt.reset_mod_stats()
                one(i)
                after_step(i)
        try:
            snap = mt.get_tracker_snapshot("peak")
            result["memtracker_peak"] = {str(d): {str(k): int(v) for k, v in cats.items()} for d, cats in snap.items()}
        except Exception as e:  # noqa: BLE001 - record what MemTracker said, the run is still useful
            result["memtracker_error"] = repr(e)
    else:
        for i in range(3):
            one(i)
            after_step(i)
    result["categories"] = category_figures(model, opt)


try:
    if args.mode == "train":
        run_train()
        result["categories"] = category_figures(model, opt)
    elif args.mode == "hf":
        run_hf()
    elif args.mode == "varlen":
        run_varlen()
    elif args.mode == "frag_oom":
        run_frag_oom()
    elif args.mode == "capacity_oom":
        run_capacity_oom()
    elif args.mode in ("cats_mlp", "cats_gpt"):
        run_cats(args.mode[5:])
    else:
        sys.exit(f"unknown mode {args.mode}")
except torch.OutOfMemoryError as e:
    result["oom"] = {"where": args.mode, "step": len(result["per_step"]), "message": str(e)[:600]}
torch.cuda.synchronize()
result["max_memory_allocated"] = torch.cuda.max_memory_allocated()
result["max_memory_reserved"] = torch.cuda.max_memory_reserved()
result["memory_allocated_at_end"] = torch.cuda.memory_allocated()
result["memory_reserved_at_end"] = torch.cuda.memory_reserved()
result["kept_tensors"] = len(history)
with open(args.out, "w") as f:
    json.dump(result, f, indent=1)
print(json.dumps({k: result[k] for k in ("mode", "alloc_conf", "max_memory_allocated", "max_memory_reserved")}
                 | {"oom": bool(result["oom"])}), flush=True)
