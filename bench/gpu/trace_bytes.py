#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Bytes per event of cumemtrace traces, without building anything: walks the
chunks and records (docs/trace-format.md) and prints one JSON line per trace:
file size, events (allocations, releases, others), the bytes of the event
records themselves, both divided by the events, and the interned stacks with
their depth in frames.

    trace_bytes.py TRACE..."""
import json
import os
import struct
import sys

HEADER = struct.Struct("<8sHHI")
CHUNK = struct.Struct("<IIQIIQIIQ")  # format 2: 48-byte chunk headers
MAGIC_EVENTS, MAGIC_META = 0x45544D43, 0x4D544D43
META_STACK = 4


def varint(data, p):
    v = shift = 0
    while True:
        b = data[p]
        p += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, p
        shift += 7


def measure(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, major, _minor, header_size = HEADER.unpack_from(data, 0)
    if magic != b"CUMEMTRC" or major != 2:
        raise SystemExit(f"trace_bytes: {path}: not a version 2 cumemtrace trace")
    counts = {1: 0, 2: 0}
    other = record_bytes = meta_bytes = 0
    stack_frames = []
    off = header_size
    while off + CHUNK.size <= len(data):
        magic, size = CHUNK.unpack_from(data, off)[:2]
        if magic == 0 or size < CHUNK.size:
            break
        p, end = off + CHUNK.size, min(off + size, len(data))
        if magic == MAGIC_EVENTS:
            while p < end and data[p] != 0:
                start = p
                rtype = data[p]
                mask, p = varint(data, p + 2)
                for bit in range(mask.bit_length()):
                    if mask >> bit & 1:
                        _, p = varint(data, p)
                p += 2  # the record's check
                record_bytes += p - start
                if rtype in counts:
                    counts[rtype] += 1
                else:
                    other += 1
        elif magic == MAGIC_META:
            while p < end and data[p] != 0:
                length, q = varint(data, p + 1)
                if data[p] == META_STACK:
                    _id, r = varint(data, q)
                    _modules_known, r = varint(data, r)
                    frames, _ = varint(data, r)
                    stack_frames.append(frames)
                meta_bytes += q + length + 2 - p
                p = q + length + 2
        off += size
    events = counts[1] + counts[2] + other
    return {"trace": os.path.basename(path), "file_bytes": len(data), "events": events, "allocs": counts[1],
            "frees": counts[2], "other_records": other, "event_record_bytes": record_bytes,
            "metadata_bytes": meta_bytes, "stacks": len(stack_frames),
            "stack_frames_max": max(stack_frames, default=0),
            "stack_frames_median": sorted(stack_frames)[len(stack_frames) // 2] if stack_frames else 0,
            "file_bytes_per_event": round(len(data) / events, 2) if events else None,
            "record_bytes_per_event": round(record_bytes / events, 2) if events else None}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: trace_bytes.py TRACE...")
    for path in sys.argv[1:]:
        print(json.dumps(measure(path)))
