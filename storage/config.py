"""One partition's log settings, as plain typed values (Kafka: LogConfig).

Storage does not parse Kafka's config keys: the broker's config model (`minibroker.config`) parses
and validates a topic's keys once and builds a `LogConfig` from the values
(`minibroker.config.topic.to_log_config`); storage-only callers (tests, tools, bench) build one from
keyword fields. Field comments name the Kafka key each field comes from; defaults are Kafka's.

Decisions that depend on a key's text are made before a LogConfig exists: `record_version` is the
record magic already chosen from message.format.version, and the timestamp bounds are the ones in
force after KIP-937's transition rule.

Durability setting (the documented "fsync every append before the ack"): `flush_messages=1`.
The log then fsyncs the segment and advances the recovery point inside `Log.maybe_flush()`
after each append, and the broker acks once that returned. The default, as in Kafka, is
`flush_messages` = `flush_ms` = Long.MAX_VALUE: data reaches the page cache on append and the
disk when the OS, a roll, or shutdown flushes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

LONG_MAX = 2**63 - 1

CLEANUP_DELETE = "delete"
CLEANUP_COMPACT = "compact"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True)
class LogConfig:
    """One partition's log settings. Never changed in place: a topic's new config is a new
    LogConfig (`dataclasses.replace`), which is what lets the derived flags below be cached."""

    segment_bytes: int = 1073741824  # segment.bytes
    segment_ms: int = 604800000  # segment.ms
    segment_jitter_ms: int = 0  # segment.jitter.ms
    segment_index_bytes: int = 10485760  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 604800000  # retention.ms (-1 = keep forever)
    retention_bytes: int = -1  # retention.bytes (-1 = no size limit)
    flush_messages: int = LONG_MAX  # flush.messages (1 = fsync every append before the ack)
    flush_ms: int = LONG_MAX  # flush.ms
    max_message_bytes: int = 1048588  # max.message.bytes (1 MiB + the 12-byte log overhead)
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type: CreateTime or LogAppendTime
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms (KIP-937)
    message_timestamp_after_max_ms: int = LONG_MAX  # message.timestamp.after.max.ms (KIP-937)
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    cleanup_policy: str = CLEANUP_DELETE  # cleanup.policy: "delete", "compact" or "compact,delete"
    delete_retention_ms: int = 86400000  # delete.retention.ms (compaction tombstones)
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    # compression.type: "producer" keeps the producer's codec; a codec name makes the validator
    # recompress batches that use another (Kafka: LogValidator's targetCompression)
    compression_type: str = "producer"
    # The record magic this log stores, decided from message.format.version by
    # minibroker.config.record_version_for (Kafka 2.x MetadataVersion.highestSupportedRecordVersion):
    # 0 before 0.10.0, 1 before 0.11.0, else 2.
    record_version: int = 2

    # -- derived -------------------------------------------------------------------------
    # Cached: the append path reads these per batch. cached_property writes the instance's
    # __dict__ directly, so it works on a frozen dataclass and never enters eq/hash.
    @cached_property
    def delete(self) -> bool:
        """Whether time/size retention applies (Kafka: LogConfig.delete)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @cached_property
    def compact(self) -> bool:
        """Whether the log cleaner compacts this log (Kafka: LogConfig.compact)."""
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @cached_property
    def log_append_time(self) -> bool:
        """Whether the broker stamps batches with its own clock (message.timestamp.type=LogAppendTime)."""
        return self.message_timestamp_type == LOG_APPEND_TIME
