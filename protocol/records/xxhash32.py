"""XXH32, the checksum of the LZ4 frame format, in pure Python.

Only the LZ4 frame *descriptor* checksum needs it (a few bytes per batch), so speed does not
matter; the lz4 package does not expose the function, and an extra dependency for 40 lines is
not worth it. Algorithm: Yann Collet's xxHash specification (XXH32).
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF
PRIME1 = 2654435761
PRIME2 = 2246822519
PRIME3 = 3266489917
PRIME4 = 668265263
PRIME5 = 374761393


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * PRIME2) & _MASK
    return (_rotl(acc, 13) * PRIME1) & _MASK


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """The 32-bit xxHash of `data`."""
    data = bytes(data)
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + PRIME1 + PRIME2) & _MASK
        v2 = (seed + PRIME2) & _MASK
        v3 = seed & _MASK
        v4 = (seed - PRIME1) & _MASK
        while i <= n - 16:
            v1 = _round(v1, int.from_bytes(data[i:i + 4], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 4:i + 8], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 8:i + 12], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 12:i + 16], "little"))
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
    else:
        h = (seed + PRIME5) & _MASK
    h = (h + n) & _MASK
    while i + 4 <= n:
        h = (h + int.from_bytes(data[i:i + 4], "little") * PRIME3) & _MASK
        h = (_rotl(h, 17) * PRIME4) & _MASK
        i += 4
    while i < n:
        h = (h + data[i] * PRIME5) & _MASK
        h = (_rotl(h, 11) * PRIME1) & _MASK
        i += 1
    h ^= h >> 15
    h = (h * PRIME2) & _MASK
    h ^= h >> 13
    h = (h * PRIME3) & _MASK
    h ^= h >> 16
    return h
