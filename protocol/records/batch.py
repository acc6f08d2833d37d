"""A view of a record batch's header, read straight from the bytes: no record is decoded.

Theory of operation: on the wire and on disk a partition's data is a sequence of entries that
all start the same way, `offset: int64, size: int32`, followed by `size` bytes; the byte at
position 16 is the magic in every format:

    RecordBatch v2 (magic 2, KIP-98), 61-byte header:
        0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8
       17 crc uint32 (CRC-32C of bytes 21..end) | 21 attributes int16 | 23 lastOffsetDelta int32
       27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16
       53 baseSequence int32 | 57 recordsCount int32 | 61 records...
    Message v0/v1 in a MessageSet (shared/seeds 000, 001):
        0 offset int64 | 8 messageSize int32 | 12 crc uint32 (CRC-32 of bytes 16..end) | 16 magic int8
       17 attributes int8 | (v1: 18 timestamp int64) | key bytes | value bytes

For a v0/v1 entry the "batch" is one message (a compressed one wraps the others, and its offset
is the *last* inner offset, seed 000). The storage layer works on this view alone (Kafka:
DefaultRecordBatch / AbstractLegacyRecordBatch header accessors); the produce path adds a walk of
the records' framing (minibroker_protocol.records.validate).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

from minibroker_protocol.errors import ErrorCode, KafkaError

LOG_OVERHEAD = 12  # offset + size, in front of every entry
V2_HEADER_SIZE = 61
V0_HEADER_SIZE = LOG_OVERHEAD + 14  # offset, size, crc, magic, attributes, key len, value len: 26
V1_HEADER_SIZE = V0_HEADER_SIZE + 8  # + timestamp: 34
MAGIC_OFFSET = 16

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1

# Attribute bits (v2: int16; v0/v1: int8 with the same low bits for the codec, bit 3 = timestamp type).
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # 0 = CreateTime, 1 = LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40  # KIP-534

_V2 = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


_crc32c_impl: Callable[[Any], int] | None = None


def crc32c(data: Any) -> int:
    """CRC-32C (Castagnoli), from the crc32c package's C extension, loaded on first use."""
    global _crc32c_impl
    if _crc32c_impl is None:
        _crc32c_impl = _load_crc32c()
    return _crc32c_impl(data)


def _load_crc32c() -> Callable[[Any], int]:
    """The crc32c package's extension module `crc32c._crc32c`, loaded on its own: the package's
    __init__ reads its own version from the installed metadata (importlib.metadata, which imports
    the email parser, zipfile, csv...: 12-15 ms, more than the extension costs a hundred times)
    and the broker calls nothing but the extension's crc32c(). If the package is laid out
    differently, the ordinary import does it."""
    import importlib.machinery
    import importlib.util
    import os

    spec = importlib.util.find_spec("crc32c")  # finds the package without running its __init__
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.exists(path):
                ext = importlib.util.spec_from_file_location("crc32c._crc32c", path)
                if ext is not None and ext.loader is not None:
                    module = importlib.util.module_from_spec(ext)
                    ext.loader.exec_module(module)
                    return module.crc32c
    from crc32c import crc32c as impl

    return impl


