# SPDX-License-Identifier: MIT
"""A small reader of cumemtrace traces (docs/trace-format.md) for the GPU
validation scripts: it answers questions `cumemtrace report` does not, such
as "what was the peak of the allocations made from PyTorch's allocator",
by classifying each allocation by the modules on its stack.

It reads a complete trace into memory and replays it with the same rules as
the analyzer (analyzer/replay/replay.c): classes apart, VMM physical memory live
until released and unmapped, one cuMemUnmap releasing every mapping in its
span. It is a validation aid, not a second analyzer: it does not verify the
checks of format 2 (`cumemtrace report` does) and recovers from no damage."""
import bisect
import os
import struct

HEADER = struct.Struct("<8sHHIQIIQQQQI")
CHUNK = struct.Struct("<IIQIIQIIQ")  # format 2: 48 bytes, ending with header_check, reserved, commit
CHECK_SIZE = 2  # every record ends with a 16-bit check
MAGIC_EVENTS, MAGIC_META, MAGIC_PAD = 0x45544D43, 0x4D544D43, 0x50544D43
REC_ALLOC, REC_FREE, REC_BLOCK = 1, 2, 6
META_STRING, META_MODULE, META_STACK, META_FRAME, META_NOTE, META_ALLOCATOR = 1, 3, 4, 6, 10, 12
FRAME_SYNTHETIC_BIT = 1 << 63

# enum cmt_kind
DEVICE, MANAGED, HOST_PINNED, ASYNC, VMM_PHYSICAL, VMM_RESERVE, VMM_MAP, ARRAY, TORCH_BLOCK, TORCH_SEGMENT = range(10)
KIND_NAMES = ["device", "managed", "pinned-host", "async-pool", "vmm-physical", "vmm-reserve", "vmm-map", "array",
              "torch-block", "torch-segment"]

# CMT_API_LIST: value -> (name, default kind)
APIS = {
    1: ("cudaMalloc", DEVICE), 2: ("cudaFree", DEVICE), 3: ("cudaMallocAsync", ASYNC), 4: ("cudaFreeAsync", ASYNC),
    5: ("cudaMallocFromPoolAsync", ASYNC), 6: ("cudaMallocManaged", MANAGED), 7: ("cudaMallocHost", HOST_PINNED),
    8: ("cudaHostAlloc", HOST_PINNED), 9: ("cudaFreeHost", HOST_PINNED), 10: ("cudaMallocPitch", DEVICE),
    11: ("cudaMalloc3D", DEVICE), 12: ("cudaMallocArray", ARRAY), 13: ("cudaMalloc3DArray", ARRAY),
    14: ("cudaFreeArray", ARRAY), 15: ("cuMemAlloc", DEVICE), 16: ("cuMemFree", DEVICE),
    17: ("cuMemAllocPitch", DEVICE), 18: ("cuMemAllocManaged", MANAGED), 19: ("cuMemAllocHost", HOST_PINNED),
    20: ("cuMemHostAlloc", HOST_PINNED), 21: ("cuMemFreeHost", HOST_PINNED), 22: ("cuMemAllocAsync", ASYNC),
    23: ("cuMemFreeAsync", ASYNC), 24: ("cuMemAllocFromPoolAsync", ASYNC), 25: ("cuMemCreate", VMM_PHYSICAL),
    26: ("cuMemRelease", VMM_PHYSICAL), 27: ("cuMemMap", VMM_MAP), 28: ("cuMemUnmap", VMM_MAP),
    29: ("cuMemAddressReserve", VMM_RESERVE), 30: ("cuMemAddressFree", VMM_RESERVE), 31: ("cuArrayCreate", ARRAY),
    32: ("cuArray3DCreate", ARRAY), 33: ("cuArrayDestroy", ARRAY),
    # the block layer (format 2.1)
    51: ("torch:alloc", TORCH_BLOCK), 52: ("torch:free_requested", TORCH_BLOCK),
    53: ("torch:free_completed", TORCH_BLOCK), 54: ("torch:segment_alloc", TORCH_SEGMENT),
    55: ("torch:segment_free", TORCH_SEGMENT), 56: ("torch:segment_map", TORCH_SEGMENT),
    57: ("torch:segment_unmap", TORCH_SEGMENT), 58: ("torch:oom", TORCH_BLOCK),
}
API_CU_MEM_RELEASE, API_CU_MEM_UNMAP = 26, 28


def _varint(data, p):
    v = shift = 0
    while True:
        b = data[p]
        p += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, p
        shift += 7


