"""Broker and topic configuration, with Kafka's keys, types, defaults and validators.

Theory of operation
-------------------
Every key is one `ConfigKey` (name, type, default, validator, doc) in one of two tables:
`BROKER_CONFIGS` (what `server.properties` / our `config.yaml` holds) and `TOPIC_CONFIGS` (what
CreateTopics / AlterConfigs set per topic). The names, types, defaults and valid ranges are
Kafka's (ServerLogConfigs, ServerConfigs, SocketServerConfigs, GroupCoordinatorConfig,
TransactionLogConfig, TransactionStateManagerConfig, CleanerConfig, LogConfig); the doc strings
are ours. Where we deliberately differ from Kafka's default for a better single-node dev broker,
the key's doc says "Dev default" and why.

Values are parsed as Kafka's `ConfigDef.parseType` parses them (strings are trimmed, booleans are
"true"/"false" in any case, lists are comma separated, numbers must fit their Java width) and then
checked by the key's validator, which raises `ConfigError` with Kafka's message shape:
``Invalid value -5 for configuration retention.ms: Value must be at least -1``.

A topic key takes its default from the broker: each topic key lists its broker synonyms, most
specific first, as Kafka's ServerTopicConfigSynonyms does (``retention.ms`` <- ``log.retention.ms``,
``log.retention.minutes``, ``log.retention.hours``); the first synonym that has a value wins,
converted to the topic key's unit. `effective_topic_config` lays a topic's own overrides over
those defaults; `describe_topic_config` / `describe_broker_config` produce what DescribeConfigs
returns (value, source, synonyms with their sources, read-only, type id, doc).

`BrokerConfig.load` layers, lowest first: defaults < config.yaml < the CLI's --host/--port/
--data-dir < --override key=value. Everything explicitly given counts as STATIC_BROKER_CONFIG, as
Kafka counts server.properties and --override. Unknown keys are logged and ignored, as Kafka does.
"""

from __future__ import annotations

import base64
import logging
import math
import re
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum
from pathlib import Path
from typing import Any

from protocol.errors import ErrorCode

log = logging.getLogger("minibroker.config")

__all__ = [
    "BROKER_CONFIGS",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigKey",
    "ConfigSource",
    "ConfigType",
    "Endpoint",
    "OpType",
    "apply_incremental_ops",
    "describe_broker_config",
    "describe_topic_config",
    "effective_topic_config",
    "format_value",
    "generate_cluster_id",
    "parse_listeners",
    "parse_value",
    "record_version_for",
    "to_log_config_props",
    "validate_topic_config",
]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
_RANGES = {"int": (-(2**31), 2**31 - 1), "short": (-(2**15), 2**15 - 1), "long": (-(2**63), 2**63 - 1)}
_JAVA_TYPE = {"int": "INT", "short": "SHORT", "long": "LONG", "double": "DOUBLE"}


# --------------------------------------------------------------------------- errors and ids


class ConfigError(ValueError):
    """An invalid config; the message has Kafka's shape. Answer it with INVALID_CONFIG (40).

    Validators raise it with just the reason; `parse_value` re-raises it with the key's name and
    value filled in (Kafka's ConfigException(name, value, message)).
    """

    code = ErrorCode.INVALID_CONFIG

    def __init__(self, message: str, *, name: str | None = None, value: Any = None, reason: str | None = None):
        super().__init__(message)
        self.name = name
        self.value = value
        self.reason = reason if reason is not None else message

    @classmethod
    def invalid(cls, name: str, value: Any, reason: str) -> ConfigError:
        return cls(f"Invalid value {_java_str(value)} for configuration {name}: {reason}",
                   name=name, value=value, reason=reason)


class ConfigSource(IntEnum):
    """DescribeConfigs ConfigSource ids (DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1  # Kafka's wire name is TOPIC_CONFIG; the admin client's is this one
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType(IntEnum):
    """DescribeConfigs ConfigType ids (DescribeConfigsResponse.ConfigType, KIP-569)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


# --------------------------------------------------------------------------- Java-style rendering