# compiled (minibroker_protocol.compiled), yet subclassed by interpreted modules (compression's CompressionError)
@mypyc_attr(allow_interpreted_subclasses=True)
class InvalidBatch(KafkaError, ValueError):
    """The bytes are not a well-formed batch; `code` is the ErrorCode Kafka answers for it
    (CorruptRecordException -> CORRUPT_MESSAGE, InvalidRecordException -> INVALID_RECORD, ...).
    A KafkaError, so a handler answers it as it is; a ValueError, so readers of stored data
    that treat it as "unreadable bytes" keep doing so. `str()` is the bare message, as sent."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.CORRUPT_MESSAGE):
        super().__init__(code, message)

    def __str__(self) -> str:
        return self.message or ""


class BatchView:
    """Header fields of the entry at `pos` in `buf`. Cheap: a few struct reads, no copies."""

    __slots__ = (
        "buf", "pos", "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
        "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
        "producer_epoch", "base_sequence", "records_count",
    )

    def __init__(self, buf, pos: int = 0):
        self.buf = buf
        self.pos = pos
        avail = len(buf) - pos
        if avail < LOG_OVERHEAD + 6:  # through the magic (v2) or the attributes (v0/v1)
            raise InvalidBatch(f"{avail} bytes cannot hold a batch header")
        magic = buf[pos + MAGIC_OFFSET]
        if magic == 2:
            if avail < V2_HEADER_SIZE:
                raise InvalidBatch(f"{avail} bytes cannot hold a v2 batch header")
            (self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic, self.crc,
             self.attributes, self.last_offset_delta, self.base_timestamp, self.max_timestamp,
             self.producer_id, self.producer_epoch, self.base_sequence,
             self.records_count) = _V2.unpack_from(buf, pos)
        elif magic in (0, 1):
            offset = _I64.unpack_from(buf, pos)[0]
            self.base_offset = offset  # for a wrapper this is the LAST inner offset (seed 000)
            self.batch_length = _I32.unpack_from(buf, pos + 8)[0]
            self.crc = _U32.unpack_from(buf, pos + 12)[0]
            self.magic = magic
            self.attributes = buf[pos + 17]
            self.partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
            self.last_offset_delta = 0
            ts = NO_TIMESTAMP
            if magic == 1 and avail >= V1_HEADER_SIZE - 8 + 8:
                ts = _I64.unpack_from(buf, pos + 18)[0]
            self.base_timestamp = self.max_timestamp = ts
            self.producer_id = NO_PRODUCER_ID
            self.producer_epoch = NO_PRODUCER_EPOCH
            self.base_sequence = NO_SEQUENCE
            self.records_count = 1
        else:
            raise InvalidBatch(f"unknown magic {magic}", ErrorCode.CORRUPT_MESSAGE)

    # -- derived fields ------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Bytes this entry occupies, log overhead included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_BIT else 0

    @property
    def is_transactional(self) -> bool:
        return self.magic == 2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return self.magic == 2 and bool(self.attributes & CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    def is_complete(self) -> bool:
        return self.batch_length >= 0 and len(self.buf) - self.pos >= self.size

    def compute_crc(self) -> int:
        """The checksum the bytes actually have: CRC-32C (v2) or CRC-32 (v0/v1)."""
        start = self.pos
        end = start + self.size
        mv = memoryview(self.buf)
        if self.magic == 2:
            return crc32c(mv[start + 21:end])
        return zlib.crc32(mv[start + 16:end]) & 0xFFFFFFFF

    def validate(self, *, producer_batch: bool = True) -> None:
        """Header-level checks Kafka's LogValidator makes before any record is looked at.
        `producer_batch=False` for batches read back from a log (recovery): the log cleaner
        removes records from the middle of a batch, so its lastOffsetDelta need not be the
        record count - 1 (Kafka checks that only on appends from clients)."""
        if self.batch_length < (V2_HEADER_SIZE if self.magic == 2 else V0_HEADER_SIZE) - LOG_OVERHEAD:
            raise InvalidBatch(f"batch length {self.batch_length} is smaller than a header")
        if not self.is_complete():
            raise InvalidBatch("batch runs past the end of the data")
        if self.compute_crc() != self.crc:
            raise InvalidBatch(f"CRC mismatch at offset {self.base_offset}")
        if self.magic == 2:
            if self.records_count < 0 or self.last_offset_delta < 0:
                raise InvalidBatch("negative record count or offset delta", ErrorCode.INVALID_RECORD)
            if producer_batch and self.records_count and self.last_offset_delta != self.records_count - 1:
                raise InvalidBatch(
                    f"lastOffsetDelta {self.last_offset_delta} does not match {self.records_count} records",
                    ErrorCode.INVALID_RECORD,
                )

    def __repr__(self) -> str:
        return (f"BatchView(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"magic={self.magic}, size={self.size}, count={self.records_count})")


def iter_batches(buf, pos: int = 0, end: int | None = None):
    """Yield a view of each whole entry in buf[pos:end]; stop quietly at a partial one."""
    end = len(buf) if end is None else end
    while end - pos >= LOG_OVERHEAD + 5:
        size = _I32.unpack_from(buf, pos + 8)[0]
        if size < 0 or pos + LOG_OVERHEAD + size > end:
            return
        view = BatchView(buf, pos)
        yield view
        pos += view.size


# -- in-place rewrites (the only edits the broker makes to a v2 batch) -------------------


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assign offsets by rewriting baseOffset; the CRC does not cover it, so it stays valid."""
    _I64.pack_into(buf, pos, base_offset)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """For message.timestamp.type=LogAppendTime: set maxTimestamp and the attribute bit, then
    recompute the CRC (Kafka: DefaultRecordBatch.setMaxTimestamp)."""
    attrs = struct.unpack_from(">h", buf, pos + 21)[0] | TIMESTAMP_TYPE_BIT
    struct.pack_into(">h", buf, pos + 21, attrs)
    _I64.pack_into(buf, pos + 35, timestamp)
    size = LOG_OVERHEAD + _I32.unpack_from(buf, pos + 8)[0]
    _U32.pack_into(buf, pos + 17, crc32c(memoryview(buf)[pos + 21:pos + size]))


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """partitionLeaderEpoch is outside the CRC too (KIP-101), so the broker may stamp it."""
    _I32.pack_into(buf, pos + 12, epoch)
