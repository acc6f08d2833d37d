"""Topic-level log settings under Kafka's own keys and defaults (Kafka: LogConfig, TopicConfig).

`LogConfig` holds parsed values; `LogConfig.from_kafka` builds one from a dict of Kafka keys
(strings as a client sends them in CreateTopics/AlterConfigs, or values already parsed), applied
on top of a base config (the broker's defaults). `to_kafka` gives the values back as Kafka
strings, e.g. for DescribeConfigs.

Durability setting (the documented "fsync every append before the ack"): `flush.messages=1`.
The log then fsyncs the segment and advances the recovery point inside `Log.maybe_flush()`
after each append, and the broker acks once that returned. The default, as in Kafka, is
`flush.messages` = `flush.ms` = Long.MAX_VALUE: data reaches the page cache on append and the
disk when the OS, a roll, or shutdown flushes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Any

from protocol.errors import ErrorCode, KafkaError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

CLEANUP_DELETE = "delete"
CLEANUP_COMPACT = "compact"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass
class LogConfig:
    """One partition's log settings. Field comments name the Kafka key; defaults are Kafka's."""

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
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms (KIP-937)
    message_timestamp_after_max_ms: int = LONG_MAX  # message.timestamp.after.max.ms (KIP-937)
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    cleanup_policy: str = CLEANUP_DELETE  # cleanup.policy ("delete", "compact" or "compact,delete")
    delete_retention_ms: int = 86400000  # delete.retention.ms (compaction tombstones)
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_insync_replicas: int = 1  # min.insync.replicas
    compression_type: str = "producer"  # compression.type
    preallocate: bool = False  # preallocate
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    message_format_version: str = "3.0-IV1"  # message.format.version (picks the stored magic, issue 7)

    # -- derived -------------------------------------------------------------------------
    # Cached: the append path reads these per batch, and a LogConfig is never changed in place
    # (a topic's new config is a new LogConfig, from_kafka / dataclasses.replace).
    @cached_property
    def delete(self) -> bool:
        """Whether time/size retention applies (Kafka: LogConfig.delete)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @cached_property
    def compact(self) -> bool:
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @cached_property
    def record_version(self) -> int:
        """The magic this log stores (Kafka 2.x MetadataVersion.highestSupportedRecordVersion):
        0 before 0.10.0, 1 before 0.11.0, else 2. The broker validated the version string."""
        return record_version_of(self.message_format_version)

    # -- Kafka keys ----------------------------------------------------------------------
    @classmethod
    def from_kafka(cls, props: Mapping[str, Any], base: LogConfig | None = None, *,
                   strict: bool = False) -> LogConfig:
        """A config from Kafka keys on top of `base` (default: Kafka's defaults).

        Values may be strings (as on the wire) or already parsed. A bad value raises
        KafkaError(INVALID_CONFIG). Keys this log does not use (e.g. the compression levels or
        the replication throttles) are ignored, or refused when `strict`.
        """
        changes: dict[str, Any] = {}
        for key, value in props.items():
            spec = _KEYS.get(key)
            if spec is None:
                if strict:
                    raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
                continue
            attr, parse = spec
            if value is None:
                continue  # null in AlterConfigs means "back to the default": nothing to override
            try:
                changes[attr] = parse(value)
            except (TypeError, ValueError) as e:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Invalid value {value!r} for configuration {key}: {e}") from None
        return replace(base or cls(), **changes)

    def to_kafka(self) -> dict[str, str]:
        """Every setting as Kafka's key and string value."""
        out: dict[str, str] = {}
        for key, (attr, _) in _KEYS.items():
            v = getattr(self, attr)
            out[key] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        return out


# -- parsers with Kafka's validators (ConfigDef atLeast / between / in) -------------------


def _int(lo: int, hi: int = INT_MAX) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError("not a number")
        n = int(str(v).strip()) if not isinstance(v, int) else v
        if n < lo:
            raise ValueError(f"Value must be at least {lo}")
        if n > hi:
            raise ValueError(f"Value must be at most {hi}")
        return n
    return parse


def _long(lo: int = -LONG_MAX - 1) -> Callable[[Any], int]:
    return _int(lo, LONG_MAX)


def _ratio(v: Any) -> float:
    x = float(v)
    if not 0.0 <= x <= 1.0:
        raise ValueError("Value must be between 0 and 1")
    return x


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise ValueError("Expected value to be either true or false")


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(v: Any) -> str:
        s = str(v).strip()
        if s not in choices:
            raise ValueError(f"String must be one of: {', '.join(choices)}")
        return s
    return parse


def _cleanup_policy(v: Any) -> str:
    items = v if isinstance(v, list | tuple) else str(v).split(",")
    policies = [str(p).strip() for p in items if str(p).strip()]
    for p in policies:
        if p not in (CLEANUP_DELETE, CLEANUP_COMPACT):
            raise ValueError(f"Invalid value {p} for configuration cleanup.policy: "
                             "String must be one of: compact, delete")
    return ",".join(policies)


def record_version_of(message_format_version: str) -> int:
    """Magic 0 for 0.8.x/0.9.x, 1 for 0.10.x, 2 for 0.11.0 and every later version."""
    parts = message_format_version.split(".")
    if parts[0] != "0" or len(parts) < 2:
        return 2
    minor = int(re.match(r"\d*", parts[1]).group() or 0)
    return 0 if minor < 10 else 1 if minor == 10 else 2


_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "segment.bytes": ("segment_bytes", _int(14)),  # at least LegacyRecord.RECORD_OVERHEAD_V0
    "segment.ms": ("segment_ms", _long(1)),
    "segment.jitter.ms": ("segment_jitter_ms", _long(0)),
    "segment.index.bytes": ("segment_index_bytes", _int(4)),
    "index.interval.bytes": ("index_interval_bytes", _int(0)),
    "retention.ms": ("retention_ms", _long(-1)),
    "retention.bytes": ("retention_bytes", _long()),
    "flush.messages": ("flush_messages", _long(1)),
    "flush.ms": ("flush_ms", _long(0)),
    "max.message.bytes": ("max_message_bytes", _int(0)),
    "message.timestamp.type": ("message_timestamp_type", _one_of(TIMESTAMP_TYPES)),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _long(0)),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _long(0)),
    "file.delete.delay.ms": ("file_delete_delay_ms", _long(0)),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "delete.retention.ms": ("delete_retention_ms", _long(0)),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _long(0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _long(1)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "min.insync.replicas": ("min_insync_replicas", _int(1)),
    "compression.type": ("compression_type", _one_of(COMPRESSION_TYPES)),
    "preallocate": ("preallocate", _bool),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", _bool),
    "message.format.version": ("message_format_version", lambda v: str(v).strip()),
}

KAFKA_KEYS: tuple[str, ...] = tuple(_KEYS)
"""The Kafka topic config keys that LogConfig models."""

assert {a for a, _ in _KEYS.values()} == {f.name for f in fields(LogConfig)}, "every field has a key"
