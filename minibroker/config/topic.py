"""Topic configs: checking a topic's overrides, the config in force, and the storage LogConfig.

A topic's config in force is its own overrides laid over the broker's defaults for topic keys
(`BrokerConfig.topic_defaults`). Overrides are parsed and validated here, once; storage never sees
a Kafka key string. It receives a `minibroker_storage.config.LogConfig` built by `to_log_config` from values
already parsed, with the decisions already made (the stored record magic, the KIP-937 timestamp
bounds).
"""

from __future__ import annotations

from collections.abc import Mapping

from minibroker.config.broker import BrokerConfig
from minibroker.config.definitions import (
    LONG_MAX,
    ConfigError,
    ConfigValue,
    as_float,
    as_int,
    as_list,
    as_optional_int,
    as_str,
    parse_value,
    record_version_for,
)
from minibroker.config.keys import TOPIC_CONFIGS
from minibroker_storage.config import LogConfig

# --------------------------------------------------------------------------- topic configs


def validate_topic_config(props: Mapping[str, ConfigValue],
                          broker: BrokerConfig | None = None) -> dict[str, ConfigValue]:
    """Parse and check topic overrides (CreateTopics / AlterConfigs: text; stored overrides: parsed
    values); returns key -> parsed value.

    Unknown keys are refused as Kafka does (LogConfig.validateNames). With `broker`, the checks that
    need the effective config run too (LogConfig.validateValues: min vs max compaction lag).
    """
    parsed: dict[str, ConfigValue] = {}
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
    low = as_optional_int("min.compaction.lag.ms", effective.get("min.compaction.lag.ms"))
    high = as_optional_int("max.compaction.lag.ms", effective.get("max.compaction.lag.ms"))
    if low is not None and high is not None and low > high:
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                          f"max.compaction.lag.ms ({high})")
    return parsed


def _parsed_overrides(overrides: Mapping[str, ConfigValue]) -> dict[str, ConfigValue]:
    out: dict[str, ConfigValue] = {}
    for name, value in overrides.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}", name=name)
        out[name] = parse_value(key, value)
    return out


def effective_topic_config(broker: BrokerConfig, overrides: Mapping[str, ConfigValue]) -> dict[str, ConfigValue]:
    """Every topic key -> value in force: the topic's override, else the broker's default."""
    config = broker.topic_defaults()
    config.update(_parsed_overrides(overrides))
    return config


def to_log_config(effective: Mapping[str, ConfigValue]) -> LogConfig:
    """The storage LogConfig of a topic's config in force (`effective_topic_config`).

    Every value is already parsed and validated; two are resolved here, as Kafka's LogConfig
    resolves them: the stored record magic from message.format.version (`record_version_for`), and
    the timestamp bounds, where the deprecated message.timestamp.difference.max.ms stands in for a
    before/after bound still at its default (KIP-937 transition rule). Keys missing from
    `effective` keep LogConfig's defaults (Kafka's).
    """
    d = LogConfig()  # Kafka's defaults, for keys missing from `effective`

    def long(name: str, default: int) -> int:
        return as_int(name, effective[name]) if name in effective else default

    def text(name: str, default: str) -> str:
        return as_str(name, effective[name]) if name in effective else default

    def bound(name: str) -> int:
        value = long(name, LONG_MAX)
        return long("message.timestamp.difference.max.ms", LONG_MAX) if value == LONG_MAX else value

    return LogConfig(
        segment_bytes=long("segment.bytes", d.segment_bytes),
        segment_ms=long("segment.ms", d.segment_ms),
        segment_jitter_ms=long("segment.jitter.ms", d.segment_jitter_ms),
        segment_index_bytes=long("segment.index.bytes", d.segment_index_bytes),
        index_interval_bytes=long("index.interval.bytes", d.index_interval_bytes),
        retention_ms=long("retention.ms", d.retention_ms),
        retention_bytes=long("retention.bytes", d.retention_bytes),
        flush_messages=long("flush.messages", d.flush_messages),
        flush_ms=long("flush.ms", d.flush_ms),
        max_message_bytes=long("max.message.bytes", d.max_message_bytes),
        message_timestamp_type=text("message.timestamp.type", d.message_timestamp_type),
        message_timestamp_before_max_ms=bound("message.timestamp.before.max.ms"),
        message_timestamp_after_max_ms=bound("message.timestamp.after.max.ms"),
        file_delete_delay_ms=long("file.delete.delay.ms", d.file_delete_delay_ms),
        cleanup_policy=(",".join(as_list("cleanup.policy", effective["cleanup.policy"]))
                        if "cleanup.policy" in effective else d.cleanup_policy),
        delete_retention_ms=long("delete.retention.ms", d.delete_retention_ms),
        min_compaction_lag_ms=long("min.compaction.lag.ms", d.min_compaction_lag_ms),
        max_compaction_lag_ms=long("max.compaction.lag.ms", d.max_compaction_lag_ms),
        min_cleanable_dirty_ratio=(as_float("min.cleanable.dirty.ratio", effective["min.cleanable.dirty.ratio"])
                                   if "min.cleanable.dirty.ratio" in effective else d.min_cleanable_dirty_ratio),
        compression_type=text("compression.type", d.compression_type),
        record_version=(record_version_for(text("message.format.version", ""))
                        if "message.format.version" in effective else d.record_version),
    )