def _zigzag(v):
    return (v >> 1) ^ -(v & 1)


def _namespace(kind):
    return {VMM_PHYSICAL: 1, VMM_RESERVE: 2, VMM_MAP: 3, ARRAY: 4}.get(kind, 0)


def holds_memory(kind):
    return kind not in (VMM_RESERVE, VMM_MAP)


class Event:
    __slots__ = ("type", "api", "kind", "ts", "device", "addr", "size", "stream", "result", "stack", "aux", "order")


class Trace:
    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        h = HEADER.unpack_from(data, 0)
        if h[0] != b"CUMEMTRC":
            raise ValueError(f"{path}: not a cumemtrace trace")
        if h[1] != 2:
            raise ValueError(f"{path}: trace format {h[1]}.{h[2]}, this reader knows 2.x")
        self.path = path
        self.strings = {}
        self.modules = []  # (lo, hi, path)
        self.stacks = {}   # id -> [frame addresses], innermost first
        self.events = []
        self.blocks = []      # BLOCK records (format 2.1), in file order until sorted
        self.frames = {}      # FRAME id -> (function, file, line)
        self.notes = []       # (source, text)
        self.allocators = []  # (framework, version, state, backend)
        off, order = h[3], 0
        while off + CHUNK.size <= len(data):
            magic, size, claim_ns, tid, _seq, base = CHUNK.unpack_from(data, off)[:6]
            if magic == 0 or size < CHUNK.size or size % 64:
                break
            body, end = off + CHUNK.size, min(off + size, len(data))
            if magic == MAGIC_META:
                self._meta(data, body, end)
            elif magic == MAGIC_EVENTS:
                order = self._events(data, body, end, claim_ns, base, order)
            off += size
        self.modules.sort()
        self._module_starts = [m[0] for m in self.modules]
        self.events.sort(key=lambda e: (e.ts, e.order))
        self.blocks.sort(key=lambda e: (e.ts, e.order))

    def _meta(self, data, p, end):
        while p < end and data[p] != 0:
            rtype = data[p]
            length, q = _varint(data, p + 1)
            payload_end = q + length
            if rtype == META_STRING:
                sid, q = _varint(data, q)
                n, q = _varint(data, q)
                self.strings[sid] = data[q:q + n].decode("utf-8", "replace")
            elif rtype == META_MODULE:
                _mid, q = _varint(data, q)
                path_id, q = _varint(data, q)
                _bias, q = _varint(data, q)
                lo, q = _varint(data, q)
                hi, q = _varint(data, q)
                self.modules.append((lo, hi, path_id))
            elif rtype == META_STACK:
                sid, q = _varint(data, q)
                _known, q = _varint(data, q)
                n, q = _varint(data, q)
                frames, prev = [], 0
                for _ in range(n):
                    d, q = _varint(data, q)
                    prev += _zigzag(d)
                    frames.append(prev)
                self.stacks[sid] = frames
            elif rtype == META_FRAME:
                fid, q = _varint(data, q)
                fn, q = _varint(data, q)
                fl, q = _varint(data, q)
                line, q = _varint(data, q)
                self.frames[fid] = (fn, fl, line)
            elif rtype == META_NOTE:
                _ts, q = _varint(data, q)
                src, q = _varint(data, q)
                tid_, q = _varint(data, q)
                self.notes.append((src, tid_))
            elif rtype == META_ALLOCATOR:
                _ts, q = _varint(data, q)
                fw, q = _varint(data, q)
                ver, q = _varint(data, q)
                st, q = _varint(data, q)
                be, q = _varint(data, q)
                self.allocators.append((fw, ver, st, be))
            p = payload_end + CHECK_SIZE

    def _events(self, data, p, end, claim_ns, base, order):
        ts, addr, device = claim_ns, base, 0
        while p < end and data[p] != 0:
            e = Event()
            e.type, e.api = data[p], data[p + 1]
            mask, p = _varint(data, p + 2)
            e.kind = APIS.get(e.api, ("unknown", DEVICE))[1]
            e.size = e.stream = e.result = e.stack = 0
            e.aux = [0, 0, 0, 0]
            bit = 0
            while mask >> bit:
                if mask & (1 << bit):
                    v, p = _varint(data, p)
                    if bit == 0:
                        ts += _zigzag(v)
                    elif bit == 1:
                        device = _zigzag(v)
                    elif bit == 2:
                        addr = (addr + _zigzag(v)) & 0xFFFFFFFFFFFFFFFF
                    elif bit == 3:
                        e.size = v
                    elif bit == 4:
                        e.stream = v
                    elif bit == 5:
                        e.result = v
                    elif bit == 6:
                        e.stack = v
                    elif bit == 7:
                        e.kind = v
                    elif 8 <= bit <= 11:
                        e.aux[bit - 8] = v
                bit += 1
            p += CHECK_SIZE
            e.ts, e.addr, e.device, e.order = ts, addr, device, order
            order += 1
            if e.type in (REC_ALLOC, REC_FREE):
                self.events.append(e)
            elif e.type == REC_BLOCK:
                self.blocks.append(e)
        return order

    def python_frames(self, stack_id):
        """(function, file, line) of each Python frame of a stack, innermost first."""
        out = []
        for a in self.stacks.get(stack_id, []):
            a &= 0xFFFFFFFFFFFFFFFF
            if a & FRAME_SYNTHETIC_BIT:
                f = self.frames.get(a & 0xFFFFFFFF)
                if f:
                    out.append((self.strings.get(f[0], "?"), self.strings.get(f[1], "?"), f[2]))
        return out

    def module_of(self, address):
        """Path of the module holding address, or ''."""
        i = bisect.bisect_right(self._module_starts, address) - 1
        if i >= 0 and self.modules[i][0] <= address < self.modules[i][1]:
            return self.strings.get(self.modules[i][2], "")
        return ""

    def stack_modules(self, stack_id):
        return [os.path.basename(self.module_of(a)) for a in self.stacks.get(stack_id, [])]

    def frames_text(self, stack_id, limit=8):
        out = []
        for a in self.stacks.get(stack_id, [])[:limit]:
            path = self.module_of(a)
            i = bisect.bisect_right(self._module_starts, a) - 1
            out.append(f"{os.path.basename(path) or '?'}+{a - self.modules[i][0]:#x}" if path else f"{a:#x}")
        return out


