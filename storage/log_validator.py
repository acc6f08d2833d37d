"""Every check on the batches of an append, and offset assignment (Kafka: LogValidator, with
UnifiedLog.analyzeAndValidateRecords and, for a Produce request, ProduceRequest.validateRecords).

Theory of operation. An append is validated in one place, in two calls:

* `validate(records, config, ...)` needs nothing of the log's state but the clock. For a Produce
  partition (`request_version` given) it first makes the request's checks (from v3 exactly one
  RecordBatch v2, zstd from v7), then brings the batches to the topic's stored magic and codec
  (minibroker_protocol.records.convert: up-/down-conversion, recompression; the producer's batches are
  walked before that, so that conversion never trips first on a bad record). Then each batch
  header is checked (`_header_error`: whole, size against max.message.bytes, CRC, counts, magic,
  and for clients base offset 0 and no control batch), then each batch's records
  (minibroker_protocol.records.validate: every field of every record; keys on a compacted topic, reported
  per record for Produce v8+ `record_errors`), then what Kafka checks per record and we per batch
  (sequence, LogAppendTime set by a producer, timestamps within message.timestamp.*.max.ms),
  and the whole against segment.bytes. A MessageSet v0/v1 for a magic 0/1 topic is checked by
  minibroker_protocol.records.legacy (CRC-32 of every message, wrappers, sizes) and its v1 timestamps here.
  The result, `ValidatedRecords`, holds the bytes to write and their headers, parsed once.
* `assign_offsets(validated, first_offset, ...)` numbers them: baseOffset and the leader epoch
  are rewritten in the request's own bytes when they are writable (outside the CRC, as Kafka's
  LogValidator rewrites the request's ByteBuffer), maxTimestamp and the CRC under LogAppendTime;
  a message set is renumbered by minibroker_protocol.records.legacy.assign_offsets. No record is decoded
  into objects unless a conversion was needed.

The ReplicaManager calls `validate` once per Produce partition (through Partition.validate), with
its transaction check (KIP-890) as `verify`, then appends the result; the coordinators append
through Log.append_as_leader, which validates with no request version.

Order. The answers are the ones the produce path gave before the checks were gathered here: a
header error of a batch wins over its records' errors, and its records' errors over its sequence
and timestamp errors. Across the batches of one (v0-2) request, every header is checked before
any record, as Kafka's analyzeAndValidateRecords does.

The stored magic is read through `stored_magic(config)` only.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records import legacy
from minibroker_protocol.records.batch import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    V2_HEADER_SIZE,
    BatchView,
    InvalidBatch,
    iter_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from minibroker_protocol.records.convert import CODEC_BY_NAME, conform_produce, recompress
from minibroker_protocol.records.validate import validate_records
from minibroker_storage.config import LogConfig
from minibroker_storage.producer_state import AppendOrigin
from minibroker_storage.segment import BatchInfo

ZSTD = 4  # compression codec id in a batch's attributes
_MIN_ENTRY_SIZE = 14  # Kafka: LegacyRecord.RECORD_OVERHEAD_V0
_I32 = struct.Struct(">i")

__all__ = ["AppendPlan", "ValidatedRecords", "assign_offsets", "stored_magic", "validate"]


def stored_magic(config: LogConfig) -> int:
    """The magic the log's segments hold (message.format.version); the one place it is read."""
    return config.record_version


@dataclass(slots=True)
class ValidatedRecords:
    """The batches of one append, checked and in the log's format, not yet numbered."""

    records: bytes | bytearray | memoryview  # what will be written (the request's bytes unless converted)
    views: list[BatchView]  # each RecordBatch v2 header, parsed once; empty for a message set
    size: int
    now_ms: int  # the time the timestamps were checked against
    legacy: bool = False  # a MessageSet v0/v1 for a magic 0/1 log


@dataclass(slots=True)
class AppendPlan:
    """Numbered batches, with what LogAppendInfo and the segment need (Kafka: ValidationResult)."""

    data: bytes | bytearray | memoryview
    infos: list[BatchInfo]  # per batch: last offset, max timestamp, size
    starts: list[int] = field(default_factory=list)  # per v2 batch: its position in `data`
    views: list[BatchView] = field(default_factory=list)
    first_offset: int = 0
    next_offset: int = 0
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    num_records: int = 0
    log_append_time: int = NO_TIMESTAMP  # -1 unless message.timestamp.type=LogAppendTime


# ------------------------------------------------------------------------------- validation


