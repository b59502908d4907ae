#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Crafts traces that are valid by format.h but hostile in shape: inputs a
fuzzer does not find by mutation because they need arithmetic (hash
collisions) or sheer size. Each must be analysed in time and memory in
proportion to its size (docs/fuzzing.md quotes the figures).

  make_hostile.py SHAPE OUT [N]
  make_hostile.py --all OUTDIR     every shape, at the sizes `meson test`
                                   replays (suite fuzz, test fuzz-hostile)

Shapes:
  stack-ids N       N allocations, each on its own device/class account, naming
                    stack id 2^26 - 1 (sized per-site tables by the id)
  live-collide N    N live allocations whose addresses all hash to one slot of
                    the live set (fixed multiplicative hash)
  canon-collide N   N one-frame stacks whose frame hashes share their low bits
                    (one slot of the call-site canonicalization table)
  module-overlap N  N modules, the oldest covering every frame, and N stacks of
                    32 frames each, live at exit (module lookup per frame)
  long-path N       one module with a 4 MiB path and N stacks of 8 frames in
                    it, live at exit (the path is printed with every frame)
  failure-fanout N  N failed allocations with N error codes at one stack of
                    1024 frames in a module with a 16000-byte path (every
                    failure group prints the whole stack)
  growth-fanout N   N call sites, each allocating once per checkpoint interval
                    for 12 intervals and never freeing: N growth candidates
                    and N leak sites (each leak looked up among the candidates)
