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
from minibroker.config.definitions import LONG_MAX, ConfigError, parse_value
from minibroker.config.keys import _LOG_CONFIG_KEYS, TOPIC_CONFIGS

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