def validate(records: bytes | bytearray | memoryview, config: LogConfig, *, now_ms: int,
             origin: str = AppendOrigin.CLIENT, request_version: int | None = None, where: str = "",
             verify: Callable[[list[BatchView]], None] | None = None) -> ValidatedRecords:
    """Check the batches of one append (see the module docstring for the order); raises
    KafkaError (InvalidBatch, RecordValidationError) with the code to answer.

    `verify` is called with the headers of the transactional batches (if any) once the records
    are in the log's format: the ReplicaManager's transaction verification (KIP-890), which
    Kafka's ReplicaManager runs before the append. The headers are the ones parsed once for the
    request's checks (or for the header checks, which then reuse them)."""
    client = origin == AppendOrigin.CLIENT
    walk = False  # the records of each batch are walked after its header is checked
    views: list[BatchView] | None = None
    if request_version is not None and client:
        records, views, walk = _conform(records, config, request_version, where)
    if verify is not None and (stored_magic(config) == 2 or not client):
        # the headers parsed by the request's checks are handed on, not parsed again; only the
        # transactional batches, so that a plain produce never reaches the transaction coordinator
        if views is None:  # converted records: their headers are new (and reused below)
            views = list(iter_batches(records))
        transactional = [v for v in views if v.magic == 2 and v.is_transactional and v.producer_id >= 0]
        if transactional:
            verify(transactional)
    if stored_magic(config) < 2 and client:
        # the coordinators write RecordBatch v2 whatever the format (Kafka 3.x's do too), so a
        # broker-wide log.message.format.version < 0.11.0 leaves __consumer_offsets readable
        return _validate_legacy(records, config, now_ms, client, where)
    views = _check_headers(memoryview(records), config, client, where, views)
    for v in views:
        if walk:
            validate_records(v, require_keys=config.compact, where=where)
        _check_producer_fields(v, config, client, now_ms)
    total = sum(v.size for v in views)
    if total > config.segment_bytes:
        raise KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE,
                         f"Message batch size is {total} bytes in append to partition {where}, which exceeds the "
                         f"maximum configured segment size of {config.segment_bytes}.")
    return ValidatedRecords(records, views, total, now_ms)


def _conform(records: bytes | bytearray | memoryview, config: LogConfig, version: int, where: str
             ) -> tuple[bytes | bytearray | memoryview, list[BatchView] | None, bool]:
    """A Produce partition: the request's checks, then the topic's magic and codec. Returns the
    records to append, their headers when these are still the producer's, and whether the
    records are still to be walked (False when they were walked before a conversion)."""
    if version >= 3:
        views: list[BatchView] = _validate_request(records, version)
        magics = {2}
    else:
        views = list(iter_batches(records))
        magics = {v.magic for v in views}
    stored = stored_magic(config)
    wanted = config.compression_type
    if stored != 2 or magics - {2}:
        if magics == {2}:
            _walk_before_conversion(views, config, where)
        out = conform_produce(records, magics=magics, stored=stored, compression_type=wanted,
                              log_append_time=config.log_append_time)
        # an up-converted message set: the broker built its records, but the keys are still to check
        return out, None, stored == 2 and 2 not in magics and config.compact
    if wanted in ("producer", None) or all(v.compression == CODEC_BY_NAME[wanted] for v in views):
        return records, views, True
    _walk_before_conversion(views, config, where)
    return recompress(records, CODEC_BY_NAME[wanted]), None, False


def _walk_before_conversion(views: list[BatchView], config: LogConfig, where: str) -> None:
    """The producer's records, before a conversion decodes them: batches whose header the log
    refuses anyway are left to that answer, which Kafka gives first; the CRC is checked only if
    the walk fails (validate_records), the conversion and the log check it otherwise."""
    for v in views:
        if _header_error(v, config, True, where, crc=False) is None:
            validate_records(v, require_keys=config.compact, where=where)


def _validate_request(records: bytes | bytearray | memoryview, version: int) -> list[BatchView]:
    """Kafka's ProduceRequest.validateRecords: from v3 a partition carries exactly one batch, of
    magic 2, and a zstd batch needs v7 (KIP-110: older clients could not read it back)."""
    _check_entry_sizes(records)
    views = list(iter_batches(records))
    if not views:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce requests with version {version} must have at least one record batch per partition")
    if views[0].magic != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                   "contain record batches with magic version 2")
    if version < 7 and views[0].compression == ZSTD:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if len(views) > 1:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                   "contain exactly one record batch per partition")
    return views


