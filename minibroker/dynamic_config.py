"""Dynamic broker configs: what AlterConfigs/IncrementalAlterConfigs set on a BROKER resource.

Theory of operation (Kafka: DynamicBrokerConfig). Three layers lie over the static config
(config.yaml, --override), highest first: per-broker dynamic configs (resource name = this node's
id, source DYNAMIC_BROKER_CONFIG), cluster-wide dynamic defaults (resource name "", source
DYNAMIC_DEFAULT_BROKER_CONFIG), then the static config. Only keys Kafka can change at runtime
are accepted (the config model marks them `read_only=False`); others get INVALID_REQUEST (as
Kafka 4's controller answers) "Cannot update these configs dynamically: [...]". minibroker cannot
rebind its sockets, so listener keys are refused too. A data directory's first start records
`min.insync.replicas` as a cluster default, as Kafka 4 does when it formats a cluster.

A change rebuilds the combined config (`current`) from the layers and tells the listeners
registered with `on_change` (the topic registry gives every open log its new effective topic
config: the log.* keys are the broker defaults of topic keys). The layers are persisted in
`<log.dirs>/broker-config-overrides.json` (Kafka keeps them in the metadata log) and applied at
startup. DescribeConfigs sees the layers through `describe`: the synonyms list each key once per
layer that sets it, in Kafka's order (dynamic broker, dynamic default, static, default).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from minibroker.config import (
    BROKER_CONFIGS,
    BrokerConfig,
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigValue,
    describe_broker_config,
    describe_topic_config,
    format_value,
    parse_value,
)
from minibroker.config.kafka_dynamic import REPLICATION_THROTTLE_KEYS
from minibroker_storage.log_files import atomic_write

log = logging.getLogger("minibroker.dynamic_config")

DYNAMIC_CONFIG_FILE = "broker-config-overrides.json"
_NOT_HERE = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map"})
# DescribeConfigs lists synonyms by source in this order (Kafka: ConfigHelper / DynamicBrokerConfig)
_SOURCE_ORDER = {int(ConfigSource.DYNAMIC_BROKER_CONFIG): 0, int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG): 1,
                 int(ConfigSource.STATIC_BROKER_CONFIG): 2, int(ConfigSource.DEFAULT_CONFIG): 3}


class DynamicBrokerConfig:
    def __init__(self, static: BrokerConfig, data_dir: Path):
        self.static = static
        self.path = Path(data_dir) / DYNAMIC_CONFIG_FILE
        self.per_broker: dict[str, ConfigValue] = {}  # key -> parsed value
        self.cluster_default: dict[str, ConfigValue] = {}
        self.current = static  # static < cluster default < per broker, recombined on every change
        self._listeners: list[Callable[[BrokerConfig], None]] = []

    def on_change(self, listener: Callable[[BrokerConfig], None]) -> None:
        """Call `listener(new_config)` after every accepted change (Kafka: Reconfigurable)."""
        self._listeners.append(listener)

    def value(self, key: str) -> ConfigValue:
        return self.current.value(key)

    def get(self, key: str) -> Any:
        """`value`, untyped as BrokerConfig.get is (minibroker.cleaner uses it as a number)."""
        return self.current.get(key)

    # -- persistence -------------------------------------------------------------------------
    def load(self) -> None:
        if not self.path.exists():
            self._format()
            return
        try:
            data = json.loads(self.path.read_text("utf-8"))
            self.per_broker = _parse_all(data.get("broker", {}))
            self.cluster_default = _parse_all(data.get("default", {}))
        except (ValueError, AttributeError, TypeError, ConfigError) as e:
            log.error("Unreadable %s, dynamic broker configs ignored: %s", self.path, e)
            self.per_broker, self.cluster_default = {}, {}
        self.current = self.combined()

    def _format(self) -> None:
        """A data directory's first start, Kafka's `kafka-storage format`: Kafka 4 (eligible leader
        replicas, KIP-966) records `min.insync.replicas` as a cluster-wide dynamic default then,
        from the static config, so every topic and the broker default describe it with source
        DYNAMIC_DEFAULT_BROKER_CONFIG (docs/differences.md#cluster-min-isr)."""
        self.cluster_default = {"min.insync.replicas": self.static.value("min.insync.replicas")}
        self.current = self.combined()
        try:
            self._store()
        except OSError as e:  # a read-only or missing directory fails later, where it is used
            log.warning("Cannot write %s: %s", self.path, e)

    def _store(self) -> None:
        def text(layer: dict[str, ConfigValue]) -> dict[str, str | None]:
            return {k: format_value(BROKER_CONFIGS[k], v) for k, v in sorted(layer.items())}
        data = {"version": 0, "broker": text(self.per_broker), "default": text(self.cluster_default)}
        atomic_write(self.path, json.dumps(data, indent=1).encode("utf-8"))

    # -- the combined config ------------------------------------------------------------------
    def combined(self) -> BrokerConfig:
        """static < cluster default < per broker, as one BrokerConfig."""
        props = {k: self.static.value(k) for k in BROKER_CONFIGS if self.static.is_set(k)}
        props.update(self.cluster_default)
        props.update(self.per_broker)
        if not self.per_broker and not self.cluster_default:
            return self.static
        cfg = BrokerConfig(props)
        cfg.cluster_id = self.static.cluster_id
        return cfg

    def layer(self, per_broker: bool) -> dict[str, ConfigValue]:
        return self.per_broker if per_broker else self.cluster_default

    @staticmethod
    def validate(new_layer: dict[str, str | None], per_broker: bool) -> dict[str, ConfigValue]:
        """Parse a whole new layer (key -> text); ConfigError for keys that cannot change live."""
        new_layer = {k: v for k, v in new_layer.items() if k not in REPLICATION_THROTTLE_KEYS}  # read by quotas.replication_quota
        fixed = sorted(k for k in new_layer if k in BROKER_CONFIGS and (BROKER_CONFIGS[k].read_only or k in _NOT_HERE))
        if fixed:
            raise ConfigError(f"Cannot update these configs dynamically: [{', '.join(fixed)}]")  # Kafka 4.4's text
        unknown = sorted(k for k in new_layer if k not in BROKER_CONFIGS)
        if unknown:
            raise ConfigError(f"Unknown broker configs: {', '.join(unknown)}")
        return _parse_all(new_layer)

    def replace_layer(self, per_broker: bool, parsed: dict[str, ConfigValue]) -> BrokerConfig:
        """Check the combined result (cross-key rules) and make `parsed` the layer; returns the
        new combined config. Nothing changes if the combination is invalid."""
        old = dict(self.layer(per_broker))
        target = self.per_broker if per_broker else self.cluster_default
        target.clear()
        target.update(parsed)
        try:
            cfg = self.combined()
        except ConfigError:
            target.clear()
            target.update(old)
            raise
        self._store()
        self.current = cfg
        for listener in self._listeners:
            listener(cfg)
        return cfg

    # -- DescribeConfigs ------------------------------------------------------------------------
    def _fix_synonyms(self, synonyms: list[tuple[str, str | None, int]]) -> list[tuple[str, str | None, int]]:
        out: list[tuple[str, str | None, int]] = []
        seen: set[str] = set()
        for name, value, source in synonyms:
            if source != ConfigSource.STATIC_BROKER_CONFIG or name not in BROKER_CONFIGS:
                out.append((name, value, source))
                continue
            if name in seen:
                continue
            seen.add(name)
            key = BROKER_CONFIGS[name]
            for layer, src in ((self.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                               (self.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
                if name in layer:
                    out.append((name, None if key.sensitive else format_value(key, layer[name]), int(src)))
            if self.static.is_set(name):
                out.append((name, None if key.sensitive else format_value(key, self.static.value(name)),
                            int(ConfigSource.STATIC_BROKER_CONFIG)))
        out.sort(key=lambda s: _SOURCE_ORDER.get(s[2], 0 if s[2] == ConfigSource.DYNAMIC_TOPIC_CONFIG else 9))
        return out

    def _fix(self, entries: list[ConfigEntry]) -> list[ConfigEntry]:
        if not self.per_broker and not self.cluster_default:
            return entries
        for e in entries:
            e.synonyms = self._fix_synonyms(e.synonyms)
            e.source = e.synonyms[0][2] if e.synonyms else int(ConfigSource.DEFAULT_CONFIG)
            e.is_default = e.source == ConfigSource.DEFAULT_CONFIG
        return entries

    def describe_broker(self, config: BrokerConfig) -> list[ConfigEntry]:
        return self._fix(describe_broker_config(config))

    def describe_default(self) -> list[ConfigEntry]:
        """The cluster-wide dynamic defaults only (what Kafka answers for resource name "")."""
        entries = []
        for name in sorted(self.cluster_default):
            key = BROKER_CONFIGS[name]
            value = None if key.sensitive else format_value(key, self.cluster_default[name])
            src = int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
            entries.append(ConfigEntry(name=name, value=value, source=src, is_default=False, read_only=False,
                                       sensitive=key.sensitive, synonyms=[(name, value, src)],
                                       type=int(key.config_type), doc=key.doc))
        return entries

    def describe_topic(self, config: BrokerConfig, overrides: Mapping[str, ConfigValue]) -> list[ConfigEntry]:
        return self._fix(describe_topic_config(config, overrides))


def _parse_all(layer: Mapping[str, object]) -> dict[str, ConfigValue]:
    """Parse a layer: request text, or what the overrides file holds (any JSON: parse_value narrows it)."""
    out: dict[str, ConfigValue] = {}
    for name, raw in layer.items():
        key = BROKER_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown broker config {name}", name=name)
        if raw is None:
            continue
        out[name] = parse_value(key, raw)
    return out