def _java_double(x: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, otherwise d.dddE<exp>; shortest digits."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)  # Python's repr is fixed-point (and shortest) in this range
        return text if ("." in text or "e" in text) else text + ".0"
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp10 = len("".join(map(str, digits))) + int(exponent) - 1
    mantissa = ds[0] + "." + (ds[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{exp10}"


def _java_str(value: Any) -> str:
    """How Java's string concatenation shows a parsed config value in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    return str(value)


# --------------------------------------------------------------------------- validators
# Small callables with Kafka's messages; str() gives the "valid values" text Kafka's docs show.


class AtLeast:
    def __init__(self, minimum: int | float):
        self.minimum = minimum

    def __call__(self, value: Any) -> None:
        if value < self.minimum:
            raise ConfigError(f"Value must be at least {_java_str(self.minimum)}")

    def __str__(self) -> str:
        return f"[{_java_str(self.minimum)},...]"


class Between:
    def __init__(self, minimum: int | float, maximum: int | float):
        self.minimum, self.maximum = minimum, maximum

    def __call__(self, value: Any) -> None:
        if value < self.minimum:
            raise ConfigError(f"Value must be at least {_java_str(self.minimum)}")
        if value > self.maximum:
            raise ConfigError(f"Value must be no more than {_java_str(self.maximum)}")

    def __str__(self) -> str:
        return f"[{_java_str(self.minimum)},...,{_java_str(self.maximum)}]"


class ValidString:
    """One of a fixed set, case-sensitive (ConfigDef.ValidString)."""

    def __init__(self, *allowed: str):
        self.allowed = allowed

    def __call__(self, value: Any) -> None:
        if value not in self.allowed:
            raise ConfigError("String must be one of: " + ", ".join(self.allowed), value=value)

    def __str__(self) -> str:
        return "[" + ", ".join(self.allowed) + "]"


class ValidList:
    """Every element one of a fixed set (ConfigDef.ValidList); the message names the bad element."""

    def __init__(self, *allowed: str):
        self.item = ValidString(*allowed)

    def __call__(self, value: Any) -> None:
        for item in value:
            self.item(item)

    def __str__(self) -> str:
        return str(self.item)


class GzipLevel:
    """1..9, or -1 for zlib's default (Kafka's CompressionType.GZIP level validator)."""

    def __call__(self, value: Any) -> None:
        if value > 9 or (value < 1 and value != -1):
            raise ConfigError("Value must be between 1 and 9 or equal to -1")

    def __str__(self) -> str:
        return "[1,...,9] or -1"


class ThrottledReplicas:
    """'*' or a list of partition:broker pairs (Kafka's ThrottledReplicaListValidator)."""

    _PAIR = re.compile(r"([0-9]+:[0-9]+)?")

    def __init__(self, name: str):
        self.name = name

    def __call__(self, value: Any) -> None:
        items = [str(v).strip() for v in value]
        if not (all(self._PAIR.fullmatch(s) for s in items) or "".join(items) == "*"):
            raise ConfigError(f"{self.name} must be the literal '*' or a list of replicas in the following "
                              "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


class NonEmptyString:
    def __call__(self, value: Any) -> None:
        if not value:
            raise ConfigError("String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


# Kafka's MetadataVersion ids in order (server-common MetadataVersion). A bare release ("2.8")
# means that release's newest production version; 4.0-IV0 is the newest production one.
_METADATA_VERSIONS: tuple[str, ...] = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0",
    "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1",
    "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1",
    "3.0-IV0", "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0",
    "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
    "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
    "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3",
)
_LATEST_PRODUCTION = "4.0-IV0"


def _build_version_lookup() -> dict[str, int]:
    lookup = {v: i for i, v in enumerate(_METADATA_VERSIONS)}
    last_production = _METADATA_VERSIONS.index(_LATEST_PRODUCTION)
    for i, v in enumerate(_METADATA_VERSIONS[: last_production + 1]):
        lookup[v.split("-")[0]] = i  # later IVs of the same release overwrite earlier ones
    return lookup


_VERSION_INDEX = _build_version_lookup()


def _metadata_version_index(text: str) -> int:
    """MetadataVersion.fromVersionString: '0.10.0.1' -> '0.10.0', '2.8.0' -> '2.8', '3.0-IV1' as is."""
    parts = text.split(".")
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(parts) else ".".join(parts[:keep])
    try:
        return _VERSION_INDEX[key]
    except KeyError:
        raise ConfigError(f"Version {text} is not a valid version") from None


class MetadataVersionValidator:
    def __call__(self, value: Any) -> None:
        _metadata_version_index(str(value))

    def __str__(self) -> str:
        return "[" + ", ".join(_METADATA_VERSIONS) + "]"


def record_version_for(message_format_version: str) -> int:
    """The newest record magic a message.format.version allows (MetadataVersion.highestSupportedRecordVersion):
    0 before 0.10.0, 1 before 0.11.0, else 2. Kafka 3.x ignores the setting; we honour it (issue 7)."""
    index = _metadata_version_index(message_format_version)
    if index < _VERSION_INDEX["0.10.0-IV0"]:
        return 0
    if index < _VERSION_INDEX["0.11.0-IV0"]:
        return 1
    return 2


# --------------------------------------------------------------------------- keys and parsing


@dataclass(frozen=True)
class ConfigKey:
    """One config key. `synonyms` (topic keys only): broker keys that set its default, most specific first."""

    name: str
    type: str  # "int" "long" "short" "double" "boolean" "string" "list" "password" "class"
    default: Any
    doc: str
    validator: Callable[[Any], None] | None = None
    scope: str = "broker"  # "broker" | "topic"
    synonyms: tuple[str, ...] = ()
    read_only: bool = True  # broker keys Kafka cannot change at runtime (DynamicBrokerConfig)
    sensitive: bool = False

    @property
    def config_type(self) -> ConfigType:
        return ConfigType[self.type.upper()]


_BOOL_WORDS = {"true": True, "false": False}
_DECIMAL = re.compile(r"[+-]?[0-9]+")  # Integer.parseInt / Long.parseLong accept this, nothing more
_COMMA = re.compile(r"\s*,\s*")


def _parse_raw(key: ConfigKey, raw: Any) -> Any:
    name, kind = key.name, key.type
    trimmed = raw.strip() if isinstance(raw, str) else None
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        if trimmed is not None and trimmed.lower() in _BOOL_WORDS:
            return _BOOL_WORDS[trimmed.lower()]
        raise ConfigError.invalid(name, raw, "Expected value to be either true or false")
    if kind in _RANGES:
        if isinstance(raw, int) and not isinstance(raw, bool):
            number = raw
        elif trimmed is not None:
            if not _DECIMAL.fullmatch(trimmed):
                raise ConfigError.invalid(name, raw, f"Not a number of type {_JAVA_TYPE[kind]}")
            number = int(trimmed)
        else:
            width = {"int": "a 32-bit integer", "short": "a 16-bit integer (short)",
                     "long": "a 64-bit integer (long)"}[kind]
            raise ConfigError.invalid(name, raw, f"Expected value to be {width}, but it was a {type(raw).__name__}")
        low, high = _RANGES[kind]
        if not low <= number <= high:
            raise ConfigError.invalid(name, raw, f"Not a number of type {_JAVA_TYPE[kind]}")
        return number
    if kind == "double":
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return float(raw)
        if trimmed is not None:
            try:
                return float(trimmed)
            except ValueError:
                raise ConfigError.invalid(name, raw, "Not a number of type DOUBLE") from None
        raise ConfigError.invalid(name, raw, f"Expected value to be a double, but it was a {type(raw).__name__}")
    if kind == "list":
        if isinstance(raw, list | tuple):
            return [str(v).strip() for v in raw]
        if trimmed is not None:
            return [] if not trimmed else _COMMA.split(trimmed)
        raise ConfigError.invalid(name, raw, "Expected a comma separated list.")
    if kind in ("string", "password", "class"):
        if trimmed is not None:
            return trimmed
        # YAML types scalars on its own (8080, 2.8, true); Kafka's properties are always text.
        if isinstance(raw, list | tuple):
            return ",".join(str(v).strip() for v in raw)
        if isinstance(raw, bool | int | float):
            return _java_str(raw)
        raise ConfigError.invalid(name, raw, f"Expected value to be a string, but it was a {type(raw).__name__}")
    raise ConfigError(f"Unknown type {kind} of configuration {name}")


def parse_value(key: ConfigKey, raw: str | int | bool | float | list | None) -> Any:
    """Parse as Kafka's ConfigDef.parseType does, then run the key's validator. None stays None."""
    if raw is None:
        return None
    value = _parse_raw(key, raw)
    if key.validator is not None:
        try:
            key.validator(value)
        except ConfigError as e:
            if e.name is not None:
                raise
            shown = e.value if e.value is not None else value
            raise ConfigError.invalid(key.name, shown, e.reason) from None
    return value


def format_value(key: ConfigKey, value: Any) -> str | None:
    """A parsed value as Kafka's ConfigDef.convertToString writes it (DescribeConfigs, persistence)."""
    if value is None:
        return None
    if key.type == "list":
        return ",".join(str(v) for v in value)
    return _java_str(value)


# --------------------------------------------------------------------------- the key tables

_MIN_SEGMENT_BYTES = 14  # LegacyRecord.RECORD_OVERHEAD_V0: a segment must hold one v0 record
_DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # 1 MiB + Records.LOG_OVERHEAD (offset + size)
_WEEK_MS = 7 * 24 * 3600 * 1000
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")  # BrokerCompressionType
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_CLEANUP_POLICIES = ("compact", "delete")
_PROTOCOL_MAP_DEFAULT = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
_NOT_HERE = " Accepted and described; it has no effect in a single-node broker."
_NO_TIERED = " minibroker has no tiered storage: accepted and described, no effect."


def _topic(name: str, kind: str, default: Any, doc: str, validator: Callable[[Any], None] | None = None,
           synonyms: tuple[str, ...] = ()) -> ConfigKey:
    return ConfigKey(name, kind, default, doc, validator, "topic", synonyms, read_only=False)


_TOPIC_KEYS: list[ConfigKey] = [
    _topic("cleanup.policy", "list", ["delete"],
           "How old segments are retired: 'delete' drops them by retention.ms/retention.bytes, 'compact' keeps "
           "the newest record per key; both may be listed.",
           ValidList(*_CLEANUP_POLICIES), ("log.cleanup.policy",)),
    _topic("compression.type", "string", "producer",
           "Codec of batches as stored: 'producer' keeps what the producer sent; a codec name makes the "
           "broker recompress batches that arrive in another codec.",
           ValidString(*_COMPRESSION_TYPES), ("compression.type",)),
    _topic("compression.gzip.level", "int", -1, "gzip level used when the broker recompresses to gzip (-1 = zlib default).",
           GzipLevel(), ("compression.gzip.level",)),
    _topic("compression.lz4.level", "int", 9, "lz4 level used when the broker recompresses to lz4.",
           Between(1, 17), ("compression.lz4.level",)),
    _topic("compression.zstd.level", "int", 3, "zstd level used when the broker recompresses to zstd.",
           Between(-131072, 22), ("compression.zstd.level",)),
    _topic("delete.retention.ms", "long", 24 * 3600 * 1000,
           "On compacted topics, how long a tombstone (null value) stays readable after its segment was cleaned.",
           AtLeast(0), ("log.cleaner.delete.retention.ms",)),
    _topic("file.delete.delay.ms", "long", 60000,
           "How long a retired segment waits under its .deleted name before its files are removed.",
           AtLeast(0), ("log.segment.delete.delay.ms",)),
    _topic("flush.messages", "long", LONG_MAX,
           "fsync the partition after this many appended messages; the default leaves flushing to the OS.",
           AtLeast(1), ("log.flush.interval.messages",)),
    _topic("flush.ms", "long", LONG_MAX,
           "fsync the partition when its oldest unflushed data is this old; the default leaves flushing to the OS.",
           AtLeast(0), ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    _topic("follower.replication.throttled.replicas", "list", [],
           "Replicas whose follower fetching is throttled." + _NOT_HERE,
           ThrottledReplicas("follower.replication.throttled.replicas")),
    _topic("index.interval.bytes", "int", 4096,
           "Bytes appended between two offset-index entries; smaller means denser indexes and shorter scans.",
           AtLeast(0), ("log.index.interval.bytes",)),
    _topic("leader.replication.throttled.replicas", "list", [],
           "Replicas whose leader-side replication is throttled." + _NOT_HERE,
           ThrottledReplicas("leader.replication.throttled.replicas")),
    _topic("local.retention.bytes", "long", -2,
           "Bytes kept locally when tiered storage is on (-2 = use retention.bytes)." + _NO_TIERED,
           AtLeast(-2), ("log.local.retention.bytes",)),
    _topic("local.retention.ms", "long", -2,
           "Time kept locally when tiered storage is on (-2 = use retention.ms)." + _NO_TIERED,
           AtLeast(-2), ("log.local.retention.ms",)),
    _topic("max.compaction.lag.ms", "long", LONG_MAX,
           "Longest a record may stay uncompacted before its segment becomes eligible regardless of dirty ratio.",
           AtLeast(1), ("log.cleaner.max.compaction.lag.ms",)),
    _topic("max.message.bytes", "int", _DEFAULT_MAX_MESSAGE_BYTES,
           "Largest record batch (after compression) the topic accepts; larger ones get MESSAGE_TOO_LARGE.",
           AtLeast(0), ("message.max.bytes",)),
    _topic("message.downconversion.enable", "boolean", True,
           "Whether fetches older than Fetch v4 may receive down-converted (v0/v1) batches; if false they get "
           "UNSUPPORTED_VERSION.", None, ("log.message.downconversion.enable",)),
    _topic("message.format.version", "string", "3.0-IV1",
           "Newest on-disk record format: before 0.10.0 writes magic 0, before 0.11.0 magic 1, later magic 2. "
           "Deprecated in Kafka 3.x, which ignores it; minibroker honours it to pick the stored magic.",
           MetadataVersionValidator(), ("log.message.format.version",)),
    _topic("message.timestamp.after.max.ms", "long", LONG_MAX,
           "How far ahead of the broker's clock a CreateTime timestamp may be before the batch is rejected.",
           AtLeast(0), ("log.message.timestamp.after.max.ms",)),
    _topic("message.timestamp.before.max.ms", "long", LONG_MAX,
           "How far behind the broker's clock a CreateTime timestamp may be before the batch is rejected.",
           AtLeast(0), ("log.message.timestamp.before.max.ms",)),
    _topic("message.timestamp.difference.max.ms", "long", LONG_MAX,
           "Deprecated (KIP-937): both bounds at once; used only while the before/after keys keep their defaults.",
           AtLeast(0), ("log.message.timestamp.difference.max.ms",)),
    _topic("message.timestamp.type", "string", "CreateTime",
           "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock.",
           ValidString(*_TIMESTAMP_TYPES), ("log.message.timestamp.type",)),
    _topic("min.cleanable.dirty.ratio", "double", 0.5,
           "Compaction starts once this share of the log is uncompacted (0..1).",
           Between(0, 1), ("log.cleaner.min.cleanable.ratio",)),
    _topic("min.compaction.lag.ms", "long", 0,
           "Shortest time a record stays uncompacted.", AtLeast(0), ("log.cleaner.min.compaction.lag.ms",)),
    _topic("min.insync.replicas", "int", 1,
           "Replicas that must hold a write for acks=all. A single node has one replica, so a value above 1 makes "
           "acks=all writes fail with NOT_ENOUGH_REPLICAS, as in Kafka.",
           AtLeast(1), ("min.insync.replicas",)),
    _topic("preallocate", "boolean", False, "Whether a new segment file is allocated at full size up front.",
           None, ("log.preallocate",)),
    _topic("remote.log.copy.disable", "boolean", False, "Stop copying segments to tiered storage." + _NO_TIERED),
    _topic("remote.log.delete.on.disable", "boolean", False,
           "Delete tiered data when tiered storage is turned off." + _NO_TIERED),
    _topic("remote.storage.enable", "boolean", False,
           "Tiered storage for the topic. As in a Kafka broker without remote.log.storage.system.enable, "
           "true is refused."),
    _topic("retention.bytes", "long", -1,
           "Largest size a partition may reach before its oldest segments are deleted (-1 = no size limit).",
           None, ("log.retention.bytes",)),
    _topic("retention.ms", "long", _WEEK_MS,
           "How long a segment is kept after its newest record before it is deleted (-1 = no time limit).",
           AtLeast(-1), ("log.retention.ms", "log.retention.minutes", "log.retention.hours")),
    _topic("segment.bytes", "int", 1024 * 1024 * 1024,
           "A segment is rolled when an append would take it past this size.",
           AtLeast(_MIN_SEGMENT_BYTES), ("log.segment.bytes",)),
    _topic("segment.index.bytes", "int", 10 * 1024 * 1024,
           "Preallocated size of a segment's offset and time indexes; a full index also rolls the segment.",
           AtLeast(4), ("log.index.size.max.bytes",)),
    _topic("segment.jitter.ms", "long", 0,
           "Random amount up to this subtracted from segment.ms per segment, so partitions do not roll together.",
           AtLeast(0), ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    _topic("segment.ms", "long", _WEEK_MS,
           "A segment is rolled once its first record is this old, even if it is not full.",
           AtLeast(1), ("log.roll.ms", "log.roll.hours")),
    _topic("unclean.leader.election.enable", "boolean", False,
           "Whether an out-of-sync replica may become leader." + _NOT_HERE, None,
           ("unclean.leader.election.enable",)),
]


def _broker(name: str, kind: str, default: Any, doc: str, validator: Callable[[Any], None] | None = None,
            *, dynamic: bool = False, sensitive: bool = False) -> ConfigKey:
    return ConfigKey(name, kind, default, doc, validator, "broker", (), read_only=not dynamic, sensitive=sensitive)


_UNUSED = " Accepted and described; minibroker does not use it."
_ONE_REPLICA = (" Dev default 1 (Kafka: {k}): a single node can only host one replica, and with more "
                "the internal topic could never be created.")

_BROKER_KEYS: list[ConfigKey] = [
    # --- identity
    _broker("node.id", "int", 1,
            "This node's id, reported in Metadata and FindCoordinator. Dev default 1 (Kafka has none and "
            "requires it) so a bare start works.", AtLeast(0)),
    _broker("broker.id", "int", -1, "Older name of node.id; when only one of the two is set, the other follows it.",
            AtLeast(-1)),
    _broker("cluster.id", "string", None,
            "minibroker's own key: the cluster id reported to clients. Unset means generate one (Kafka keeps it "
            "in meta.properties, written by kafka-storage format).", NonEmptyString()),
    # --- network
    _broker("listeners", "string", "PLAINTEXT://127.0.0.1:9092",
            "Comma-separated NAME://host:port addresses to accept connections on; an empty host binds every "
            "interface. Dev default 127.0.0.1:9092 (Kafka: PLAINTEXT://:9092, all interfaces) so a dev broker "
            "is not reachable from the network unless asked.", dynamic=True),
    _broker("advertised.listeners", "string", None,
            "Addresses given to clients in Metadata; unset means the same as listeners.", dynamic=True),
    _broker("listener.security.protocol.map", "string", _PROTOCOL_MAP_DEFAULT,
            "Listener name to security protocol. minibroker serves PLAINTEXT only.", dynamic=True),
    _broker("socket.request.max.bytes", "int", 100 * 1024 * 1024,
            "Largest request frame; a bigger size prefix closes the connection before the body is read.",
            AtLeast(1)),
    _broker("socket.send.buffer.bytes", "int", 100 * 1024, "SO_SNDBUF of accepted sockets (-1 = OS default)."),
    _broker("socket.receive.buffer.bytes", "int", 100 * 1024, "SO_RCVBUF of accepted sockets (-1 = OS default)."),
    _broker("socket.listen.backlog.size", "int", 50, "Listen backlog of the server socket.", AtLeast(1)),
    _broker("queued.max.requests", "int", 500,
            "Requests read but not yet handled before the broker stops reading from sockets.", AtLeast(1)),
    _broker("queued.max.request.bytes", "long", -1, "Bytes of queued requests before reading stops (-1 = no limit)."),
    _broker("connections.max.idle.ms", "long", 10 * 60 * 1000, "Idle connections are closed after this long."),
    _broker("max.connections", "int", INT_MAX, "Most connections the broker accepts at once.", AtLeast(0),
            dynamic=True),
    _broker("max.connections.per.ip", "int", INT_MAX, "Most connections accepted from one address.", AtLeast(0),
            dynamic=True),
    _broker("num.network.threads", "int", 3,
            "Kafka's socket thread count. minibroker runs one asyncio loop." + _UNUSED, AtLeast(1)),
    _broker("num.io.threads", "int", 8,
            "Kafka's request-handler thread count. minibroker runs one asyncio loop." + _UNUSED, AtLeast(1),
            dynamic=True),
    # --- log storage
    _broker("log.dirs", "string", None, "Directory holding the partitions; overrides log.dir. minibroker uses one."),
    _broker("log.dir", "string", "data",
            "Directory holding the partitions when log.dirs is unset. Dev default 'data' under the working "
            "directory (Kafka: /tmp/kafka-logs), which git ignores."),
    _broker("num.partitions", "int", 1, "Partitions of a topic created without a count (auto-created topics too).",
            AtLeast(1)),
    _broker("default.replication.factor", "int", 1,
            "Replication factor of auto-created topics. A single node can only host 1."),
    _broker("auto.create.topics.enable", "boolean", True,
            "Create a topic when a client asks Metadata (or produces) for one that does not exist."),
    _broker("delete.topic.enable", "boolean", True, "Whether DeleteTopics may delete topics."),
    _broker("log.segment.bytes", "int", 1024 * 1024 * 1024, "Broker default of segment.bytes.",
            AtLeast(_MIN_SEGMENT_BYTES), dynamic=True),
    _broker("log.roll.ms", "long", None, "Broker default of segment.ms; unset means log.roll.hours.", dynamic=True),
    _broker("log.roll.hours", "int", 168, "Broker default of segment.ms, in hours, when log.roll.ms is unset.",
            AtLeast(1)),
    _broker("log.roll.jitter.ms", "long", None, "Broker default of segment.jitter.ms; unset means log.roll.jitter.hours.",
            dynamic=True),
    _broker("log.roll.jitter.hours", "int", 0, "Broker default of segment.jitter.ms, in hours.", AtLeast(0)),
    _broker("log.retention.ms", "long", None,
            "Broker default of retention.ms; unset means log.retention.minutes, then log.retention.hours.",
            dynamic=True),
    _broker("log.retention.minutes", "int", None,
            "Broker default of retention.ms in minutes, used when log.retention.ms is unset."),
    _broker("log.retention.hours", "int", 168,
            "Broker default of retention.ms in hours, used when log.retention.ms and log.retention.minutes are unset."),
    _broker("log.retention.bytes", "long", -1, "Broker default of retention.bytes.", dynamic=True),
    _broker("log.retention.check.interval.ms", "long", 5 * 60 * 1000,
            "How often the background task looks for segments past retention.", AtLeast(1)),
    _broker("log.cleanup.policy", "list", ["delete"], "Broker default of cleanup.policy.",
            ValidList(*_CLEANUP_POLICIES), dynamic=True),
    _broker("log.index.size.max.bytes", "int", 10 * 1024 * 1024, "Broker default of segment.index.bytes.",
            AtLeast(4), dynamic=True),
    _broker("log.index.interval.bytes", "int", 4096, "Broker default of index.interval.bytes.", AtLeast(0),
            dynamic=True),
    _broker("log.flush.interval.messages", "long", LONG_MAX, "Broker default of flush.messages.", AtLeast(1),
            dynamic=True),
    _broker("log.flush.interval.ms", "long", None,
            "Broker default of flush.ms; unset means log.flush.scheduler.interval.ms.", dynamic=True),
    _broker("log.flush.scheduler.interval.ms", "long", LONG_MAX,
            "How often the flusher checks whether a partition is due for flush.ms; also flush.ms's last fallback. "
            "The default (Long.MAX_VALUE) means never."),
    _broker("log.flush.offset.checkpoint.interval.ms", "int", 60000,
            "How often recovery points are written to recovery-point-offset-checkpoint.", AtLeast(0)),
    _broker("log.flush.start.offset.checkpoint.interval.ms", "int", 60000,
            "How often log start offsets are written to log-start-offset-checkpoint.", AtLeast(0)),
    _broker("log.segment.delete.delay.ms", "long", 60000, "Broker default of file.delete.delay.ms.", AtLeast(0),
            dynamic=True),
    _broker("log.preallocate", "boolean", False, "Broker default of preallocate.", dynamic=True),
    _broker("log.message.format.version", "string", "3.0-IV1",
            "Broker default of message.format.version (deprecated in Kafka; honoured here).",
            MetadataVersionValidator()),
    _broker("log.message.timestamp.type", "string", "CreateTime", "Broker default of message.timestamp.type.",
            ValidString(*_TIMESTAMP_TYPES), dynamic=True),
    _broker("log.message.timestamp.difference.max.ms", "long", LONG_MAX,
            "Broker default of message.timestamp.difference.max.ms (deprecated).", AtLeast(0), dynamic=True),
    _broker("log.message.timestamp.before.max.ms", "long", LONG_MAX,
            "Broker default of message.timestamp.before.max.ms.", AtLeast(0), dynamic=True),
    _broker("log.message.timestamp.after.max.ms", "long", LONG_MAX,
            "Broker default of message.timestamp.after.max.ms.", AtLeast(0), dynamic=True),
    _broker("log.message.downconversion.enable", "boolean", True,
            "Broker default of message.downconversion.enable.", dynamic=True),
    _broker("log.local.retention.ms", "long", -2, "Broker default of local.retention.ms." + _NO_TIERED,
            AtLeast(-2), dynamic=True),
    _broker("log.local.retention.bytes", "long", -2, "Broker default of local.retention.bytes." + _NO_TIERED,
            AtLeast(-2), dynamic=True),
    _broker("num.recovery.threads.per.data.dir", "int", 1,
            "Kafka's log recovery thread count per directory." + _UNUSED, AtLeast(1), dynamic=True),
    # --- compaction
    _broker("log.cleaner.enable", "boolean", True,
            "Run the log cleaner, which compacts topics with cleanup.policy=compact (__consumer_offsets is one)."),
    _broker("log.cleaner.min.cleanable.ratio", "double", 0.5, "Broker default of min.cleanable.dirty.ratio.",
            Between(0, 1), dynamic=True),
    _broker("log.cleaner.delete.retention.ms", "long", 24 * 3600 * 1000, "Broker default of delete.retention.ms.",
            AtLeast(0), dynamic=True),
    _broker("log.cleaner.min.compaction.lag.ms", "long", 0, "Broker default of min.compaction.lag.ms.",
            AtLeast(0), dynamic=True),
    _broker("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, "Broker default of max.compaction.lag.ms.",
            AtLeast(1), dynamic=True),
    _broker("log.cleaner.backoff.ms", "long", 15000, "Pause of the cleaner when no log needs cleaning.", AtLeast(0),
            dynamic=True),
    _broker("log.cleaner.threads", "int", 1, "Cleaner threads in Kafka; minibroker runs one cleaner task.",
            AtLeast(0), dynamic=True),
    # --- records
    _broker("message.max.bytes", "int", _DEFAULT_MAX_MESSAGE_BYTES, "Broker default of max.message.bytes.",
            AtLeast(0), dynamic=True),
    _broker("compression.type", "string", "producer", "Broker default of compression.type.",
            ValidString(*_COMPRESSION_TYPES), dynamic=True),
    _broker("compression.gzip.level", "int", -1, "Broker default of compression.gzip.level.", GzipLevel(),
            dynamic=True),
    _broker("compression.lz4.level", "int", 9, "Broker default of compression.lz4.level.", Between(1, 17),
            dynamic=True),
    _broker("compression.zstd.level", "int", 3, "Broker default of compression.zstd.level.", Between(-131072, 22),
            dynamic=True),
    # --- replication (one node: the broker is leader and whole ISR of everything)
    _broker("min.insync.replicas", "int", 1, "Broker default of min.insync.replicas.", AtLeast(1), dynamic=True),
    _broker("unclean.leader.election.enable", "boolean", False,
            "Broker default of unclean.leader.election.enable." + _NOT_HERE, dynamic=True),
    _broker("replica.lag.time.max.ms", "long", 30000,
            "How long a follower may lag before leaving the ISR." + _NOT_HERE),
    # --- fetch
    _broker("fetch.max.bytes", "int", 55 * 1024 * 1024, "Upper bound on the bytes one Fetch response returns.",
            AtLeast(1024)),
    _broker("max.incremental.fetch.session.cache.slots", "int", 1000,
            "Incremental fetch sessions (KIP-227) kept at once; 0 disables them.", AtLeast(0)),
    # --- group coordinator
    _broker("offsets.topic.num.partitions", "int", 50,
            "Partitions of __consumer_offsets; fixed once the topic exists.", AtLeast(1)),
    _broker("offsets.topic.replication.factor", "short", 1,
            "Replication factor of __consumer_offsets." + _ONE_REPLICA.format(k=3), AtLeast(1)),
    _broker("offsets.topic.segment.bytes", "int", 100 * 1024 * 1024,
            "segment.bytes of __consumer_offsets, kept small so compaction and loading stay fast.", AtLeast(1)),
    _broker("offsets.retention.minutes", "int", 7 * 24 * 60,
            "Committed offsets of a group with no members are dropped after this long.", AtLeast(1)),
    _broker("offsets.retention.check.interval.ms", "long", 600000,
            "How often expired committed offsets are looked for.", AtLeast(1)),
    _broker("offsets.commit.timeout.ms", "int", 5000,
            "How long an offset commit may wait for its write before failing.", AtLeast(1)),
    _broker("offset.metadata.max.bytes", "int", 4096,
            "Longest metadata string an offset commit may carry (else OFFSET_METADATA_TOO_LARGE)."),
    _broker("group.initial.rebalance.delay.ms", "int", 0,
            "How long the first rebalance of an empty group waits for more members to join. Dev default 0 "
            "(Kafka: 3000): a single-consumer dev loop should not wait 3 s per start; Kafka's own sample "
            "config uses 0 for development too."),
    _broker("group.min.session.timeout.ms", "int", 6000, "Smallest session timeout a classic group member may ask for."),
    _broker("group.max.session.timeout.ms", "int", 1800000, "Largest session timeout a classic group member may ask for."),
    _broker("group.max.size", "int", INT_MAX, "Most members one consumer group may have.", AtLeast(1)),
    # --- transactions and idempotence
    _broker("transaction.state.log.num.partitions", "int", 50,
            "Partitions of __transaction_state; fixed once the topic exists.", AtLeast(1)),
    _broker("transaction.state.log.replication.factor", "short", 1,
            "Replication factor of __transaction_state." + _ONE_REPLICA.format(k=3), AtLeast(1)),
    _broker("transaction.state.log.min.isr", "int", 1,
            "min.insync.replicas of __transaction_state." + _ONE_REPLICA.format(k=2), AtLeast(1)),
    _broker("transaction.state.log.segment.bytes", "int", 100 * 1024 * 1024,
            "segment.bytes of __transaction_state.", AtLeast(1)),
    _broker("transactional.id.expiration.ms", "int", 7 * 24 * 3600 * 1000,
            "A transactional id with no transaction activity for this long is expired.", AtLeast(1)),
    _broker("transaction.max.timeout.ms", "int", 15 * 60 * 1000,
            "Largest transaction timeout InitProducerId accepts (else INVALID_TRANSACTION_TIMEOUT).", AtLeast(1)),
    _broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000,
            "How often transactions past their timeout are looked for and aborted.", AtLeast(1)),
    _broker("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600 * 1000,
            "How often expired transactional ids are removed.", AtLeast(1)),
    _broker("producer.id.expiration.ms", "int", 24 * 3600 * 1000,
            "A producer id with no writes to a partition for this long is forgotten there (its sequence state "
            "is dropped).", AtLeast(1), dynamic=True),
    _broker("producer.id.expiration.check.interval.ms", "int", 600000,
            "How often expired producer ids are removed.", AtLeast(1)),
]

TOPIC_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in _TOPIC_KEYS}
BROKER_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in _BROKER_KEYS}

# Broker synonyms given in a coarser unit (Kafka's ConfigSynonym converters).
_SYNONYM_SCALE = {
    "log.roll.hours": 3600 * 1000,
    "log.roll.jitter.hours": 3600 * 1000,
    "log.retention.minutes": 60 * 1000,
    "log.retention.hours": 3600 * 1000,
}

# DynamicBrokerConfig.brokerConfigSynonyms: broker keys that describe one setting in several units.
_BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_BROKER_SYNONYMS = {name: group for group in _BROKER_SYNONYM_GROUPS for name in group}

# The topic keys handed to the storage layer's LogConfig.from_kafka, which ignores keys it does not
# model. A superset of its KAFKA_KEYS (tests/test_config.py checks that), plus message.format.version,
# which picks the stored magic (issue 7).
_LOG_CONFIG_KEYS = (
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "index.interval.bytes", "max.compaction.lag.ms", "max.message.bytes", "message.format.version",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
)


# --------------------------------------------------------------------------- listeners


@dataclass(frozen=True)
class Endpoint:
    """One parsed listener: NAME://host:port. An empty host means every interface."""

    listener_name: str
    security_protocol: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")  # SocketServerConfigs' URI pattern
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _protocol_map(text: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for entry in _COMMA.split(text.strip()) if text.strip() else []:
        name, sep, protocol = entry.partition(":")
        if not sep or protocol.strip().upper() not in _SECURITY_PROTOCOLS:
            raise ConfigError.invalid("listener.security.protocol.map", text,
                                      f"Invalid entry '{entry}'; expected NAME:PROTOCOL with PROTOCOL one of "
                                      + ", ".join(_SECURITY_PROTOCOLS))
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def parse_listeners(value: str, protocol_map: str = _PROTOCOL_MAP_DEFAULT, *,
                    key: str = "listeners") -> list[Endpoint]:
    """Parse 'NAME://host:port,...' as Kafka's SocketServerConfigs.listenerListToEndPoints does."""
    names = _protocol_map(protocol_map)
    endpoints: list[Endpoint] = []
    for entry in [e for e in _COMMA.split(value.strip()) if e]:
        m = _LISTENER.fullmatch(entry)
        if not m:
            raise ConfigError.invalid(key, value, f"Unable to parse {entry} to a broker endpoint")
        name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError.invalid(key, value, f"Port {port} of {entry} is out of range 0..65535")
        if name not in names:
            raise ConfigError.invalid(key, value, f"No security protocol defined for listener {name}")
        endpoints.append(Endpoint(name, names[name], host, port))
    if not endpoints:
        raise ConfigError.invalid(key, value, "At least one listener is required")
    if len({e.listener_name for e in endpoints}) != len(endpoints):
        raise ConfigError.invalid(key, value, "Each listener must have a different name")
    return endpoints


# --------------------------------------------------------------------------- cluster id


def generate_cluster_id() -> str:
    """A random Kafka Uuid as Kafka prints it: 22 chars of URL-safe base64, never starting with '-'
    (Kafka's Uuid.randomUuid re-draws those so the id cannot be mistaken for a CLI flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


# --------------------------------------------------------------------------- the broker config


def _flatten(mapping: Mapping[Any, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    """Nested YAML maps become dotted keys: {log: {dirs: x}} -> ('log.dirs', x)."""
    for k, v in mapping.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            yield from _flatten(v, name + ".")
        else:
            yield name, v


class BrokerConfig:
    """The broker's static configuration: every broker key's parsed value and where it came from.

    Build it with `load` (YAML file, CLI flags, overrides) or `from_props` (a mapping of Kafka keys).
    """

    def __init__(self, static: Mapping[str, Any]):
        """`static`: explicitly set broker keys -> raw or parsed values. Unknown keys are logged and kept
        in `unknown`; invalid values raise ConfigError."""
        self.unknown: dict[str, Any] = {}
        parsed: dict[str, Any] = {}
        for name, raw in static.items():
            key = BROKER_CONFIGS.get(name)
            if key is None:
                self.unknown[name] = raw
                continue
            if raw is None:  # an empty YAML value: leave the key at its default
                continue
            parsed[name] = parse_value(key, raw)
        for name in sorted(self.unknown):
            # Kafka ignores keys it does not know; say so, and point topic keys to their broker synonym.
            topic_key = TOPIC_CONFIGS.get(name)
            hint = f" (a topic config; the broker's default for it is {topic_key.synonyms[0]})" \
                if topic_key is not None and topic_key.synonyms else ""
            log.warning("Ignoring unknown broker config %s%s", name, hint)

        # node.id and broker.id name one setting; whichever was given sets the other (KafkaConfig.populateSynonyms).
        if "node.id" in parsed and "broker.id" in parsed and parsed["node.id"] != parsed["broker.id"]:
            raise ConfigError("You must set `node.id` to the same value as `broker.id`.")
        if "broker.id" in parsed and "node.id" not in parsed:
            if parsed["broker.id"] < 0:
                raise ConfigError.invalid("broker.id", parsed["broker.id"], "Value must be at least 0")
            parsed["node.id"] = parsed["broker.id"]
        elif "node.id" in parsed:
            parsed["broker.id"] = parsed["node.id"]

        self._static = parsed
        self._values = {name: key.default for name, key in BROKER_CONFIGS.items()}
        self._values.update(parsed)
        if "broker.id" not in parsed:
            self._values["broker.id"] = self._values["node.id"]
        self._check()
        self._topic_defaults = self._resolve_topic_defaults()
        self.cluster_id: str = self._values["cluster.id"] or generate_cluster_id()

    # ---- construction

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> BrokerConfig:
        return cls(props)

    @classmethod
    def load(cls, path: Path | str | None = None, overrides: Sequence[str] = (), *, host: str | None = None,
             port: int | None = None, data_dir: str | Path | None = None) -> BrokerConfig:
        """Defaults < YAML file < --host/--port/--data-dir < --override key=value (later wins).

        host/port replace `listeners` with PLAINTEXT://host:port (a missing one is taken from the
        listener it replaces); `advertised.listeners` follows unless set explicitly. data_dir sets log.dirs.
        """
        props: dict[str, Any] = {}
        if path is not None:
            props.update(_read_yaml(Path(path)))
        if host is not None or port is not None:
            current = parse_listeners(str(props.get("listeners") or BROKER_CONFIGS["listeners"].default),
                                      str(props.get("listener.security.protocol.map") or _PROTOCOL_MAP_DEFAULT))[0]
            new = Endpoint("PLAINTEXT", "PLAINTEXT", current.host if host is None else host,
                           current.port if port is None else int(port))
            props["listeners"] = str(new)
        if data_dir is not None:
            props["log.dirs"] = str(data_dir)
        for item in overrides:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise ConfigError(f"Invalid override {item!r}: expected key=value")
            props[name.strip()] = value
        return cls(props)

    # ---- checks across keys (KafkaConfig.validateValues and our single-node limits)

    def _check(self) -> None:
        v = self._values
        roll_ms = v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3600 * 1000
        if roll_ms < 1:
            raise ConfigError("log.roll.ms must be greater than or equal to 1")
        jitter = v["log.roll.jitter.ms"] if v["log.roll.jitter.ms"] is not None else v["log.roll.jitter.hours"]
        if jitter < 0:
            raise ConfigError("log.roll.jitter.ms must be greater than or equal to 0")
        if self._retention_ms() == 0:
            raise ConfigError("log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
        dirs = [d for d in _COMMA.split((v["log.dirs"] or v["log.dir"] or "").strip()) if d]
        if not dirs:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        if len(dirs) > 1:
            raise ConfigError(f"minibroker keeps partitions in one log directory; log.dirs lists {len(dirs)}: "
                              + ",".join(dirs))
        self.data_dir = Path(dirs[0])

        self.listener_endpoints = parse_listeners(v["listeners"], v["listener.security.protocol.map"])
        for endpoint in self.listener_endpoints:
            if endpoint.security_protocol != "PLAINTEXT":
                raise ConfigError(f"Listener {endpoint} uses {endpoint.security_protocol}; "
                                  "minibroker serves PLAINTEXT only")
        if len({e.port for e in self.listener_endpoints if e.port}) != len([e for e in self.listener_endpoints if e.port]):
            raise ConfigError.invalid("listeners", v["listeners"], "Each listener must have a different port")
        if v["advertised.listeners"]:
            advertised = parse_listeners(v["advertised.listeners"], v["listener.security.protocol.map"],
                                         key="advertised.listeners")
        else:  # Kafka advertises the listeners; an empty host becomes this machine's name
            advertised = [Endpoint(e.listener_name, e.security_protocol, e.host or socket.gethostname(), e.port)
                          for e in self.listener_endpoints]
        if any(e.host == "0.0.0.0" for e in advertised):
            raise ConfigError("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                              "Use a routable IP address.")
        names = {e.listener_name for e in self.listener_endpoints}
        for e in advertised:
            if e.listener_name not in names:
                raise ConfigError(f"advertised.listeners listener {e.listener_name} is not in listeners")
        self.advertised_endpoints = advertised
        first = self.listener_endpoints[0]
        self.listener_name: str = first.listener_name
        self.listener_host: str = first.host
        self.listener_port: int = first.port
        mine = next((e for e in advertised if e.listener_name == first.listener_name), None)
        if mine is None:
            raise ConfigError(f"advertised.listeners has no address for listener {first.listener_name}")
        self.advertised_host: str = mine.host
        self.advertised_port: int = mine.port
        self.node_id: int = v["node.id"]

        for key in ("default.replication.factor", "offsets.topic.replication.factor",
                    "transaction.state.log.replication.factor"):
            if v[key] > 1:
                log.warning("%s=%d, but this is a single-node broker: topics that need more than one replica "
                            "cannot be created", key, v[key])
        if v["group.max.session.timeout.ms"] < v["group.min.session.timeout.ms"]:
            raise ConfigError("group.max.session.timeout.ms must be greater than or equal to "
                              "group.min.session.timeout.ms")

    def _retention_ms(self) -> int:
        # KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours; any negative means -1 (forever).
        v = self._values
        if v["log.retention.ms"] is not None:
            millis = v["log.retention.ms"]
        elif v["log.retention.minutes"] is not None:
            millis = v["log.retention.minutes"] * 60 * 1000
        else:
            millis = v["log.retention.hours"] * 3600 * 1000
        return -1 if millis < 0 else millis

    def _resolve_topic_defaults(self) -> dict[str, Any]:
        defaults: dict[str, Any] = {}
        for name, key in TOPIC_CONFIGS.items():
            value = key.default
            for synonym in key.synonyms:
                raw = self._values.get(synonym)
                if raw is not None:
                    value = raw * _SYNONYM_SCALE[synonym] if synonym in _SYNONYM_SCALE else raw
                    break
            if isinstance(value, list):
                value = list(value)
            defaults[name] = value
        defaults["retention.ms"] = self._retention_ms()
        return defaults

    # ---- reading

    def get(self, key: str) -> Any:
        """The parsed value of a broker key (None where Kafka's default is null and nothing set it)."""
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(f"Unknown broker config {key}") from None

    def source(self, key: str) -> str:
        """'STATIC_BROKER_CONFIG' if the key was set (file, flag or override), else 'DEFAULT_CONFIG'."""
        return self._source(key).name

    def _source(self, key: str) -> ConfigSource:
        if key not in BROKER_CONFIGS:
            raise KeyError(f"Unknown broker config {key}")
        return ConfigSource.STATIC_BROKER_CONFIG if key in self._static else ConfigSource.DEFAULT_CONFIG

    def is_set(self, key: str) -> bool:
        return key in self._static

    def values(self) -> dict[str, Any]:
        return dict(self._values)

    def topic_defaults(self) -> dict[str, Any]:
        """Every topic key -> its default on this broker (the first broker synonym with a value)."""
        return {k: (list(v) if isinstance(v, list) else v) for k, v in self._topic_defaults.items()}

    def __repr__(self) -> str:
        return f"BrokerConfig(static={self._static!r})"


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml  # only the CLI path needs it

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read config file {path}: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"Config file {path} is not valid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"Config file {path} must hold a mapping of Kafka config keys, not {type(data).__name__}")
    props: dict[str, Any] = {}
    for name, value in _flatten(data):
        if name in props:
            log.warning("Config key %s is given twice in %s; the later value wins", name, path)
        props[name] = value
    return props


# --------------------------------------------------------------------------- topic configs


def validate_topic_config(props: Mapping[str, Any], broker: BrokerConfig | None = None) -> dict[str, Any]:
    """Parse and check topic overrides (CreateTopics / AlterConfigs); returns key -> parsed value.

    Unknown keys are refused as Kafka does (LogConfig.validateNames). With `broker`, the checks that
    need the effective config run too (LogConfig.validateValues: min vs max compaction lag).
    """
    parsed: dict[str, Any] = {}
    for name, raw in props.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}", name=name)
        if raw is None:
            raise ConfigError(f"Null value not supported for topic configs: {name}", name=name)
        parsed[name] = parse_value(key, raw)
    if parsed.get("remote.storage.enable"):
        raise ConfigError("Tiered Storage functionality is disabled in the broker. "
                          "Topic cannot be configured with remote log storage.", name="remote.storage.enable")
    effective = {**(broker.topic_defaults() if broker else {}), **parsed}
    low, high = effective.get("min.compaction.lag.ms"), effective.get("max.compaction.lag.ms")
    if low is not None and high is not None and low > high:
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                          f"max.compaction.lag.ms ({high})")
    return parsed


def _parsed_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in overrides.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}", name=name)
        out[name] = parse_value(key, value)
    return out


def effective_topic_config(broker: BrokerConfig, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Every topic key -> value in force: the topic's override, else the broker's default."""
    config = broker.topic_defaults()
    config.update(_parsed_overrides(overrides))
    return config


def to_log_config_props(effective: Mapping[str, Any]) -> dict[str, Any]:
    """The storage-facing subset of an effective topic config, Kafka keys -> parsed values.

    Resolved the way Kafka's LogConfig reads them: the deprecated message.timestamp.difference.max.ms
    stands in for a before/after bound still at its default (KIP-937 transition rule).
    """
    props = {k: (list(effective[k]) if isinstance(effective[k], list) else effective[k])
             for k in _LOG_CONFIG_KEYS if k in effective}
    difference = effective.get("message.timestamp.difference.max.ms", LONG_MAX)
    for bound in ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms"):
        if props.get(bound, LONG_MAX) == LONG_MAX:
            props[bound] = difference
    return props


class OpType(IntEnum):
    """IncrementalAlterConfigs operation ids (AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def apply_incremental_ops(current: Mapping[str, Any], ops: Iterable[tuple[str, int, str | None]],
                          broker: BrokerConfig | None = None) -> dict[str, Any]:
    """Apply IncrementalAlterConfigs ops to a topic's overrides; returns the new, validated overrides.

    APPEND/SUBTRACT only apply to list keys and start from the key's own default when it is unset,
    as Kafka's ConfigAdminManager.prepareIncrementalConfigs does.
    """
    text: dict[str, str] = {}
    for name, value in current.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}", name=name)
        text[name] = value if isinstance(value, str) else (format_value(key, value) or "")
    for name, op, value in ops:
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}", name=name)
        op = OpType(op)
        if op is OpType.SET:
            if value is None:
                raise ConfigError(f"Null value not supported for topic configs: {name}", name=name)
            text[name] = value
        elif op is OpType.DELETE:
            text.pop(name, None)
        else:
            if key.type != "list":
                verb = "append" if op is OpType.APPEND else "subtract"
                raise ConfigError(f"Config value {verb} is not allowed for config key: {name}", name=name)
            base = text.get(name, format_value(key, key.default) or "")
            old = [s for s in base.split(",") if s] if op is OpType.APPEND else base.split(",")
            given = (value or "").split(",")
            if op is OpType.APPEND:
                new = old + [s for s in given if s not in old]
            else:
                new = [s for s in old if s not in given]
            text[name] = ",".join(new)
    return validate_topic_config(text, broker)


# --------------------------------------------------------------------------- DescribeConfigs


@dataclass
class ConfigEntry:
    """One DescribeConfigs result entry. `source` and `type` are the wire ids; `synonyms` are
    (name, value, source id), the entry's own source first, as Kafka lists them (KIP-226)."""

    name: str
    value: str | None
    source: int
    is_default: bool
    read_only: bool
    sensitive: bool
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)
    type: int = ConfigType.UNKNOWN
    doc: str = ""


