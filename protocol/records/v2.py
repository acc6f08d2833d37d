"""RecordBatch v2 (magic 2, KIP-98): building and fully decoding batches and their records.

Theory of operation: a batch is the 61-byte header described in minibroker_protocol.records.batch, then
`recordsCount` records, compressed together when the codec is not NONE (the header never is).
A record is small because everything in it is relative to the header and varint encoded
(zigzag, as protobuf's sint; org.apache.kafka.common.utils.ByteUtils):

    length varint | attributes int8 (unused, 0) | timestampDelta varlong | offsetDelta varint
    | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
    | headerCount varint | headers: (keyLength varint, key utf-8, valueLength varint, value)*

The CRC-32C in the header covers everything from `attributes` (byte 21) to the end, so the
broker may rewrite baseOffset and partitionLeaderEpoch without recomputing it (seed 002).
With LogAppendTime (attribute bit 3) every record's timestamp is the batch's maxTimestamp.

Control batches (attribute bit 5, KIP-98) hold one record whose key is `version int16, type
int16` (ControlRecordType: 0 abort, 1 commit) and, for transaction markers, whose value is
`version int16, coordinatorEpoch int32` (EndTransactionMarker).

The broker itself reads headers (minibroker_protocol.records.batch) and, on produce, the records' framing
(minibroker_protocol.records.validate); this module is for the places that must decode records: format
conversion, compaction, transaction markers, tests and dump tools.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.batch import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    V2_HEADER_SIZE,
    InvalidBatch,
    crc32c,
)
from minibroker_protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    codec_of,
    compress,
    decompress,
)
from minibroker_protocol.types import DecodeError, read_varint, varint_size, write_varint

MAGIC = 2
CREATE_TIME = 0
LOG_APPEND_TIME = 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_AFTER_CRC = 21  # the CRC covers the batch from attributes on

Header = tuple[str, "bytes | None"]


@dataclass(slots=True)
class Record:
    """One record as written inside a batch (all positions relative to the batch header)."""

    attributes: int = 0
    timestamp_delta: int = 0
    offset_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: list[Header] = field(default_factory=list)


@dataclass(slots=True)
class DecodedRecord:
    """A record read back from a batch, with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]
    offset_delta: int
    timestamp_delta: int
    attributes: int = 0

    def to_record(self) -> Record:
        return Record(self.attributes, self.timestamp_delta, self.offset_delta, self.key, self.value,
                      list(self.headers))


@dataclass(slots=True)
class DecodedBatch:
    """Every header field of a v2 batch and its records."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    records: list[DecodedRecord]

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Codec:
        return codec_of(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def last_sequence(self) -> int:
        return last_sequence(self.base_sequence, self.last_offset_delta)


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """Sequence of the last record; sequences wrap at Int32.MAX (DefaultRecordBatch)."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return (base_sequence + last_offset_delta) % (1 << 31)


def batch_attributes(compression: int = 0, timestamp_type: int = CREATE_TIME, *, is_transactional: bool = False,
                     is_control: bool = False, has_delete_horizon: bool = False) -> int:
    attrs = int(codec_of(compression))
    if timestamp_type == LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_BIT
    if is_transactional:
        attrs |= TRANSACTIONAL_BIT
    if is_control:
        attrs |= CONTROL_BIT
    if has_delete_horizon:
        attrs |= DELETE_HORIZON_BIT
    return attrs


# ------------------------------------------------------------------------------- records


def _bytes_or_none_size(value) -> int:
    return 1 if value is None else varint_size(len(value)) + len(value)


def record_body_size(record: Record) -> int:
    """Size of a record without its leading length varint."""
    size = (1 + varint_size(record.timestamp_delta) + varint_size(record.offset_delta)
            + _bytes_or_none_size(record.key) + _bytes_or_none_size(record.value)
            + varint_size(len(record.headers)))
    for hkey, hvalue in record.headers:
        raw = hkey.encode()
        size += varint_size(len(raw)) + len(raw) + _bytes_or_none_size(hvalue)
    return size


