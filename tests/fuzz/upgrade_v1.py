#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rewrites format-1 traces (no checksums) as format-2 traces with the same
chunks and records, each checked and committed as format.h says, so that
inputs kept for what their records hold (fuzzer finds, regressions) keep
reaching the analyzer past the reader's checks.

  upgrade_v1.py FILE...     rewrites each format-1 FILE in place

Chunks are read as format 1 laid them out (32-byte headers) and records as
far as they parse; what does not parse (the damage a fuzzer made) is
dropped from there to the chunk's end. An END record gets the three fields
format 2 added (the final flags, claimed_end and number of chunks). A file
that is not format 1 is left alone.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hostile as mh  # noqa: E402  (the format-2 writers)

V1_HEADER = '<8sHHIQIIQQQQII'
V1_CHUNK = 32
MAGICS = (mh.EVENTS, mh.META, 0x50544D43)


def get_varint(data, pos, end):
    v, shift = 0, 0
    while pos < end:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7
        if shift > 63:
            return None, pos
    return None, pos


def event_records(data, pos, end):
    recs = []
    while pos + 3 <= end and data[pos] != 0:
        start = pos
        mask, pos = get_varint(data, pos + 2, end)
        if mask is None or mask > 0xFFFFFFFF:
            break
        ok = True
        for _ in range(bin(mask).count('1')):
            v, pos = get_varint(data, pos, end)
            if v is None:
                ok = False
                break
        if not ok:
            break
        recs.append(bytes(data[start:pos]))
    return recs


def meta_records(data, pos, end):
    recs = []
    while pos < end and data[pos] != 0:
        start = pos
        length, pos = get_varint(data, pos + 1, end)
        if length is None or length > end - pos:
            break
        pos += length
        recs.append(bytes(data[start:pos]))
    return recs


def fixed_varint(v, width=9):
    """A varint of `width` bytes (non-minimal encodings are valid)."""
    out = bytearray()
    for _ in range(width - 1):
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v & 0x7F)
    return bytes(out)


def upgrade(data):
    h = struct.unpack_from(V1_HEADER, data, 0)
    header_size, flags = h[3], h[5]
    parsed = []  # (magic, claim_ns, tid, seq, base, records)
    off = header_size
    while off + V1_CHUNK <= len(data):
        magic, size, claim_ns, tid, seq, base = struct.unpack_from('<IIQIIQ', data, off)
        if magic not in MAGICS or size < V1_CHUNK or size % 64:
            break
        end = min(off + size, len(data))
        if magic == mh.EVENTS:
            parsed.append((magic, claim_ns, tid, seq, base, event_records(data, off + V1_CHUNK, end)))
        elif magic == mh.META:
            parsed.append((magic, claim_ns, tid, seq, base, meta_records(data, off + V1_CHUNK, end)))
        off += size

    def build(claimed_end, chunks):
        out = bytearray()
        offset = mh.HEADER_SIZE
        for magic, claim_ns, tid, seq, base, recs in parsed:
            if magic == mh.META:
                fixed = []
                for r in recs:
                    if r[0] == 9:  # END: the fields format 2 added, fixed width
                        length, pos = get_varint(r, 1, len(r))
                        payload = r[pos:pos + length] + fixed_varint(flags & 0xFFFF) + \
                            fixed_varint(claimed_end) + fixed_varint(chunks)
                        r = bytes([9]) + mh.varint(len(payload)) + payload
                    fixed.append(r)
                recs = fixed
            body = mh.chunk(offset, magic, recs, claim_ns=claim_ns, tid=tid, seq=seq, base_addr=base)
            out += body
            offset += len(body)
        return bytes(out)

    first = build(0, 0)
    body = build(mh.HEADER_SIZE + len(first), len(parsed))
    assert len(body) == len(first)
    return mh.file_header(mh.HEADER_SIZE + len(body), flags, pid=h[6], start_monotonic_ns=h[7],
                          start_realtime_ns=h[8], events_dropped=h[10] & ((1 << 48) - 1)) + body


def main():
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    for path in sys.argv[1:]:
        with open(path, 'rb') as f:
            data = f.read()
        if len(data) < struct.calcsize(V1_HEADER) or data[:8] != b'CUMEMTRC' or data[8:10] != b'\x01\x00':
            continue
        with open(path, 'wb') as f:
            f.write(upgrade(data))
    return 0


if __name__ == '__main__':
    sys.exit(main())