class Live:
    __slots__ = ("event", "device", "refs", "released")

    def __init__(self, event, device):
        self.event, self.device, self.refs, self.released = event, device, 0, False


def replay(trace, select, on_change=None):
    """Replays the trace, counting the allocations select(event) accepts.
    Returns (peak bytes, peak ts, live entries at the peak, live entries at
    exit); on_change(ts, live_bytes) is called after every change."""
    live, maps = {}, []
    counted = 0
    best = (0, 0, [])

    def count(entry, sign, ts):
        nonlocal counted, best
        if holds_memory(entry.event.kind) and select(entry.event):
            counted += sign * entry.event.size
            if on_change:
                on_change(ts, counted)
            if sign > 0 and counted > best[0]:
                best = (counted, ts, [x for x in live.values() if holds_memory(x.event.kind) and select(x.event)])

    def drop(key, ts):
        entry = live.pop(key)
        count(entry, -1, ts)
        return entry

    for e in trace.events:
        if e.result != 0:
            continue
        if e.type == REC_ALLOC:
            if e.addr == 0:
                continue
            ns = _namespace(e.kind)
            entry = Live(e, e.device)
            if e.kind == VMM_MAP:
                handle = live.get((1, e.aux[0]))
                if handle:
                    entry.device = handle.device
                    handle.refs += 1
            key = (ns, e.addr)
            if key in live:
                drop(key, e.ts)
            elif e.kind == VMM_MAP:
                bisect.insort(maps, e.addr)
            live[key] = entry
            count(entry, +1, e.ts)
        elif e.api == API_CU_MEM_RELEASE:
            handle = live.get((1, e.addr))
            if handle and handle.refs:
                handle.released = True
            elif handle:
                drop((1, e.addr), e.ts)
        elif e.api == API_CU_MEM_UNMAP:
            end = e.addr + max(e.size, 1)
            lo = bisect.bisect_left(maps, e.addr)
            hi = bisect.bisect_left(maps, end)
            for a in maps[lo:hi]:
                m = live.pop((3, a), None)
                if not m:
                    continue
                handle = live.get((1, m.event.aux[0]))
                if handle:
                    handle.refs = max(handle.refs - 1, 0)
                    if not handle.refs and handle.released:
                        drop((1, m.event.aux[0]), e.ts)
            del maps[lo:hi]
        else:
            key = (_namespace(APIS.get(e.api, ("", DEVICE))[1]), e.addr)
            if key in live:
                drop(key, e.ts)
    at_exit = [x for x in live.values() if holds_memory(x.event.kind) and select(x.event)]
    return best[0], best[1], best[2], at_exit