def _broker_synonyms(broker: BrokerConfig, names: Sequence[str]) -> list[tuple[str, str | None, int]]:
    """Kafka's ConfigHelper.configSynonyms: by source (static, then default), then by name order."""
    found: list[tuple[str, str | None, int]] = []
    for source in (ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG):
        for name in names:
            key = BROKER_CONFIGS[name]
            if source is ConfigSource.STATIC_BROKER_CONFIG:
                if not broker.is_set(name):
                    continue
                value = broker.get(name)
            else:
                value = key.default
                if name == "broker.id":
                    value = broker.get(name)
                if value is None:
                    continue
            found.append((name, None if key.sensitive else format_value(key, value), int(source)))
    return found


def describe_topic_config(broker: BrokerConfig, overrides: Mapping[str, Any]) -> list[ConfigEntry]:
    """Every topic key as DescribeConfigs reports it for a topic with these overrides, sorted by name.

    One difference from Kafka 3.x/4.x: Kafka drops all broker synonyms of a topic key whose first
    broker synonym is unset (so retention.ms shows none unless log.retention.ms is set); we list the
    ones that are set, e.g. log.retention.hours, since that is where the value comes from.
    """
    parsed = _parsed_overrides(overrides)
    effective = broker.topic_defaults()
    effective.update(parsed)
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        key = TOPIC_CONFIGS[name]
        value = None if key.sensitive else format_value(key, effective[name])
        synonyms = _broker_synonyms(broker, key.synonyms)
        if name in parsed:
            synonyms.insert(0, (name, value, int(ConfigSource.DYNAMIC_TOPIC_CONFIG)))
        source = synonyms[0][2] if synonyms else int(ConfigSource.DEFAULT_CONFIG)
        entries.append(ConfigEntry(
            name=name, value=value, source=source, is_default=source == ConfigSource.DEFAULT_CONFIG,
            read_only=False, sensitive=key.sensitive, synonyms=synonyms, type=int(key.config_type), doc=key.doc))
    return entries


def describe_broker_config(broker: BrokerConfig) -> list[ConfigEntry]:
    """Every broker key as DescribeConfigs reports it for this broker's id, sorted by name."""
    entries = []
    for name in sorted(BROKER_CONFIGS):
        key = BROKER_CONFIGS[name]
        value = broker.get(name)
        if name == "cluster.id":
            value = broker.cluster_id
        group = _BROKER_SYNONYMS.get(name, (name,))
        synonyms = _broker_synonyms(broker, group)
        # ConfigHelper drops the synonyms listed before the key itself (a coarser unit describes its own value).
        while synonyms and synonyms[0][0] != name:
            synonyms.pop(0)
        source = synonyms[0][2] if synonyms else int(ConfigSource.DEFAULT_CONFIG)
        entries.append(ConfigEntry(
            name=name, value=None if key.sensitive else format_value(key, value), source=source,
            is_default=source == ConfigSource.DEFAULT_CONFIG, read_only=key.read_only, sensitive=key.sensitive,
            synonyms=synonyms, type=int(key.config_type), doc=key.doc))
    return entries
