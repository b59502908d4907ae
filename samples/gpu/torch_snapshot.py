#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a script (train_mlp.py in the comparison) with PyTorch's own memory
history on: torch.cuda.memory._record_memory_history() before the script,
_dump_snapshot() after it, for the overhead figures of docs/comparison.md.

    torch_snapshot.py SNAPSHOT.pickle SCRIPT [ARGS...]

The script's own stdout stays as it is (train_mlp.py's JSON line); one more
JSON line follows with the dump's time and size and what the snapshot holds
(segments, blocks, trace entries)."""
import json
import os
import pickle
import runpy
import sys
import time

import torch


def main():
    out, script = sys.argv[1], sys.argv[2]
    torch.cuda.memory._record_memory_history(max_entries=100000)
    sys.argv = [script] + sys.argv[3:]
    runpy.run_path(script, run_name="__main__")
    t0 = time.perf_counter()
    torch.cuda.memory._dump_snapshot(out)
    dump_s = time.perf_counter() - t0
    with open(out, "rb") as f:
        snap = pickle.load(f)
    segments = snap.get("segments", [])
    traces = snap.get("device_traces", [])
    print(json.dumps({
        "snapshot_bytes": os.path.getsize(out), "dump_s": dump_s, "segments": len(segments),
        "blocks": sum(len(s.get("blocks", [])) for s in segments),
        "trace_entries": sum(len(t) for t in traces),
        "active_blocks_with_frames": sum(1 for s in segments for b in s.get("blocks", [])
                                         if b.get("state") == "active_allocated" and b.get("frames")),
    }), flush=True)


if __name__ == "__main__":
    main()
