"""Topic configs: checking a topic's overrides, the config in force, and the storage LogConfig.

A topic's config in force is its own overrides laid over the broker's defaults for topic keys
(`BrokerConfig.topic_defaults`). Overrides are parsed and validated here, once; storage never sees
a Kafka key string. It receives a `storage.config.LogConfig` built by `to_log_config` from values
already parsed, with the decisions already made (the stored record magic, the KIP-937 timestamp
bounds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minibroker.config.broker import BrokerConfig
from minibroker.config.definitions import LONG_MAX, ConfigError, parse_value, record_version_for
from minibroker.config.keys import TOPIC_CONFIGS
from storage.config import LogConfig

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


def to_log_config(effective: Mapping[str, Any]) -> LogConfig:
    """The storage LogConfig of a topic's config in force (`effective_topic_config`).

    Every value is already parsed and validated; two are resolved here, as Kafka's LogConfig
    resolves them: the stored record magic from message.format.version (`record_version_for`), and
    the timestamp bounds, where the deprecated message.timestamp.difference.max.ms stands in for a
    before/after bound still at its default (KIP-937 transition rule). Keys missing from
    `effective` keep LogConfig's defaults (Kafka's).
    """
    def bound(name: str) -> int:
        value = effective.get(name, LONG_MAX)
        return effective.get("message.timestamp.difference.max.ms", LONG_MAX) if value == LONG_MAX else value

    fields: dict[str, Any] = {attr: effective[key] for key, attr in _LOG_CONFIG_FIELDS.items() if key in effective}
    if "cleanup.policy" in effective:
        fields["cleanup_policy"] = ",".join(effective["cleanup.policy"])
    if "message.format.version" in effective:
        fields["record_version"] = record_version_for(effective["message.format.version"])
    fields["message_timestamp_before_max_ms"] = bound("message.timestamp.before.max.ms")
    fields["message_timestamp_after_max_ms"] = bound("message.timestamp.after.max.ms")
    return LogConfig(**fields)


# Topic keys whose parsed value is a LogConfig field as it is; cleanup.policy, message.format.version
# and the timestamp bounds are converted in to_log_config.
_LOG_CONFIG_FIELDS: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "max.message.bytes": "max_message_bytes",
    "compression.type": "compression_type",
    "message.timestamp.type": "message_timestamp_type",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
}
