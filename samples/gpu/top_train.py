# SPDX-License-Identifier: MIT
"""A training run for `cumemtrace top`'s validation on a GPU
(samples/gpu/run_top_validation.sh):

  top_train.py OUT.json [--steps N] [--leak] [--handshake DIR --snap K,K,...]
  top_train.py OUT.json --dry ...      the same schedule on the simulated
                                       device (no PyTorch): the script's path

Each step starts with cumemtrace_step(i) (the shim's C API, found with
ctypes: nothing when untraced) and ends with torch.cuda.synchronize(); its
time goes to OUT.json. At each step K of --snap, once the step is done, the
script writes DIR/step-K.json with what PyTorch says then
(torch.cuda.memory_reserved(), memory_allocated()) and waits for
DIR/step-K.done: the runner takes a `top --once` snapshot meanwhile, so both
describe the same instant (nothing is allocated while the script waits).

--dry: cudaMalloc/cudaFree of the simulated runtime through ctypes
(LD_LIBRARY_PATH must name tests/sim of a build), a reserve the script
keeps itself (its "memory_reserved" is the bytes it holds): what the runner
checks without a GPU."""
import argparse
import ctypes
import json
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--leak", action="store_true")
ap.add_argument("--handshake")
ap.add_argument("--snap", default="")
ap.add_argument("--dry", action="store_true")
args = ap.parse_args()
snaps = {int(k) for k in args.snap.split(",") if k}

_self = ctypes.CDLL(None)
_step = getattr(_self, "cumemtrace_step", None)
if _step:
    _step.argtypes = [ctypes.c_uint64]


def mark_step(i):
    if _step:
        _step(i)


def handshake(i, figures):
    if not args.handshake or i not in snaps:
        return
    path = os.path.join(args.handshake, f"step-{i}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(dict(figures, step=i), f)
    os.rename(path + ".tmp", path)
    done = os.path.join(args.handshake, f"step-{i}.done")
    deadline = time.monotonic() + 300
    while not os.path.exists(done):
        if time.monotonic() > deadline:
            raise SystemExit(f"top_train: no snapshot of step {i} within 300 s ({done})")
        time.sleep(0.01)


result = {"steps": args.steps, "leak": args.leak, "dry": args.dry, "per_step": []}

if args.dry:
    rt = ctypes.CDLL("libcudart.so")
    held = []
    reserve = 0

    def alloc(size):
        global reserve
        p = ctypes.c_void_p()
        if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)) != 0:
            raise SystemExit("top_train --dry: cudaMalloc failed")
        reserve += size
        return p

    def free(p, size):
        global reserve
        rt.cudaFree(p)
        reserve -= size

    model = [alloc(64 << 20) for _ in range(4)]

    def train_step(i):
        scratch = alloc(256 << 20)
        if args.leak:
            held.append(alloc(64 << 20))
        free(scratch, 256 << 20)

    def figures():
        return {"memory_reserved": reserve, "memory_allocated": None}

    def sync():
        pass
else:
    import torch
    from torch import nn

    torch.manual_seed(0)
    dev = torch.device("cuda")
    result["torch"] = torch.__version__
    result["device"] = torch.cuda.get_device_name(0)
    result["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    WIDTH = 4096

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.up = nn.Linear(width, 2 * width)
            self.down = nn.Linear(2 * width, width)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(x)))

    model = nn.Sequential(*[Block(WIDTH) for _ in range(4)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    history = []

    def train_step(i):
        x = torch.randn(4096, WIDTH, device=dev)
        out = model(x)
        out.float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.leak:
            history.append(out.detach())  # 64 MiB a step

    def figures():
        return {"memory_reserved": torch.cuda.memory_reserved(), "memory_allocated": torch.cuda.memory_allocated()}

    def sync():
        torch.cuda.synchronize()

for i in range(args.steps):
    mark_step(i)
    t0 = time.perf_counter()
    train_step(i)
    sync()
    dt = time.perf_counter() - t0
    f = figures()
    result["per_step"].append(dict(f, step=i, seconds=dt))
    handshake(i, f)

with open(args.out, "w") as fo:
    json.dump(result, fo, indent=1)