def _check_entry_sizes(records: bytes | bytearray | memoryview) -> None:
    """Kafka's ByteBufferLogInputStream.nextBatchSize over the entries: a size below the smallest
    entry (14, a v0 message) or a magic outside 0-2 is CORRUPT_MESSAGE; a partial last entry ends the
    data quietly (so a request whose only entry is partial has no batch at all)."""
    end = len(records)
    pos = 0
    while end - pos >= LOG_OVERHEAD:
        size = _I32.unpack_from(records, pos + 8)[0]
        if size < _MIN_ENTRY_SIZE:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                             f"Record size {size} is less than the minimum record overhead ({_MIN_ENTRY_SIZE})")
        if end - pos < LOG_OVERHEAD + 5:
            return
        magic = struct.unpack_from(">b", records, pos + 16)[0]
        if magic < 0 or magic > 2:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
        if pos + LOG_OVERHEAD + size > end:
            return
        pos += LOG_OVERHEAD + size


def _check_headers(mv: memoryview, config: LogConfig, client: bool, where: str,
                   parsed: list[BatchView] | None) -> list[BatchView]:
    """Every batch header, in order (Kafka: analyzeAndValidateRecords + validateBatch); `parsed`
    are headers of the same bytes read by the request's checks, reused rather than read again."""
    if len(mv) == 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Record batch has no batches at all")
    views: list[BatchView] = []
    pos = 0
    while pos < len(mv):
        if len(mv) - pos < LOG_OVERHEAD:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"{len(mv) - pos} trailing bytes after the last batch")
        i = len(views)
        v = parsed[i] if parsed is not None and i < len(parsed) and parsed[i].pos == pos else BatchView(mv, pos)
        error = _header_error(v, config, client, where)
        if error is not None:
            raise error
        views.append(v)
        pos += v.size
    return views


def _header_error(v: BatchView, config: LogConfig, client: bool, where: str, *,
                  crc: bool = True) -> KafkaError | None:
    """What the log refuses a batch for from its header alone, in the order it is answered;
    None if nothing. `crc=False` leaves out BatchView.validate (CRC, count and delta checks) but
    its header-length check, for a walk whose failure checks them itself."""
    if not v.is_complete():
        return InvalidBatch(f"batch of {v.size} bytes at byte {v.pos} runs past the end of the data")
    if v.size > config.max_message_bytes:
        return KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                          f"The record batch size in the append to {where} is {v.size} bytes which exceeds the "
                          f"maximum configured value of {config.max_message_bytes}.")
    if crc:
        try:
            v.validate()
        except InvalidBatch as e:
            return e
    elif v.magic == 2 and v.batch_length < V2_HEADER_SIZE - LOG_OVERHEAD:
        return InvalidBatch(f"batch length {v.batch_length} is smaller than a header")
    if v.magic != 2:
        return KafkaError(ErrorCode.INVALID_RECORD,
                          f"Record batch magic {v.magic} is not supported: only RecordBatch v2 is stored")
    if client:
        if v.records_count <= 0:
            return KafkaError(ErrorCode.INVALID_RECORD, f"Invalid reported count for record batch: {v.records_count}")
        if v.base_offset != 0:
            return KafkaError(ErrorCode.INVALID_RECORD, f"The baseOffset of the record batch in the append to {where} "
                                                        f"should be 0, but it is {v.base_offset}")
        if v.is_control:
            return KafkaError(ErrorCode.INVALID_RECORD, "Clients are not allowed to write control records")
    return None


def _check_producer_fields(v: BatchView, config: LogConfig, client: bool, now: int) -> None:
    """What Kafka checks per record and we per batch, after the records: the sequence of an
    idempotent batch, and the timestamps (LogValidator.validateTimestamp, KIP-937 bounds)."""
    if client and v.has_producer_id and v.base_sequence < 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Invalid sequence number {v.base_sequence} in record batch "
                                                   f"with producerId {v.producer_id}")
    if config.log_append_time:
        return
    if v.timestamp_type == 1 and client:
        raise KafkaError(ErrorCode.INVALID_TIMESTAMP, "Producer should not set timestamp type to LogAppendTime.")
    for ts in (v.base_timestamp, v.max_timestamp):
        _check_timestamp(ts, config, now, "")


