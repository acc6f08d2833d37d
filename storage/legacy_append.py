"""Appending MessageSet v0/v1 to a log whose on-disk format is magic 0 or 1 (issue 7).

Theory of operation. A topic with `message.format.version` below 0.11.0 stores the old
formats (Kafka 2.x behaviour): its segments hold message sets, not RecordBatch v2. The broker
hands this log entries already in the topic's magic (minibroker converts what a newer producer
sent); here they are checked and numbered, as Kafka's LogValidator does for magic 0/1:

* `validate_legacy`: every entry whole, CRC-32 over magic..value right (inner messages too), one
  magic throughout, wrappers holding uncompressed messages of their own magic, no zstd, no
  message above max.message.bytes;
* v1 CreateTime timestamps within message.timestamp.before/after.max.ms; a client may not set the
  LogAppendTime bit itself;
* `assign_offsets`: an uncompressed message gets its offset rewritten (outside the CRC); a v1
  wrapper whose inner offsets are 0..n-1 gets only its own offset, the last one (KIP-31); a v0
  wrapper is rebuilt with absolute inner offsets and recompressed (seed 000).

Each top-level entry is one "batch" for the indexes, keyed by its offset (for a wrapper the
offset of its last inner message, which is what BatchView.last_offset reads back).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import ErrorCode, KafkaError
from protocol.records import legacy
from protocol.records.batch import NO_TIMESTAMP, iter_batches
from storage.config import LogConfig
from storage.segment import BatchInfo


@dataclass
class LegacyAppend:
    """A validated message set with its offsets assigned, ready for LogSegment.append."""

    data: bytes
    infos: list[BatchInfo]
    first_offset: int
    next_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    num_records: int


def prepare_legacy_append(records, config: LogConfig, base_offset: int, now: int, *,
                          client: bool = True, where: str = "") -> LegacyAppend:
    """Validate a v0/v1 message set of the log's own magic and number it from `base_offset`."""
    stored = config.record_version
    validated = legacy.validate_legacy(records, max_message_size=config.max_message_bytes)
    if validated.magic != stored:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Message set magic {validated.magic} does not match the on-disk format of {where} "
                         f"(magic {stored}, message.format.version={config.message_format_version})")
    if validated.magic == 1 and not config.log_append_time:
        for r in validated.records:
            if client and r.timestamp_type == legacy.LOG_APPEND_TIME:
                raise KafkaError(ErrorCode.INVALID_TIMESTAMP, "Producer should not set timestamp type to LogAppendTime.")
            ts = r.timestamp
            if ts != NO_TIMESTAMP and (now - ts > config.message_timestamp_before_max_ms
                                       or ts - now > config.message_timestamp_after_max_ms):
                raise KafkaError(ErrorCode.INVALID_TIMESTAMP,
                                 f"Timestamp {ts} of message with offset {r.offset} is out of range. The timestamp "
                                 f"should be within [{now - config.message_timestamp_before_max_ms}, "
                                 f"{now + config.message_timestamp_after_max_ms}]")
    append_time = now if (config.log_append_time and validated.magic == 1) else None
    data, next_offset = legacy.assign_offsets(records, base_offset, log_append_time=append_time)
    infos: list[BatchInfo] = []
    max_ts, offset_of_max_ts = NO_TIMESTAMP, -1
    for view in iter_batches(data):
        infos.append(BatchInfo(view.last_offset, view.max_timestamp, view.size))
        if view.max_timestamp > max_ts:
            max_ts, offset_of_max_ts = view.max_timestamp, view.last_offset
    return LegacyAppend(data, infos, base_offset, next_offset, max_ts, offset_of_max_ts, next_offset - base_offset)