def record_size(record: Record) -> int:
    """Bytes the record takes in a batch (Kafka: DefaultRecord.sizeInBytes)."""
    body = record_body_size(record)
    return varint_size(body) + body


def _write_nullable(out: bytearray, value) -> None:
    if value is None:
        write_varint(out, -1)
    else:
        write_varint(out, len(value))
        out += value


def write_record(out: bytearray, record: Record) -> None:
    """Append one record in its wire form."""
    write_varint(out, record_body_size(record))
    out.append(record.attributes & 0xFF)
    write_varint(out, record.timestamp_delta)
    write_varint(out, record.offset_delta)
    _write_nullable(out, record.key)
    _write_nullable(out, record.value)
    write_varint(out, len(record.headers))
    for hkey, hvalue in record.headers:
        if hkey is None:
            raise ValueError("a record header key may not be null")
        raw = hkey.encode()
        write_varint(out, len(raw))
        out += raw
        _write_nullable(out, hvalue)


def _corrupt(msg: str) -> InvalidBatch:
    return InvalidBatch(msg, ErrorCode.CORRUPT_MESSAGE)


def _read_nullable(buf, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        if n != -1:
            raise _corrupt(f"invalid {what} length {n}")
        return None, pos
    if pos + n > end:
        raise _corrupt(f"{what} of {n} bytes runs past the end of its record")
    return bytes(buf[pos:pos + n]), pos + n


def read_record(buf, pos: int, end: int | None = None) -> tuple[Record, int]:
    """Read one record at `pos`; the record must fit before `end` and use exactly its length."""
    end = len(buf) if end is None else end
    try:
        length, pos = read_varint(buf, pos)
        if length < 0 or pos + length > end:
            raise _corrupt(f"record length {length} does not fit in the remaining {end - pos} bytes")
        rec_end = pos + length
        if length < 1:
            raise _corrupt("empty record")
        attributes = buf[pos]
        pos += 1
        ts_delta, pos = read_varint(buf, pos)
        off_delta, pos = read_varint(buf, pos)
        key, pos = _read_nullable(buf, pos, rec_end, "key")
        value, pos = _read_nullable(buf, pos, rec_end, "value")
        count, pos = read_varint(buf, pos)
        if count < 0 or count > rec_end - pos:
            raise _corrupt(f"invalid number of record headers {count}")
        headers: list[Header] = []
        for _ in range(count):
            klen, pos = read_varint(buf, pos)
            if klen < 0 or pos + klen > rec_end:
                raise _corrupt(f"invalid header key size {klen}")
            try:
                hkey = str(buf[pos:pos + klen], "utf-8")
            except UnicodeDecodeError:
                raise _corrupt("record header key is not valid UTF-8") from None
            pos += klen
            hvalue, pos = _read_nullable(buf, pos, rec_end, "header value")
            headers.append((hkey, hvalue))
    except DecodeError as e:
        raise _corrupt(f"truncated record: {e}") from None
    if pos != rec_end:
        raise _corrupt(f"record declared {length} bytes but its fields use {length - (rec_end - pos)}")
    return Record(attributes, ts_delta, off_delta, key, value, headers), pos


def encode_records(records: Sequence[Record]) -> bytes:
    out = bytearray()
    for r in records:
        write_record(out, r)
    return bytes(out)


# --------------------------------------------------------------------------------- batch


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = 0,
    timestamp_type: int = CREATE_TIME,
    base_timestamp: int,
    max_timestamp: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    last_offset_delta: int | None = None,
    has_delete_horizon: bool = False,
    compression_level: int | None = None,
) -> bytes:
    """A complete RecordBatch v2, byte for byte as Kafka's MemoryRecordsBuilder lays it out.

    `max_timestamp` defaults to the largest record timestamp (pass the log append time for
    LogAppendTime batches); `last_offset_delta` to the last record's offset delta (0 if none).
    """
    codec = codec_of(compression)
    body = encode_records(records)
    if codec is not Codec.NONE:
        body = compress(codec, body, magic=MAGIC, level=compression_level)
    if max_timestamp is None:
        max_timestamp = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset_delta if records else 0
    attrs = batch_attributes(codec, timestamp_type, is_transactional=is_transactional, is_control=is_control,
                             has_delete_horizon=has_delete_horizon)
    out = bytearray(V2_HEADER_SIZE)
    out += body
    _HEADER.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0, attrs,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
        len(records),
    )
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[_AFTER_CRC:]))
    return bytes(out)


