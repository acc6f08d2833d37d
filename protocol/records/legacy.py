"""MessageSet v0/v1 (magic 0 and 1): messages, compressed wrappers and their offsets.

Theory of operation (shared/seeds 000, 001, 002). A message set is a run of entries

    offset int64 | messageSize int32 | crc uint32 | magic int8 | attributes int8
    | (magic 1: timestamp int64) | key int32-length bytes (-1 = null) | value int32-length bytes

with a CRC-32 over magic..end (so the broker may rewrite `offset` freely). The fixed part is
14 bytes in v0 and 22 in v1 (RECORD_OVERHEAD); with the 12-byte log overhead a header is 26 or
34 bytes. Attributes: bits 0-2 the codec, bit 3 (v1) the timestamp type.

Compression nests one level: the whole inner message set is compressed and becomes the value of
a *wrapper* message (key null) whose offset is the offset of the LAST inner message, so that a
reader can tell where a set ends without decompressing it (seed 000). Inner offsets:
  * v0: absolute (the broker rebuilds the wrapper to assign them);
  * v1 (KIP-31): relative, 0..n-1, so the broker only rewrites the wrapper offset. The absolute
    offset of an inner message is  AO = wrapperOffset + (IO - IO_of_last_inner)  (seed 002).
    A wrapper offset of 0 means "not assigned" (some librdkafka versions): relative = absolute.
The v1 wrapper timestamp is the max inner timestamp (CreateTime) or the log append time, which
then also stands for every inner message.

Conversions to and from RecordBatch v2 live in minibroker_protocol.records.convert; this module reads, writes,
validates and numbers message sets.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.batch import (
    COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
    InvalidBatch,
)
from minibroker_protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    codec_of,
    compress,
    decompress,
)

RECORD_OVERHEAD_V0 = 14  # crc 4 + magic 1 + attributes 1 + key length 4 + value length 4
RECORD_OVERHEAD_V1 = 22  # + timestamp 8
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

_OFFSET_SIZE = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")


def record_overhead(magic: int) -> int:
    if magic == 0:
        return RECORD_OVERHEAD_V0
    if magic == 1:
        return RECORD_OVERHEAD_V1
    raise ValueError(f"magic {magic} is not a legacy format")


def message_size(magic: int, key: bytes | None, value: bytes | None) -> int:
    """messageSize of a message: everything after the log overhead (Kafka: LegacyRecord.recordSize)."""
    return record_overhead(magic) + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)


class RecordData(NamedTuple):
    """A record to write, in any format: its offset, timestamp, key, value and (v2 only) headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] | list = ()


@dataclass(slots=True)
class LegacyRecord:
    """One v0/v1 message as read from a message set.

    For an inner message of a compressed set, `offset` is absolute and `timestamp` /
    `timestamp_type` are the effective ones (the wrapper's, under LogAppendTime), as Kafka's
    AbstractLegacyRecordBatch reports them; `attributes` and `crc` are as stored.
    """

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    crc: int
    timestamp_type: int = NO_TIMESTAMP_TYPE

    @property
    def compression(self) -> Codec:
        return codec_of(self.attributes & COMPRESSION_MASK)

    @property
    def is_compressed(self) -> bool:
        return self.attributes & COMPRESSION_MASK != 0

    @property
    def size(self) -> int:
        """Bytes on the wire, log overhead included."""
        return LOG_OVERHEAD + message_size(self.magic, self.key, self.value)


def _corrupt(msg: str) -> InvalidBatch:
    return InvalidBatch(msg, ErrorCode.CORRUPT_MESSAGE)


def _invalid(msg: str) -> InvalidBatch:
    return InvalidBatch(msg, ErrorCode.INVALID_RECORD)


# ------------------------------------------------------------------------------- writing


def legacy_attributes(magic: int, compression: int = 0, timestamp_type: int = CREATE_TIME) -> int:
    """Kafka: LegacyRecord.computeAttributes (the timestamp type bit exists from v1 on)."""
    attrs = int(codec_of(compression))
    if magic > 0 and timestamp_type == LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_BIT
    return attrs


def _message_body(magic: int, attributes: int, timestamp: int, key, value) -> bytearray:
    """crc .. end of one message."""
    if magic not in (0, 1):
        raise ValueError(f"invalid magic {magic} for a legacy message")
    if magic == 1 and timestamp < 0 and timestamp != NO_TIMESTAMP:
        raise ValueError(f"invalid message timestamp {timestamp}")
    out = bytearray(4)
    out.append(magic)
    out.append(attributes & 0xFF)
    if magic == 1:
        out += _I64.pack(timestamp)
    for part in (key, value):
        if part is None:
            out += b"\xff\xff\xff\xff"
        else:
            out += _I32.pack(len(part))
            out += part
    _U32.pack_into(out, 0, zlib.crc32(memoryview(out)[4:]) & 0xFFFFFFFF)
    return out


