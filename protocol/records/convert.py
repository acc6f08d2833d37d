"""Format conversions of a partition's records: recompression, up-conversion, down-conversion.

Theory of operation. The broker keeps a producer's bytes as they arrived, except where the topic
asks for something else; then, and only then, the records are decoded and rebuilt, and the
zero-copy property is lost for that data (seed 002). Kafka does these in LogValidator (produce)
and RecordsUtil.downConvert (old fetch versions):

* recompress: a RecordBatch v2 in another codec than the topic's compression.type is rebuilt
  with it; offsets, timestamps, producer fields, other attributes and every record are kept.
* up_convert: a MessageSet v0/v1 becomes one RecordBatch v2 (Kafka 3.x stores only v2).
* down_convert: newer batches become messages of an older magic, for a Fetch v0-3 reader or a
  topic whose message.format.version keeps magic 0/1 on disk; control batches are dropped, zstd
  is refused, headers cannot be carried.
* conform_produce: a Produce partition's entries in the topic's stored magic and codec (the one
  call the append validator, minibroker_storage.log_validator, makes).

Validation is not done here: callers hand in batches whose headers were checked
(minibroker_storage.log_validator), or bytes from a log.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records import legacy, v2
from minibroker_protocol.records.batch import TRANSACTIONAL_BIT, InvalidBatch, iter_batches
from minibroker_protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Codec, codec_of
from minibroker_protocol.records.legacy import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    RecordData,
    build_message_set,
    iter_deep,
    iter_shallow,
)
from minibroker_protocol.records.v2 import build_batch, decode_batch

# compression.type values (topic or broker config) -> codec; "producer" keeps what came.
CODEC_BY_NAME = {
    "uncompressed": Codec.NONE, "none": Codec.NONE, "gzip": Codec.GZIP, "snappy": Codec.SNAPPY,
    "lz4": Codec.LZ4, "zstd": Codec.ZSTD,
}


def recompress(records, codec: int, *, max_size: int = 64 * 1024 * 1024) -> bytes:
    """Every v2 batch in `records` rebuilt with `codec`; batches already in it are copied as is."""
    out = bytearray()
    for view in iter_batches(records):
        raw = memoryview(records)[view.pos:view.pos + view.size]
        if view.compression == codec or view.is_control:
            out += raw
            continue
        b = decode_batch(records, view.pos, max_size=max_size)
        out += build_batch(
            [r.to_record() for r in b.records],
            base_offset=b.base_offset,
            compression=codec,
            timestamp_type=b.timestamp_type,
            base_timestamp=b.base_timestamp,
            max_timestamp=b.max_timestamp if b.timestamp_type == v2.LOG_APPEND_TIME else None,
            producer_id=b.producer_id,
            producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence,
            is_transactional=bool(b.attributes & TRANSACTIONAL_BIT),
            partition_leader_epoch=b.partition_leader_epoch,
            last_offset_delta=b.last_offset_delta,
        )
    return bytes(out)


def up_convert(buf, *, base_offset: int | None = None, compression: int | None = None,
               partition_leader_epoch: int = v2.NO_PARTITION_LEADER_EPOCH,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """A v0/v1 message set as one RecordBatch v2 (Kafka: LogValidator's conversion path).

    Offsets are kept, or assigned from `base_offset`. The codec is the set's own unless
    `compression` says otherwise. A v1 set whose messages all use LogAppendTime becomes a
    LogAppendTime batch; v0 messages have no timestamp (-1).
    """
    msgs = list(iter_deep(buf, max_size=max_size))
    if not msgs:
        return b""
    if compression is None:
        compression = next((m.compression for m in iter_shallow(buf, verify_crc=False) if m.is_compressed),
                           Codec.NONE)
    if base_offset is not None:
        offsets = [base_offset + i for i in range(len(msgs))]
    else:
        offsets = [m.offset for m in msgs]
    log_append = all(m.timestamp_type == LOG_APPEND_TIME for m in msgs)
    base_ts = msgs[0].timestamp
    records = [
        v2.Record(timestamp_delta=m.timestamp - base_ts, offset_delta=off - offsets[0], key=m.key, value=m.value)
        for m, off in zip(msgs, offsets, strict=True)
    ]
    max_ts = max(m.timestamp for m in msgs)
    return v2.build_batch(
        records, base_offset=offsets[0], compression=compression,
        timestamp_type=v2.LOG_APPEND_TIME if log_append else v2.CREATE_TIME, base_timestamp=base_ts,
        max_timestamp=max_ts, partition_leader_epoch=partition_leader_epoch,
    )


def down_convert(buf, to_magic: int, *, first_offset: int = 0,
                 max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, max_bytes: int | None = None) -> bytes:
    """Rewrite every batch newer than `to_magic` in that format (Kafka: RecordsUtil.downConvert).

    Batches already at or below `to_magic` are copied. Below magic 2, control batches are
    dropped, zstd batches are refused (UNSUPPORTED_COMPRESSION_TYPE), headers are lost, and
    records before `first_offset` are dropped from uncompressed batches (a v0/v1 entry holds one
    uncompressed record, so a fetch from the middle of a v2 batch must not repeat earlier ones).
    A partial batch at the end is left out.

    With `max_bytes` (the fetch's partition_max_bytes) conversion stops once that many bytes of
    records are converted, in the middle of a batch if need be, but never before the first
    record (Kafka: LazyDownConversionRecords converts up to the fetch's size, KIP-74 lets the
    first batch through); records are decoded one at a time, so a stored batch of millions of
    records costs what the fetch takes (issue 30: 3 M records for max_bytes=1024 took 25 s).
    """
    if to_magic not in (0, 1, 2):
        raise ValueError(f"cannot convert to magic {to_magic}")
    out = bytearray()
    mv = memoryview(buf)
    for view in iter_batches(buf):
        if max_bytes is not None and out and len(out) >= max_bytes:
            break
        raw = mv[view.pos:view.pos + view.size]
        if view.magic <= to_magic:
            out += raw
            continue
        if view.is_control:
            continue
        codec = codec_of(view.compression)
        if codec is Codec.ZSTD:
            raise InvalidBatch("down-conversion of zstd-compressed batches is not supported",
                               ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        source: Iterator[Any] = (v2.iter_batch_records(raw, max_size=max_size) if view.magic == 2
                                 else iter_deep(raw, max_size=max_size))
        budget = None if max_bytes is None else max_bytes - len(out)
        recs, full = _take_records(source, first_offset if codec is Codec.NONE else None, budget)
        if not recs:
            continue
        ts_type = LOG_APPEND_TIME if view.timestamp_type == LOG_APPEND_TIME else CREATE_TIME
        out += build_message_set(
            recs, magic=to_magic, compression=codec, timestamp_type=ts_type,
            log_append_time=view.max_timestamp if ts_type == LOG_APPEND_TIME else NO_TIMESTAMP,
        )
        if full:
            break
    return bytes(out)


# A legacy message's bytes besides its key and value (v1: offset, size, crc, magic, attributes,
# timestamp, key and value lengths), to count what a conversion has produced so far.
_LEGACY_OVERHEAD = 8 + 4 + 4 + 1 + 1 + 8 + 4 + 4


def _take_records(source: Iterator[Any], first_offset: int | None, budget: int | None) -> tuple[list[RecordData], bool]:
    """Records of one batch from `source` (those before `first_offset` skipped) until `budget`
    bytes of messages are taken, at least one; and whether the budget stopped it."""
    recs: list[RecordData] = []
    size = 0
    for r in source:
        if first_offset is not None and r.offset < first_offset:
            continue
        recs.append(RecordData(r.offset, r.timestamp, r.key, r.value))
        if budget is not None:
            size += _LEGACY_OVERHEAD + len(r.key or b"") + len(r.value or b"")
            if size >= budget:
                return recs, True
    return recs, False


def conform_produce(records: Any, *, magics: set[int], stored: int, compression_type: str | None,
                    log_append_time: bool) -> Any:
    """A Produce partition's entries (of the magics `magics`) in the topic's stored magic and
    codec; `records` itself when nothing needs to change."""
    wanted = None if compression_type in (None, "producer") else CODEC_BY_NAME[compression_type]
    if len(magics) > 1:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce data mixes message formats (magic {sorted(magics)})")
    if magics == {2}:
        return _v2_to_legacy(records, stored, wanted, log_append_time)
    if magics == {stored} and wanted is None:
        return records  # already the stored format: the log validates and numbers it (one decompression)
    validated = legacy.validate_legacy(records)
    if stored == 2:
        return up_convert(records, base_offset=0, compression=wanted)
    if validated.magic == stored and wanted in (None, validated.compression):
        return records  # the log validates and numbers it as it is
    codec = validated.compression if wanted is None else wanted
    recs = [RecordData(i, r.timestamp if stored == 1 else NO_TIMESTAMP, r.key, r.value)
            for i, r in enumerate(validated.records)]
    return build_message_set(recs, magic=stored, compression=codec)


def _v2_to_legacy(records: Any, stored: int, wanted: Codec | None, log_append_time: bool) -> bytes:
    """RecordBatch v2 from a newer producer, as a v0/v1 message set (Kafka: LogValidator with
    toMagic < 2, which refuses what the old format cannot say: producer ids, headers)."""
    recs: list[RecordData] = []
    codec: Codec | None = wanted
    seen = 0
    for view in iter_batches(records):
        seen += view.size
        view.validate()
        if view.is_transactional:
            raise KafkaError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                             f"Transactional records cannot be used with magic version {stored}")
        if view.has_producer_id:
            raise KafkaError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                             f"Idempotent records cannot be used with magic version {stored}")
        if view.timestamp_type == 1 and not log_append_time:
            raise KafkaError(ErrorCode.INVALID_TIMESTAMP, "Producer should not set timestamp type to LogAppendTime.")
        if codec is None:
            codec = Codec(view.compression)
        for r in decode_batch(records, view.pos).records:
            if r.headers:
                raise KafkaError(ErrorCode.INVALID_RECORD, f"Magic v{stored} does not support record headers")
            recs.append(RecordData(len(recs), r.timestamp if stored == 1 else NO_TIMESTAMP, r.key, r.value))
    if seen != len(records):
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{len(records) - seen} trailing bytes after the last batch")
    if not recs:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request has no records")
    return build_message_set(recs, magic=stored, compression=codec or Codec.NONE)