def decode_batch(buf, pos: int = 0, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                 verify_crc: bool = True) -> DecodedBatch:
    """Decode the v2 batch at `pos`, records included. Raises InvalidBatch (with Kafka's error
    name) for a bad length, CRC, record layout or record count, or a decompression bomb."""
    header, data = _batch_records_section(buf, pos, max_size, verify_crc)
    (base_offset, batch_length, leader_epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, epoch,
     base_seq, count) = header
    records = _read_records(data, count, base_offset, base_ts, max_ts if attrs & TIMESTAMP_TYPE_BIT else None)
    return DecodedBatch(base_offset, batch_length, leader_epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
                        pid, epoch, base_seq, count, records)


def iter_batch_records(buf, pos: int = 0, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
                       ) -> Iterator[DecodedRecord]:
    """The records of the v2 batch at `pos`, decoded one at a time: a reader that stops early
    (a down-conversion that has filled the fetch, Kafka's LazyDownConversionRecords) pays only
    for the records it took. Header, CRC and decompression are checked as by decode_batch; a
    record-count mismatch shows only to a reader that goes to the end."""
    header, data = _batch_records_section(buf, pos, max_size, True)
    base_offset, base_ts, max_ts, attrs, count = header[0], header[7], header[8], header[5], header[12]
    log_append_time = max_ts if attrs & TIMESTAMP_TYPE_BIT else None
    rpos, n = 0, len(data)
    for _ in range(count):
        if rpos >= n:
            raise _corrupt("incorrect declared batch size, premature end of records")
        r, rpos = read_record(data, rpos, n)
        ts = log_append_time if log_append_time is not None else base_ts + r.timestamp_delta
        yield DecodedRecord(base_offset + r.offset_delta, ts, r.key, r.value, r.headers, r.offset_delta,
                            r.timestamp_delta, r.attributes)
    if rpos != n:
        raise _corrupt("incorrect declared batch size, records still remaining")


def _batch_records_section(buf, pos: int, max_size: int, verify_crc: bool) -> tuple[tuple, bytes | memoryview]:
    """The header fields of the v2 batch at `pos` and its records section, decompressed."""
    avail = len(buf) - pos
    if avail < V2_HEADER_SIZE:
        raise _corrupt(f"{avail} bytes cannot hold a v2 batch header")
    (base_offset, batch_length, leader_epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, epoch,
     base_seq, count) = _HEADER.unpack_from(buf, pos)
    if magic != MAGIC:
        raise _corrupt(f"magic {magic} is not a v2 batch")
    if batch_length < V2_HEADER_SIZE - LOG_OVERHEAD:
        raise _corrupt(f"batch length {batch_length} is smaller than the v2 header")
    end = pos + LOG_OVERHEAD + batch_length
    if end > len(buf):
        raise _corrupt(f"batch of {batch_length} bytes runs past the end of the data")
    mv = memoryview(buf)
    if verify_crc:
        actual = crc32c(mv[pos + _AFTER_CRC:end])
        if actual != crc:
            raise _corrupt(f"batch at offset {base_offset} is corrupt (stored crc = {crc}, computed crc = {actual})")
    if count < 0:
        raise InvalidBatch(f"invalid record count {count}", ErrorCode.INVALID_RECORD)
    codec = codec_of(attrs & COMPRESSION_MASK)
    section = mv[pos + V2_HEADER_SIZE:end]
    data = section if codec is Codec.NONE else decompress(codec, section, magic=MAGIC, max_size=max_size)
    return (base_offset, batch_length, leader_epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, epoch,
            base_seq, count), data


