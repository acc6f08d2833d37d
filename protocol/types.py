"""Primitive types of the Kafka protocol: readers and writers over bytes.

Readers take (buf, pos) and return (value, new_pos); writers append to a bytearray. Every reader
checks bounds and raises `DecodeError`, so a truncated or hostile frame never reads past its
end. Varints are Kafka's (protobuf-style, little-endian base-128); signed ones are zigzag
encoded (org.apache.kafka.common.utils.ByteUtils).
"""

from __future__ import annotations

import struct
import uuid

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


class DecodeError(ValueError):
    """The bytes do not form a valid value of the expected type."""


def _fixed(st: struct.Struct):
    unpack_from = st.unpack_from
    size = st.size

    def read(buf, pos: int):
        try:
            return unpack_from(buf, pos)[0], pos + size
        except struct.error:
            raise DecodeError(f"need {size} bytes at {pos}, have {len(buf) - pos}") from None

    pack = st.pack

    def write(out: bytearray, value) -> None:
        out += pack(value)

    return read, write


read_int8, write_int8 = _fixed(_I8)
read_int16, write_int16 = _fixed(_I16)
read_uint16, write_uint16 = _fixed(_U16)
read_int32, write_int32 = _fixed(_I32)
read_uint32, write_uint32 = _fixed(_U32)
read_int64, write_int64 = _fixed(_I64)
read_float64, write_float64 = _fixed(_F64)


def read_bool(buf, pos: int):
    if pos >= len(buf):
        raise DecodeError("need 1 byte for a boolean")
    return buf[pos] != 0, pos + 1


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def read_uvarint(buf, pos: int):
    result = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0x80:
        out.append(value)
        return
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf, pos: int):
    """Zigzag varint (int32) or varlong (int64): the same encoding, different ranges."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def varint_size(value: int) -> int:
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def read_uuid(buf, pos: int):
    end = pos + 16
    if end > len(buf):
        raise DecodeError("truncated uuid")
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


def _take(buf, pos: int, n: int):
    end = pos + n
    if n < 0 or end > len(buf):
        raise DecodeError(f"length {n} at {pos} runs past the end ({len(buf)})")
    return end


def _utf8(raw) -> str:
    # Kafka reads strings with `new String(bytes, UTF_8)`, which replaces malformed sequences with
    # U+FFFD instead of failing: a client id or name in another encoding is served, not dropped.
    return str(raw, "utf-8", "replace")


# Strings: int16 length (non-flexible) or uvarint length+1 (compact, flexible versions).


def read_string(buf, pos: int):
    n, pos = read_int16(buf, pos)
    if n < 0:
        raise DecodeError("null where a string is required")
    end = _take(buf, pos, n)
    return _utf8(buf[pos:end]), end


def read_nullable_string(buf, pos: int):
    n, pos = read_int16(buf, pos)
    if n == -1:
        return None, pos
    end = _take(buf, pos, n)
    return _utf8(buf[pos:end]), end


def read_compact_string(buf, pos: int):
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("null where a string is required")
    end = _take(buf, pos, n - 1)
    return _utf8(buf[pos:end]), end


def read_compact_nullable_string(buf, pos: int):
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return _utf8(buf[pos:end]), end


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode()
    out += _I16.pack(len(raw))
    out += raw


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    raw = value.encode()
    write_uvarint(out, len(raw) + 1)
    out += raw


# Bytes: int32 length or uvarint length+1. Values come back as bytes; `records` come back as a
# memoryview into the frame so the produce path never copies record data before storage.


def read_bytes(buf, pos: int, nullable: bool = False):
    n, pos = read_int32(buf, pos)
    if n < 0:
        if nullable and n == -1:
            return None, pos
        raise DecodeError("null where bytes are required")
    end = _take(buf, pos, n)
    return bytes(buf[pos:end]), end


def read_compact_bytes(buf, pos: int, nullable: bool = False):
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        if nullable:
            return None, pos
        raise DecodeError("null where bytes are required")
    end = _take(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def read_records(buf, pos: int, compact: bool):
    if compact:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        n, pos = read_int32(buf, pos)
    if n < 0:
        return None, pos
    end = _take(buf, pos, n)
    return memoryview(buf)[pos:end], end


def write_bytes(out: bytearray, value) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += _I32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value) -> None:
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)
    out += value