def _check_timestamp(ts: int, config: LogConfig, now: int, which: str) -> None:
    if ts != NO_TIMESTAMP and (now - ts > config.message_timestamp_before_max_ms
                               or ts - now > config.message_timestamp_after_max_ms):
        raise KafkaError(ErrorCode.INVALID_TIMESTAMP,
                         f"Timestamp {ts} of message{which} is out of range. The timestamp should be within "
                         f"[{now - config.message_timestamp_before_max_ms}, "
                         f"{now + config.message_timestamp_after_max_ms}]")


def _validate_legacy(records: bytes | bytearray | memoryview, config: LogConfig, now: int, client: bool,
                     where: str) -> ValidatedRecords:
    """A message set for a magic 0/1 log (issue 7): minibroker_protocol.records.legacy's checks (every
    message whole, CRC-32 right, wrappers of one level holding messages of their magic, no zstd,
    no message above max.message.bytes), the log's magic, and v1 CreateTime timestamps."""
    if len(records) == 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, "Record batch has no batches at all")
    if len(records) > config.segment_bytes:
        raise KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE,
                         f"Message batch size is {len(records)} bytes in append to partition {where}, which exceeds "
                         f"the maximum configured segment size of {config.segment_bytes}.")
    stored = stored_magic(config)
    validated = legacy.validate_legacy(records, max_message_size=config.max_message_bytes)
    if validated.magic != stored:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Message set magic {validated.magic} does not match the on-disk format of {where} "
                         f"(magic {stored})")
    if validated.magic == 1 and not config.log_append_time:
        for r in validated.records:
            if client and r.timestamp_type == legacy.LOG_APPEND_TIME:
                raise KafkaError(ErrorCode.INVALID_TIMESTAMP, "Producer should not set timestamp type to LogAppendTime.")
            _check_timestamp(r.timestamp, config, now, f" with offset {r.offset}")
    return ValidatedRecords(records, [], len(records), now, legacy=True)


# ------------------------------------------------------------------------------- offsets


def assign_offsets(validated: ValidatedRecords, config: LogConfig, *, first_offset: int, leader_epoch: int,
                   now_ms: int) -> AppendPlan:
    """Number the validated batches from `first_offset` and stamp the leader epoch and, under
    LogAppendTime, the broker's time."""
    if validated.legacy:
        return _assign_legacy(validated, config, first_offset, now_ms)
    records = validated.records
    # A writable buffer (the request's own bytes, from the connection) is rewritten in place, as
    # Kafka's LogValidator does to the request's ByteBuffer: no copy of the records on the
    # produce path. Others are copied once.
    if isinstance(records, memoryview) and not records.readonly and records.contiguous:
        buf: bytearray | memoryview = records
    else:
        buf = bytearray(records)
    append_time = now_ms if config.log_append_time else NO_TIMESTAMP
    plan = AppendPlan(buf, [], views=validated.views, first_offset=first_offset, log_append_time=append_time)
    offset = first_offset
    pos = 0
    for v in validated.views:
        set_base_offset(buf, pos, offset)
        set_partition_leader_epoch(buf, pos, leader_epoch)
        ts = v.max_timestamp
        if append_time != NO_TIMESTAMP:
            set_log_append_time(buf, pos, append_time)
            ts = append_time
        last = offset + v.last_offset_delta
        if ts > plan.max_timestamp:
            plan.max_timestamp, plan.offset_of_max_timestamp = ts, last
        plan.infos.append(BatchInfo(last, ts, v.size))
        plan.starts.append(pos)
        plan.num_records += v.records_count
        offset = last + 1
        pos += v.size
    plan.next_offset = offset
    return plan


def _assign_legacy(validated: ValidatedRecords, config: LogConfig, first_offset: int, now: int) -> AppendPlan:
    """A message set numbered by minibroker_protocol.records.legacy.assign_offsets: offsets rewritten in
    uncompressed messages and v1 wrappers (KIP-31), v0 wrappers rebuilt (seed 000)."""
    lat = now if config.log_append_time and stored_magic(config) == 1 else NO_TIMESTAMP
    data, next_offset = legacy.assign_offsets(validated.records, first_offset,
                                              log_append_time=None if lat == NO_TIMESTAMP else lat)
    plan = AppendPlan(data, [], first_offset=first_offset, next_offset=next_offset,
                      num_records=next_offset - first_offset, log_append_time=lat)
    for view in iter_batches(data):
        plan.infos.append(BatchInfo(view.last_offset, view.max_timestamp, view.size))
        if view.max_timestamp > plan.max_timestamp:
            plan.max_timestamp, plan.offset_of_max_timestamp = view.max_timestamp, view.last_offset
    return plan
