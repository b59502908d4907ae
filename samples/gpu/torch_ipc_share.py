# SPDX-License-Identifier: MIT
"""PyTorch sharing a CUDA tensor from a producer to a consumer process with
torch.multiprocessing (cudaIpcGetMemHandle / cudaIpcOpenMemHandle underneath),
for run_ipc_validation.sh.

    torch_ipc_share.py OUT.json [ELEMENTS]

The producer (this process) makes a float32 tensor of ELEMENTS (default
16 Mi + 1000: 64 MiB and a bit, so its caching-allocator segment is the
request rounded up to 2 MiB) in a fresh segment, and sends it through a
spawn-context queue; the consumer (a child under the same profiler) adds
one to it in place, reports its sum and which segment it mapped, and
exits. The producer writes what the validation compares: the tensor's nbytes,
its segment's size from torch.cuda.memory_snapshot(), both pids."""
import json
import os
import sys

import torch
import torch.multiprocessing as mp


def consumer(q, back):
    t = q.get()
    t.add_(1.0)
    torch.cuda.synchronize()
    back.put({"pid": os.getpid(), "sum": float(t.sum().item()), "data_ptr": t.data_ptr(),
              "nbytes": t.numel() * t.element_size()})
    del t
    torch.cuda.synchronize()


def segment_of(ptr):
    for seg in torch.cuda.memory_snapshot():
        if seg["address"] <= ptr < seg["address"] + seg["total_size"]:
            return seg
    return None


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16 * 1024 * 1024 + 1000
    mp.set_start_method("spawn")
    t = torch.zeros(n, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    seg = segment_of(t.data_ptr())
    q, back = mp.Queue(), mp.Queue()
    p = mp.Process(target=consumer, args=(q, back))
    p.start()
    q.put(t)
    got = back.get(timeout=120)
    p.join(timeout=120)
    res = {
        "producer_pid": os.getpid(),
        "consumer_pid": got["pid"],
        "nbytes": t.numel() * t.element_size(),
        "data_ptr": t.data_ptr(),
        "segment_address": seg["address"] if seg else None,
        "segment_bytes": seg["total_size"] if seg else None,
        "consumer_sum": got["sum"],
        "consumer_exit": p.exitcode,
        "torch": torch.__version__,
    }
    torch.cuda.synchronize()
    print(json.dumps(res))
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    del t


if __name__ == "__main__":
    main()
