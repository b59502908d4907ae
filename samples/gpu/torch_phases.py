# SPDX-License-Identifier: MIT
"""A PyTorch training loop with NVTX phases (docs/report.md, "Phases and
steps"): a transformer encoder block built from code (no downloads), each
step an NVTX range "step N" holding "forward", "backward" and "optimizer"
(torch.cuda.nvtx.range_push/pop). Every phase resets PyTorch's peak
statistics first and reads torch.cuda.max_memory_allocated() and
max_memory_reserved() at its end, so the script knows in which step and
phase PyTorch's peak was; the run script compares that with the phase
`cumemtrace report` names at the peak. Each step also keeps 16 MiB (a
history tensor, like a loss kept with its graph): the peak is in the last
step, and the report's growth per step must say +16.0 MiB per step.

    python torch_phases.py [--steps N] [--no-phases] [--json FILE]

--no-phases makes no NVTX call (the same work, for the step-time
comparison). Prints one line per step and phase, and the step times."""
import argparse
import json
import statistics
import sys
import time

import torch

KEEP_BYTES = 16 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3, help="steps left out of the step-time figures")
    ap.add_argument("--no-phases", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_phases: no CUDA device", file=sys.stderr)
        return 1
    phases = not args.no_phases
    push = torch.cuda.nvtx.range_push if phases else (lambda name: None)
    pop = torch.cuda.nvtx.range_pop if phases else (lambda: None)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True).to(dev)
    head = torch.nn.Linear(1024, 1024).to(dev)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    x = torch.randn(args.batch, args.seq, 1024, device=dev)
    target = torch.randn(args.batch, args.seq, 1024, device=dev)
    history = []
    torch.cuda.synchronize()
    figures = {"phases": [], "step_times_s": [], "with_phases": phases, "keep_bytes": KEEP_BYTES}

    def phase_end(step, name):
        torch.cuda.synchronize()
        figures["phases"].append({"step": step, "phase": name,
                                  "max_allocated": torch.cuda.max_memory_allocated(),
                                  "max_reserved": torch.cuda.max_memory_reserved(),
                                  "allocated": torch.cuda.memory_allocated()})

    for step in range(args.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        push(f"step {step}")

        torch.cuda.reset_peak_memory_stats()
        push("forward")
        loss = torch.nn.functional.mse_loss(head(model(x)), target)
        pop()
        phase_end(step, "forward")

        torch.cuda.reset_peak_memory_stats()
        push("backward")
        loss.backward()
        pop()
        phase_end(step, "backward")

        torch.cuda.reset_peak_memory_stats()
        push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        history.append(torch.empty(KEEP_BYTES // 4, dtype=torch.float32, device=dev))
        pop()
        phase_end(step, "optimizer")

        pop()
        torch.cuda.synchronize()
        figures["step_times_s"].append(time.perf_counter() - t0)

    for p in figures["phases"]:
        print(f"step {p['step']:3d} {p['phase']:<10} max_memory_allocated {p['max_allocated']:>12} "
              f"max_memory_reserved {p['max_reserved']:>12}")
    timed = figures["step_times_s"][args.warmup:] or figures["step_times_s"]
    figures["median_step_s"] = statistics.median(timed)
    figures["mean_step_s"] = statistics.fmean(timed)
    print(f"torch_phases: {args.steps} steps, phases {'on' if phases else 'off'}: median step "
          f"{figures['median_step_s'] * 1e3:.3f} ms, mean {figures['mean_step_s'] * 1e3:.3f} ms "
          f"(first {args.warmup} left out)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
