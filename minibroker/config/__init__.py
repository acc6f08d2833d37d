"""Broker and topic configuration, with Kafka's keys, types, defaults and validators.

One config model, one module per job:

- `definitions`: what a key is (`ConfigKey`, `ConfigType`, `ConfigSource`), the validators, parsing
  and formatting of values as Kafka's ConfigDef does, and the MetadataVersion table that decides the
  stored record magic (`record_version_for`);
- `keys`: the tables of broker and topic keys (`BROKER_CONFIGS`, `TOPIC_CONFIGS`) with their docs;
- `broker`: `BrokerConfig` (YAML file, CLI flags, overrides), listeners, the cluster id;
- `topic`: a topic's overrides validated, its config in force, and the storage `LogConfig`;
- `describe`: DescribeConfigs entries with synonyms, and IncrementalAlterConfigs operations.

Imports go definitions <- keys <- broker <- topic <- describe. Callers import from this package.
"""

from minibroker.config.broker import BrokerConfig, Endpoint, generate_cluster_id, parse_listeners
from minibroker.config.definitions import (
    INT_MAX,
    LONG_MAX,
    ConfigError,
    ConfigKey,
    ConfigSource,
    ConfigType,
    ConfigValue,
    format_value,
    parse_value,
    record_version_for,
)
from minibroker.config.describe import (
    ConfigEntry,
    OpType,
    apply_incremental_ops,
    describe_broker_config,
    describe_topic_config,
)
from minibroker.config.keys import BROKER_CONFIGS, TOPIC_CONFIGS
from minibroker.config.topic import effective_topic_config, to_log_config, validate_topic_config

__all__ = [
    "BROKER_CONFIGS",
    "INT_MAX",
    "LONG_MAX",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigKey",
    "ConfigSource",
    "ConfigType",
    "ConfigValue",
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
    "to_log_config",
    "validate_topic_config",
]