def encode_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int,
                   timestamp: int = NO_TIMESTAMP, attributes: int = 0) -> bytes:
    """One message with its log overhead. For v0 the timestamp is not written."""
    body = _message_body(magic, attributes, timestamp if magic == 1 else NO_TIMESTAMP, key, value)
    return _OFFSET_SIZE.pack(offset, len(body)) + bytes(body)


def build_message_set(
    records: Sequence[RecordData],
    *,
    magic: int,
    compression: int = 0,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int = NO_TIMESTAMP,
    compression_level: int | None = None,
) -> bytes:
    """Messages for `records` at their offsets, as Kafka's MemoryRecordsBuilder writes magic 0/1.

    Uncompressed: one entry per record. Compressed: one wrapper whose value is the compressed
    inner set (inner offsets absolute in v0, relative to the first record in v1) and whose
    offset is the last record's; its v1 timestamp is the log append time or the max timestamp.
    """
    codec = codec_of(compression)
    if codec is Codec.ZSTD:
        raise InvalidBatch("zstd compression requires magic 2", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    if not records:
        return b""
    log_append = magic > 0 and timestamp_type == LOG_APPEND_TIME
    inner_attrs = legacy_attributes(magic, 0, timestamp_type)
    out = bytearray()
    base = records[0].offset
    max_ts = NO_TIMESTAMP
    for r in records:
        ts = log_append_time if log_append else r.timestamp
        if magic > 0 and ts > max_ts:
            max_ts = ts
        inner_offset = r.offset - base if magic > 0 and codec is not Codec.NONE else r.offset
        out += encode_message(inner_offset, r.key, r.value, magic=magic, timestamp=ts, attributes=inner_attrs)
    if codec is Codec.NONE:
        return bytes(out)
    wrapper_value = compress(codec, out, magic=magic, level=compression_level)
    wrapper_ts = log_append_time if log_append else max_ts
    return encode_message(records[-1].offset, None, wrapper_value, magic=magic, timestamp=wrapper_ts,
                          attributes=legacy_attributes(magic, codec, timestamp_type))


# ------------------------------------------------------------------------------- reading


def read_message(buf, pos: int = 0, end: int | None = None, *, verify_crc: bool = True) -> tuple[LegacyRecord, int]:
    """Read the entry at `pos` (log overhead included) and return it with the position after it."""
    end = len(buf) if end is None else end
    if end - pos < LOG_OVERHEAD:
        raise _corrupt("truncated message log overhead")
    offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
    if size < RECORD_OVERHEAD_V0:
        raise _corrupt(f"message size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})")
    start = pos + LOG_OVERHEAD
    stop = start + size
    if stop > end:
        raise _corrupt(f"message of {size} bytes at offset {offset} runs past the end of the data")
    crc = _U32.unpack_from(buf, start)[0]
    magic = buf[start + 4]
    if magic not in (0, 1):
        raise _corrupt(f"invalid magic {magic} in a message set")
    if magic == 1 and size < RECORD_OVERHEAD_V1:
        raise _corrupt(f"v1 message size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V1})")
    if verify_crc:
        actual = zlib.crc32(memoryview(buf)[start + 4:stop]) & 0xFFFFFFFF
        if actual != crc:
            raise _corrupt(f"message at offset {offset} is corrupt (stored crc = {crc}, computed crc = {actual})")
    attributes = buf[start + 5]
    p = start + 6
    if magic == 1:
        timestamp = _I64.unpack_from(buf, p)[0]
        p += 8
        ts_type = LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME
    else:
        timestamp = NO_TIMESTAMP
        ts_type = NO_TIMESTAMP_TYPE
    parts: list[bytes | None] = []
    for what in ("key", "value"):
        if p + 4 > stop:
            raise _corrupt(f"message {what} length runs past the message")
        n = _I32.unpack_from(buf, p)[0]
        p += 4
        if n < 0:
            if n != -1:
                raise _corrupt(f"invalid message {what} length {n}")
            parts.append(None)
            continue
        if p + n > stop:
            raise _corrupt(f"message {what} of {n} bytes runs past the message")
        parts.append(bytes(buf[p:p + n]))
        p += n
    if p != stop:
        raise _corrupt(f"message size {size} does not match its key and value")
    return LegacyRecord(offset, magic, attributes, timestamp, parts[0], parts[1], crc, ts_type), stop


def iter_shallow(buf, pos: int = 0, end: int | None = None, *, verify_crc: bool = True) -> Iterator[LegacyRecord]:
    """The top-level messages (wrappers stay compressed); stops quietly at a partial entry."""
    end = len(buf) if end is None else end
    while end - pos >= LOG_OVERHEAD:
        size = _I32.unpack_from(buf, pos + 8)[0]
        if size >= 0 and pos + LOG_OVERHEAD + size > end:
            return
        msg, pos = read_message(buf, pos, end, verify_crc=verify_crc)
        yield msg


def _raw_inner(wrapper: LegacyRecord, max_size: int, verify_crc: bool) -> list[LegacyRecord]:
    """The inner messages of a wrapper with their offsets as stored."""
    if wrapper.value is None:
        raise _invalid(f"compressed message set with null value (magic {wrapper.magic})")
    data = decompress(wrapper.compression, wrapper.value, magic=wrapper.magic, max_size=max_size)
    inner: list[LegacyRecord] = []
    pos = 0
    while pos < len(data):
        msg, pos = read_message(data, pos, verify_crc=verify_crc)
        if msg.is_compressed:
            raise _invalid("inner messages must not be compressed")
        inner.append(msg)
    if not inner:
        raise _invalid("compressed message set with no inner messages")
    return inner


def inner_records(wrapper: LegacyRecord, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                  verify_crc: bool = True) -> list[LegacyRecord]:
    """Decompress a wrapper and return its inner messages with absolute offsets
    (Kafka: AbstractLegacyRecordBatch.DeepRecordsIterator)."""
    inner = _raw_inner(wrapper, max_size, verify_crc)
    if wrapper.magic == 1:
        _absolutize(wrapper, inner)
    return inner


def _absolutize(wrapper: LegacyRecord, inner: list[LegacyRecord]) -> None:
    last_inner = inner[-1].offset
    if wrapper.offset == 0:
        absolute_base = 0  # wrapper offset never assigned (librdkafka): take inner offsets as they are
    elif wrapper.offset < last_inner:
        raise _invalid(f"wrapper offset {wrapper.offset} is less than the last inner offset {last_inner}")
    else:
        absolute_base = wrapper.offset - last_inner  # AO = wrapper offset + (IO - IO of last), seed 002
    log_append = wrapper.timestamp_type == LOG_APPEND_TIME
    for m in inner:
        m.offset += absolute_base
        if log_append and m.magic == 1:
            m.timestamp = wrapper.timestamp
            m.timestamp_type = LOG_APPEND_TIME


def _relative(inner: list[LegacyRecord]) -> bool:
    """Stored inner offsets are exactly 0..n-1, the v1 producer contract (KIP-31)."""
    return all(m.offset == i for i, m in enumerate(inner))


def iter_deep(buf, pos: int = 0, end: int | None = None, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
              verify_crc: bool = True) -> Iterator[LegacyRecord]:
    """Every message with its absolute offset, wrappers opened."""
    for msg in iter_shallow(buf, pos, end, verify_crc=verify_crc):
        if msg.is_compressed:
            yield from inner_records(msg, max_size=max_size, verify_crc=verify_crc)
        else:
            yield msg


# ---------------------------------------------------------------------------- validation


@dataclass(slots=True)
class ValidatedMessageSet:
    """What validate_legacy learned about a message set."""

    records: list[LegacyRecord]  # deep, absolute offsets
    shallow_count: int
    magic: int
    compression: Codec  # of the first compressed wrapper, NONE if there is none
    max_timestamp: int
    monotonic: bool  # offsets strictly increase
    relative_offsets: bool  # every v1 wrapper's inner offsets are exactly 0..n-1 (in-place assignment)


def validate_legacy(buf, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                    max_message_size: int | None = None) -> ValidatedMessageSet:
    """The checks Kafka makes on a v0/v1 message set before appending it (seed 000, LogValidator):
    every entry whole, of a known magic, the same magic throughout, CRCs valid (inner ones too),
    wrappers holding at least one uncompressed message of the wrapper's magic, no zstd, and no
    message larger than `max_message_size` (MESSAGE_TOO_LARGE)."""
    records: list[LegacyRecord] = []
    pos = 0
    n = len(buf)
    shallow = 0
    magic: int | None = None
    codec = Codec.NONE
    relative = True
    if n == 0:
        raise _invalid("message set has no messages at all")
    while pos < n:
        msg, next_pos = read_message(buf, pos, n)
        size = next_pos - pos
        if max_message_size is not None and size - LOG_OVERHEAD > max_message_size:
            raise InvalidBatch(f"message of {size - LOG_OVERHEAD} bytes exceeds {max_message_size}",
                               ErrorCode.MESSAGE_TOO_LARGE)
        if magic is None:
            magic = msg.magic
        elif msg.magic != magic:
            raise _invalid(f"message magic {msg.magic} does not match the first message's magic {magic}")
        shallow += 1
        if msg.is_compressed:
            if msg.compression is Codec.ZSTD:
                raise InvalidBatch("zstd compression requires magic 2", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            if codec is Codec.NONE:
                codec = msg.compression
            inner = _raw_inner(msg, max_size, True)
            for m in inner:
                if m.magic != msg.magic:
                    raise _invalid(f"compressed message magic {m.magic} does not match wrapper magic {msg.magic}")
            if msg.magic == 1:
                relative = relative and _relative(inner)
                _absolutize(msg, inner)
            records.extend(inner)
        else:
            records.append(msg)
        pos = next_pos
    monotonic = all(b.offset > a.offset for a, b in zip(records, records[1:], strict=False))
    max_ts = max((r.timestamp for r in records), default=NO_TIMESTAMP) if magic == 1 else NO_TIMESTAMP
    return ValidatedMessageSet(records, shallow, magic or 0, codec, max_ts, monotonic, relative)


# ------------------------------------------------------------------------ offset assignment


def _set_v1_timestamp(entry: bytearray, timestamp: int, timestamp_type: int) -> None:
    """Rewrite a v1 message's timestamp and type bit and recompute its CRC
    (Kafka: AbstractLegacyRecordBatch.ByteBufferLegacyRecordBatch.setMaxTimestamp)."""
    start = LOG_OVERHEAD
    attrs = entry[start + 5] & ~TIMESTAMP_TYPE_BIT
    if timestamp_type == LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_BIT
    entry[start + 5] = attrs
    _I64.pack_into(entry, start + 6, timestamp)
    _U32.pack_into(entry, start, zlib.crc32(memoryview(entry)[start + 4:]) & 0xFFFFFFFF)


def assign_offsets(buf, base_offset: int, *, log_append_time: int | None = None,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                   compression_level: int | None = None) -> tuple[bytes, int]:
    """Give the messages of a validated set the offsets base_offset, base_offset + 1, ...
    Returns the new bytes and the next offset.

    As Kafka's LogValidator: an uncompressed message gets its offset rewritten (outside the
    CRC); a v1 wrapper whose inner offsets are already 0..n-1 only gets the last offset (and its
    timestamp set to the max inner timestamp or `log_append_time`); a v0 wrapper, or a v1 wrapper
    with other inner offsets (old clients), is rebuilt with new inner offsets and recompressed.
    With `log_append_time`, v1 messages get that timestamp and the LogAppendTime bit.
    """
    out = bytearray()
    next_offset = base_offset
    for msg_pos, msg in _shallow_with_positions(buf):
        entry = bytearray(buf[msg_pos:msg_pos + msg.size])
        if not msg.is_compressed:
            _I64.pack_into(entry, 0, next_offset)
            if msg.magic == 1 and log_append_time is not None:
                _set_v1_timestamp(entry, log_append_time, LOG_APPEND_TIME)
            out += entry
            next_offset += 1
            continue
        inner = _raw_inner(msg, max_size, True)
        count = len(inner)
        in_place = msg.magic == 1 and _relative(inner)
        if msg.magic == 1:
            _absolutize(msg, inner)
        if in_place:
            _I64.pack_into(entry, 0, next_offset + count - 1)
            if log_append_time is not None:
                _set_v1_timestamp(entry, log_append_time, LOG_APPEND_TIME)
            else:
                max_ts = max(m.timestamp for m in inner)
                if msg.timestamp != max_ts or msg.timestamp_type != CREATE_TIME:
                    _set_v1_timestamp(entry, max_ts, CREATE_TIME)
            out += entry
        else:
            ts_type = LOG_APPEND_TIME if log_append_time is not None else (
                msg.timestamp_type if msg.magic == 1 else CREATE_TIME)
            lat = log_append_time if log_append_time is not None else (
                msg.timestamp if ts_type == LOG_APPEND_TIME else NO_TIMESTAMP)
            renumbered = [RecordData(next_offset + i, m.timestamp, m.key, m.value) for i, m in enumerate(inner)]
            out += build_message_set(renumbered, magic=msg.magic, compression=msg.compression,
                                     timestamp_type=ts_type, log_append_time=lat,
                                     compression_level=compression_level)
        next_offset += count
    return bytes(out), next_offset


def _shallow_with_positions(buf) -> Iterator[tuple[int, LegacyRecord]]:
    pos = 0
    n = len(buf)
    while pos < n:
        msg, nxt = read_message(buf, pos, n)
        yield pos, msg
        pos = nxt


def entry_magic(buf, pos: int = 0) -> int:
    """The magic of the entry at `pos` (byte 16 in every format)."""
    return buf[pos + MAGIC_OFFSET]


__all__ = [
    "CREATE_TIME", "LOG_APPEND_TIME", "NO_TIMESTAMP_TYPE", "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1",
    "LegacyRecord", "RecordData", "ValidatedMessageSet", "assign_offsets", "build_message_set", "encode_message",
    "entry_magic", "inner_records", "iter_deep", "iter_shallow", "legacy_attributes",
    "message_size", "read_message", "record_overhead", "validate_legacy",
]
