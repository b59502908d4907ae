# SPDX-License-Identifier: MIT
"""Real-GPU check of the Python frames (issue 14): PyTorch tensors made on
known lines (marked `# @name`), kept alive to the end, and the process left
with os._exit so that each is still live in the trace (a leak whose full
stack the report prints). Run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 so that
each tensor is one cudaMalloc of its size.

    python3 torch_python_frames.py run             the workload
    python3 torch_python_frames.py check REPORT    checks `cumemtrace report
                                                   --json --full-stacks`

samples/gpu/run_python_frames_validation.sh runs both."""
import json
import os
import re
import sys

MiB = 1 << 20
HERE = os.path.abspath(__file__)


def make(nbytes):
    import torch
    return torch.empty(nbytes, dtype=torch.uint8, device="cuda")  # @make


class Block:
    def forward(self, x):
        return x + 1  # @block_forward


def build(keep):
    import torch
    keep.append(make(40 * MiB))  # @build_make
    lin = torch.nn.Linear(4096, 4096, device="cuda")  # @build_linear
    keep.append(lin)
    return lin


def run():
    import torch
    keep = []
    lin = build(keep)  # @run_build
    x = make(48 * MiB)  # @run_make
    keep.append(x)
    keep.append(Block().forward(x))  # @run_forward
    keep.append(lin(torch.ones(1024, 4096, device="cuda")))  # @run_linear
    torch.cuda.synchronize()
    print("done", flush=True)
    os._exit(0)  # every tensor still live: each is reported with its stack


def markers():
    lines = {}
    with open(HERE) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"# @(\w+)", text)
            if m:
                lines[m.group(1)] = number
    return lines


def check(report_path):
    rep = json.load(open(report_path))
    L = markers()
    me = os.path.basename(HERE)

    def py(site):
        return [(f["function"], os.path.basename(f.get("file") or ""), f.get("line"))
                for f in site["frames"] if f.get("address", 0) >= 1 << 63]

    # Every call site the report lists (leaks, or memory an allocator holds at
    # exit, or the sites at the peak), once per stack.
    by_stack = {}

    def collect(o):
        if isinstance(o, dict):
            if "frames" in o and "bytes" in o and "count" in o and "stack_id" in o:
                by_stack.setdefault(o["stack_id"], o)
            for v in o.values():
                collect(v)
        elif isinstance(o, list):
            for v in o:
                collect(v)

    collect(rep)

    def sites(size):
        return [s for s in by_stack.values() if s["count"] and s["bytes"] == size * s["count"]]

    def mine(frames):
        return [f for f in frames if f[1] == me]

    failures = 0

    def verdict(ok, what, got):
        nonlocal failures
        failures += not ok
        print("PASS" if ok else "FAIL", what, "" if ok else f": got {got}")

    module = ("<module>", me, L["module"])
    expect = {
        40 * MiB: [("make", me, L["make"]), ("build", me, L["build_make"]), ("run", me, L["run_build"]), ("main", me, L["main"]), module],
        48 * MiB: [("make", me, L["make"]), ("run", me, L["run_make"]), ("main", me, L["main"]), module],
    }
    for size, frames in expect.items():
        found = [s for s in sites(size) if py(s)[:len(frames)] == frames]
        verdict(len(found) == 1, f"{size >> 20} MiB tensor from {frames[1][0]}: Python frames",
                [py(s) for s in sites(size)])
        if found:
            names = [f["function"] or "" for f in found[0]["frames"]]
            first = next((i for i, f in enumerate(found[0]["frames"]) if f.get("address", 0) >= 1 << 63), None)
            verdict(first is not None and first > 0 and "_PyEval_EvalFrameDefault" not in names,
                    f"{size >> 20} MiB tensor: native frames first, no evaluation-loop frame left", names)
    # x + 1 makes a 48 MiB tensor in Block.forward.
    found = [s for s in sites(48 * MiB) if ("Block.forward", me, L["block_forward"]) in py(s)]
    verdict(len(found) == 1 and mine(py(found[0])) == [("Block.forward", me, L["block_forward"]),
                                                       ("run", me, L["run_forward"]), ("main", me, L["main"]),
                                                       module], "x + 1 in Block.forward", [py(s) for s in found])
    # nn.Linear's weight (64 MiB of float32) made in build, through torch's own Python code.
    found = [s for s in sites(64 * MiB) if ("build", me, L["build_linear"]) in py(s)]
    verdict(len(found) == 1 and mine(py(found[0])) == [("build", me, L["build_linear"]), ("run", me, L["run_build"]),
                                                       ("main", me, L["main"]), module],
            "Linear weight: the script's frames", [py(s) for s in found])
    if found:
        torch_frames = [f for f in py(found[0]) if f[1] != me]
        verdict(any(f[0] == "Linear.__init__" for f in torch_frames), "Linear weight: torch's Python frames inside",
                torch_frames)
    # The Linear's output (1024 x 4096 float32 = 16 MiB) from the call through nn.Module.
    found = [s for s in sites(16 * MiB) if ("run", me, L["run_linear"]) in py(s)]
    verdict(len(found) >= 1, "Linear output from run's line", [py(s) for s in sites(16 * MiB)])
    notes = rep.get("notes", [])
    verdict(not any(n.get("source") == "python" for n in notes), "no python note", notes)
    print(f"{failures} failed")
    return 1 if failures else 0


def main():
    if sys.argv[1] == "run":
        run()  # @main
    else:
        sys.exit(check(sys.argv[2]))


if __name__ == "__main__":
    main()  # @module