def _read_records(data, count: int, base_offset: int, base_ts: int, log_append_time: int | None):
    out: list[DecodedRecord] = []
    pos = 0
    n = len(data)
    for _ in range(count):
        if pos >= n:
            raise _corrupt("incorrect declared batch size, premature end of records")
        r, pos = read_record(data, pos, n)
        ts = log_append_time if log_append_time is not None else base_ts + r.timestamp_delta
        out.append(DecodedRecord(base_offset + r.offset_delta, ts, r.key, r.value, r.headers, r.offset_delta,
                                 r.timestamp_delta, r.attributes))
    if pos != n:
        raise _corrupt("incorrect declared batch size, records still remaining")
    return out


def decode_batches(buf, pos: int = 0, end: int | None = None, *,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[DecodedBatch]:
    """Decode every whole v2 batch in buf[pos:end]; stops at a partial one (as a fetch may end)."""
    end = len(buf) if end is None else end
    while end - pos >= V2_HEADER_SIZE:
        size = LOG_OVERHEAD + struct.unpack_from(">i", buf, pos + 8)[0]
        if size < LOG_OVERHEAD or pos + size > end:
            return
        yield decode_batch(memoryview(buf)[:end], pos, max_size=max_size)
        pos += size


# ------------------------------------------------------------------------ control records


class ControlType(IntEnum):
    """org.apache.kafka.common.record.ControlRecordType."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2  # KRaft (KIP-595)
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A parsed control record. `coordinator_epoch` is set for transaction markers only."""

    type: int
    key_version: int = CONTROL_KEY_VERSION
    coordinator_epoch: int | None = None
    value_version: int | None = None

    @property
    def is_commit(self) -> bool:
        return self.type == ControlType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlType.ABORT


def control_record_key(control_type: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _CONTROL_KEY.pack(version, control_type)


def end_txn_marker_value(coordinator_epoch: int, version: int = END_TXN_MARKER_VERSION) -> bytes:
    return _END_TXN_VALUE.pack(version, coordinator_epoch)


def build_control_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker batch (commit or abort), as MemoryRecords.withEndTransactionMarker
    writes it: transactional + control, CreateTime, no sequence, one uncompressed record."""
    if control_type not in (ControlType.ABORT, ControlType.COMMIT):
        raise ValueError(f"control type {control_type} is not a transaction marker")
    record = Record(key=control_record_key(control_type), value=end_txn_marker_value(coordinator_epoch))
    return build_batch(
        [record], base_offset=base_offset, base_timestamp=timestamp, producer_id=producer_id,
        producer_epoch=producer_epoch, is_transactional=True, is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def parse_control_record(record: Record | DecodedRecord) -> ControlRecord:
    """Read a control record's key (and, for commit/abort, its EndTransactionMarker value)."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise _corrupt(f"control record key must have at least {_CONTROL_KEY.size} bytes")
    key_version, ctype = _CONTROL_KEY.unpack_from(key)
    if key_version < 0:
        raise _corrupt(f"invalid control record key version {key_version}")
    if ctype not in (ControlType.ABORT, ControlType.COMMIT):
        return ControlRecord(ctype, key_version)
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise _corrupt(f"end transaction marker value must have at least {_END_TXN_VALUE.size} bytes")
    value_version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if value_version < 0:
        raise _corrupt(f"invalid end transaction marker version {value_version}")
    return ControlRecord(ctype, key_version, coordinator_epoch, value_version)


__all__ = [
    "CREATE_TIME", "LOG_APPEND_TIME", "MAGIC", "NO_TIMESTAMP", "ControlRecord", "ControlType", "DecodedBatch",
    "DecodedRecord", "Record", "batch_attributes", "build_batch", "build_control_batch", "control_record_key",
    "decode_batch", "decode_batches", "encode_records", "end_txn_marker_value", "last_sequence",
    "parse_control_record", "read_record", "record_size", "write_record",
]
