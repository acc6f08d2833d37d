"""A stored batch of millions of records, built from bytes (no Record objects): what the console's
message page and bench/admin_attacks.py are fed (issue 30, finding 4)."""

from __future__ import annotations

import struct

import zstandard

from minibroker_protocol.records import v2
from minibroker_protocol.records.batch import crc32c

ZSTD = 4


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def big_batch(n: int) -> bytes:
    """A zstd RecordBatch v2 of `n` records (null key, value b"x"), built from bytes: a few MB of
    records that compress to kilobytes."""
    parts = []
    for i in range(n):
        body = b"\x00\x00" + _uvarint(i << 1) + b"\x01\x02x\x00"  # attrs, ts delta, offset delta, key, value, headers
        parts.append(_uvarint(len(body) << 1) + body)
    section = zstandard.ZstdCompressor(level=3).compress(b"".join(parts))
    out = bytearray(61) + section
    v2._HEADER.pack_into(out, 0, 0, len(out) - 12, 0, 2, 0, ZSTD, n - 1, 1_000, 1_000, -1, -1, -1, n)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)