"""
import os
import struct
import sys

MASK64 = (1 << 64) - 1


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return ((v << 1) ^ (v >> 63)) & MASK64


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(state, data):
    """The bare CRC-32C register update of format.h ("Integrity")."""
    t = CRC_TABLE
    for b in data:
        state = t[(state ^ b) & 0xFF] ^ (state >> 8)
    return state


def check16(state):
    return (state ^ (state >> 16)) & 0xFFFF


def checked_word(value, field_offset):
    value &= (1 << 48) - 1
    return value | check16(crc32c(field_offset, struct.pack('<Q', value))) << 48


def checked_flags(flags):
    flags &= 0xFFFF
    return flags | check16(crc32c(24, struct.pack('<Q', flags))) << 16


HEADER_SIZE = 192
HEADER = '<8sHHIQIIQQQQII8Q'


def file_header(claimed_end, flags=1, pid=4242, start_monotonic_ns=1_000_000_000,
                start_realtime_ns=1_700_000_000_000_000_000, events_dropped=0):
    fields = [b'CUMEMTRC', 2, 0, HEADER_SIZE, 0x0102030405060708, flags & 8, pid, start_monotonic_ns,
              start_realtime_ns, 0, 0, 8, 0] + [0] * 8
    check = crc32c(0, struct.pack(HEADER, *fields))
    fields[5] = checked_flags(flags)
    fields[9] = checked_word(claimed_end, 48)
    fields[10] = checked_word(events_dropped, 56)
    fields[12] = check
    h = struct.pack(HEADER, *fields)
    return h + b'\0' * (HEADER_SIZE - len(h))


CHUNK_HEADER = 48


def chunk(offset, magic, records, claim_ns=1_000_000_000, tid=0, seq=0, base_addr=0):
    """A chunk at file offset `offset` holding records (each without its
    check): checked and committed as the shim does."""
    body_len = sum(len(r) + 2 for r in records)
    size = (CHUNK_HEADER + body_len + 63) // 64 * 64
    assert size <= 4 << 20
    first = struct.pack('<IIQIIQ', magic, size, claim_ns, tid, seq, base_addr)
    hcheck = crc32c(0, struct.pack('<Q', offset) + first)
    chain, body = hcheck, bytearray()
    for rec in records:
        chain = crc32c(chain ^ rec[0], rec[1:])
        body += rec + struct.pack('<H', check16(chain))
    head = first + struct.pack('<IIQ', hcheck, 0, (CHUNK_HEADER + body_len) | chain << 32)
    return head + bytes(body) + b'\0' * (size - CHUNK_HEADER - body_len)


EVENTS, META = 0x45544D43, 0x4D544D43


def chunks(offset, magic, records, **kw):
    """Packs records into as many chunks as needed, from file offset `offset`."""
    out, group, used = bytearray(), [], 0
    for rec in records:
        if used + len(rec) + 2 > (4 << 20) - 128:
            out += chunk(offset + len(out), magic, group, **kw)
            group, used = [], 0
        group.append(rec)
        used += len(rec) + 2
    if group:
        out += chunk(offset + len(out), magic, group, **kw)
    return bytes(out)


def meta(type_, payload):
    return bytes([type_]) + varint(len(payload)) + payload


def event(type_, api, fields):
    """fields: {bit: value} with values already encoded as the format wants."""
    mask = 0
    for bit in fields:
        mask |= 1 << bit
    rec = bytes([type_, api]) + varint(mask)
    for bit in sorted(fields):
        rec += varint(fields[bit])
    return rec


def count_chunks(data):
    n = 0
    off = 0
    while off < len(data):
        n += 1
        off += struct.unpack_from('<I', data, off + 4)[0]
    return n


def trace(meta_records, event_records):
    body = chunks(HEADER_SIZE, META, meta_records)
    body += chunks(HEADER_SIZE + len(body), EVENTS, event_records, tid=1)
    # The END record of a process that exited, in a metadata chunk of its
    # own at the end: it repeats the final flags, claimed_end and chunks.
    end_off = HEADER_SIZE + len(body)
    n = count_chunks(body) + 1
    end_size = 64
    while True:
        end = meta(9, varint(2_000_000_000) + varint(0) + varint(0) + varint(1) + varint(end_off + end_size) +
                   varint(n))
        last = chunk(end_off, META, [end], seq=1)
        if len(last) == end_size:
            break
        end_size = len(last)
    return file_header(end_off + end_size) + body + last


F_TS, F_DEVICE, F_ADDR, F_SIZE, F_STACK, F_KIND = 0, 1, 2, 3, 6, 7
ALLOC, FREE = 1, 2
CUDA_MALLOC = 1


def allocs(addrs, stack_of=lambda i: 0, size=256):
    """cudaMalloc on device 0 at each address, in time order."""
    recs, prev = [], 0
    for i, a in enumerate(addrs):
        f = {F_TS: zigzag(1), F_ADDR: zigzag((a - prev + (1 << 63)) % (1 << 64) - (1 << 63)), F_SIZE: size}
        s = stack_of(i)
        if s:
            f[F_STACK] = s
        recs.append(event(ALLOC, CUDA_MALLOC, f))
        prev = a
    return recs


def stack_record(sid, frames, known=0):
    payload = varint(sid) + varint(known) + varint(len(frames))
    prev = 0
    for f in frames:
        payload += varint(zigzag((f - prev + (1 << 63)) % (1 << 64) - (1 << 63)))
        prev = f
    return meta(4, payload)


def shape_stack_ids(n):
    recs = []
    for i in range(n):
        device = i % 65 - 1
        kind = (0, 1, 2)[i // 65 % 3]
        recs.append(event(ALLOC, CUDA_MALLOC, {F_TS: zigzag(1), F_DEVICE: zigzag(device),
                                               F_ADDR: zigzag(4096), F_SIZE: 64,
                                               F_STACK: (1 << 26) - 1, F_KIND: kind}))
    return trace([], recs)


def shape_live_collide(n):
    # live_set.c: slot = ((addr ^ ns << 59) * K >> 32) & (cap - 1). Products
    # below 2^32 land in slot 0 for every table size.
    k = 0x9E3779B97F4A7C15
    k_inv = pow(k, -1, 1 << 64)
    addrs = [(i + 1) * k_inv & MASK64 for i in range(n)]
    return trace([], allocs(addrs))


def shape_canon_collide(n):
    # frames.c frames_hash of one frame: h = ((H0 ^ 1 ^ ip) * P) ^ (>> 29), | 1;
    # slot = h & (cap - 1). Choose h with 22 equal low bits and invert.
    h0, p = 0x243F6A8885A308D3 ^ 1, 0x100000001B3
    p_inv = pow(p, -1, 1 << 64)
    metas, ips = [], []
    for i in range(n):
        h = ((i + 1) << 22) | 1
        x = h ^ (h >> 29) ^ (h >> 58)  # inverse of x ^= x >> 29
        ip = ((x * p_inv) & MASK64) ^ h0
        ips.append(ip)
        metas.append(stack_record(i + 1, [ip]))
    return trace(metas, allocs([0x10000 + 256 * i for i in range(n)], lambda i: i + 1))


def shape_module_overlap(n):
    metas = [meta(1, varint(1) + varint(1) + b'm')]
    # Module 1 covers every frame; the newer ones, looked at first, none.
    for i in range(n):
        lo, hi = (0, 1 << 63) if i == 0 else ((1 << 63) + 64 * i, (1 << 63) + 64 * i + 64)
        metas.append(meta(3, varint(i + 1) + varint(1) + varint(0) + varint(lo) + varint(hi) +
                          varint(0) + varint(0)))
    for i in range(n):
        metas.append(stack_record(i + 1, [0x1000 + 64 * (32 * i + j) for j in range(32)]))
    return trace(metas, allocs([0x10000 + 256 * i for i in range(n)], lambda i: i + 1))


def shape_long_path(n, path_bytes=(4 << 20) - 200):
    # One module with a 4 MiB path holding n stacks of 8 frames, live at exit.
    path = b'/' + b'x' * (path_bytes - 1)
    metas = [meta(1, varint(1) + varint(len(path)) + path),
             meta(3, varint(1) + varint(1) + varint(0) + varint(0) + varint(1 << 40) + varint(0) + varint(0))]
    for i in range(n):
        metas.append(stack_record(i + 1, [0x1000 + 64 * (8 * i + j) for j in range(8)]))
    return trace(metas, allocs([0x10000 + 256 * i for i in range(n)], lambda i: i + 1))


def shape_failure_fanout(n):
    # One 1024-frame stack in one module with the longest path a writer
    # writes, and n failed allocations there with n different error codes:
    # n failure groups, each printing the whole stack.
    path = b'/' + b'y' * 16000
    metas = [meta(1, varint(1) + varint(len(path)) + path),
             meta(3, varint(1) + varint(1) + varint(0) + varint(0) + varint(1 << 40) + varint(0) + varint(0)),
             stack_record(1, [0x1000 + 64 * j for j in range(1024)])]
    recs = [event(ALLOC, CUDA_MALLOC, {F_TS: zigzag(1), F_SIZE: 1 << 40, 5: 1000 + i, F_STACK: 1})
            for i in range(n)]
    return trace(metas, recs)


def shape_growth_fanout(n, rounds=12):
    # The first checkpoint interval is 2^16 ns (replay.h): one allocation
    # per site per 2^17 ns keeps every site's floor rising.
    metas = [stack_record(i + 1, [0x1000 + 64 * i]) for i in range(n)]
    recs, prev = [], 0
    for r in range(rounds):
        for i in range(n):
            a = 0x10000 + 256 * (r * n + i)
            f = {F_TS: zigzag((1 << 17) if i == 0 else 1), F_ADDR: zigzag(a - prev), F_SIZE: 256,
                 F_STACK: i + 1}
            recs.append(event(ALLOC, CUDA_MALLOC, f))
            prev = a
    return trace(metas, recs)


SHAPES = {
    'stack-ids': (shape_stack_ids, 195),
    'live-collide': (shape_live_collide, 20000),
    'canon-collide': (shape_canon_collide, 20000),
    'module-overlap': (shape_module_overlap, 2000),
    'long-path': (shape_long_path, 200),
    'failure-fanout': (shape_failure_fanout, 1000),
    'growth-fanout': (shape_growth_fanout, 20000),
}


# Small enough to replay in seconds under valgrind; large enough that the
# quadratic cases took visibly long before their fixes.
REPLAYED = [
    ('stack-ids', lambda: shape_stack_ids(195)),
    ('live-collide', lambda: shape_live_collide(3000)),
    ('canon-collide', lambda: shape_canon_collide(2000)),
    ('module-overlap', lambda: shape_module_overlap(300)),
    ('long-path', lambda: shape_long_path(20, 40000)),
    ('growth-fanout', lambda: shape_growth_fanout(1500)),
]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--all':
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, make in REPLAYED:
            with open(os.path.join(sys.argv[2], name), 'wb') as f:
                f.write(make())
        return 0
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in SHAPES:
        sys.stderr.write(__doc__)
        return 2
    make, default_n = SHAPES[sys.argv[1]]
    n = int(sys.argv[3]) if len(sys.argv) == 4 else default_n
    with open(sys.argv[2], 'wb') as f:
        f.write(make(n))
    return 0


if __name__ == '__main__':
    sys.exit(main())
