"""DescribeConfigs and IncrementalAlterConfigs over the config model.

`describe_topic_config` / `describe_broker_config` produce what DescribeConfigs returns for every
key: value, source, synonyms with their sources (KIP-226), read-only, type id (KIP-569) and doc.
`apply_incremental_ops` turns IncrementalAlterConfigs' SET/DELETE/APPEND/SUBTRACT into a topic's
new, validated overrides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from minibroker.config.broker import BrokerConfig
from minibroker.config.definitions import ConfigError, ConfigSource, ConfigType, ConfigValue, format_value
from minibroker.config.keys import _BROKER_SYNONYMS, BROKER_CONFIGS, TOPIC_CONFIGS, UNDESCRIBED_BROKER_KEYS
from minibroker.config.topic import _parsed_overrides, validate_topic_config


class OpType(IntEnum):
    """IncrementalAlterConfigs operation ids (AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def apply_incremental_ops(current: Mapping[str, ConfigValue], ops: Iterable[tuple[str, int, str | None]],
                          broker: BrokerConfig | None = None) -> dict[str, ConfigValue]:
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


def _broker_synonyms(broker: BrokerConfig, names: Sequence[str], *, first_default_only: bool = False
                     ) -> list[tuple[str, str | None, int]]:
    """Kafka's ConfigHelper.configSynonyms: by source (static, then default), then by name order.
    `first_default_only`: a topic key's synonyms, where Kafka lists the default of its first broker
    synonym only (none at all when that one has no default, as log.retention.ms)."""
    found: list[tuple[str, str | None, int]] = []
    for source in (ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG):
        for name in names:
            key = BROKER_CONFIGS[name]
            if source is ConfigSource.STATIC_BROKER_CONFIG:
                if not broker.is_set(name):
                    continue
                value = broker.value(name)
            else:
                if first_default_only and name != names[0]:
                    continue
                value = key.default
                if name == "broker.id":
                    value = broker.value(name)
                if value is None:
                    continue
            found.append((name, None if key.sensitive else format_value(key, value), int(source)))
    return found


def describe_topic_config(broker: BrokerConfig, overrides: Mapping[str, ConfigValue]) -> list[ConfigEntry]:
    """Every topic key as DescribeConfigs reports it for a topic with these overrides, sorted by name.

    As Kafka 4.4 (checked against it in tests/reference): of the broker synonyms' defaults only the
    first synonym's is listed, so retention.ms shows no DEFAULT_CONFIG synonym (log.retention.ms has
    no default) although its value comes from log.retention.hours.
    """
    parsed = _parsed_overrides(overrides)
    effective = broker.topic_defaults()
    effective.update(parsed)
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        key = TOPIC_CONFIGS[name]
        value = None if key.sensitive else format_value(key, effective[name])
        synonyms = _broker_synonyms(broker, key.synonyms, first_default_only=True)
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
    for name in sorted(BROKER_CONFIGS.keys() - UNDESCRIBED_BROKER_KEYS):
        key = BROKER_CONFIGS[name]
        value = broker.value(name)
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
