"""Client metrics config resources (KIP-714): named subscriptions of `metrics`, `interval.ms` and
`match` (Kafka: ClientMetricsConfigs, ClientMetricsManager.listClientMetricsResources).

Theory of operation. A CLIENT_METRICS (16) config resource is made by its first
IncrementalAlterConfigs / AlterConfigs and lives while it has a key set (Kafka keeps one
ConfigRecord per key in the metadata log; one JSON file in the data directory survives a restart
alike). DescribeConfigs shows the three keys, those set with source CLIENT_METRICS_CONFIG, the
others DEFAULT_CONFIG; ListConfigResources (handlers/config_resources.py) lists the names, which is
what `kafka-client-metrics --list` prints. Values are checked as Kafka's ClientMetricsConfigs.validate
does, with its messages. The broker has no telemetry plugin, so GetTelemetrySubscriptions and
PushTelemetry stay unserved, as on a Kafka broker without a ClientTelemetryReceiver: the
subscriptions are stored and listed, never pushed to a client.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from minibroker.config import ConfigEntry
from minibroker.config.definitions import ConfigSource, ConfigType
from minibroker_protocol.errors import ErrorCode, KafkaError

METRICS = "metrics"
INTERVAL_MS = "interval.ms"
MATCH = "match"
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
# key -> (default shown, wire type, documentation as Kafka's ConfigDef states it)
KEYS: dict[str, tuple[str, int, str]] = {
    INTERVAL_MS: (str(DEFAULT_INTERVAL_MS), ConfigType.INT, "Metrics push interval in milliseconds"),
    MATCH: ("", ConfigType.LIST, "Client match criteria"),
    METRICS: ("", ConfigType.LIST, "Telemetry metric name prefix list"),
}
# the client selectors a `match` pattern may name (Kafka: ClientMetricsConfigs.ALLOWED_MATCH_PARAMS)
MATCH_KEYS = frozenset({"client_instance_id", "client_id", "client_software_name", "client_software_version",
                        "client_source_address", "client_source_port"})


def _list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def validate(name: str, key: str, value: str) -> str:
    """One key's value as stored, or KafkaError with Kafka's code and message."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    if key not in KEYS:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    if key == INTERVAL_MS:
        try:
            n = int(value)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Invalid value {value} for configuration {key}: Not a number of type INT") from None
        if not MIN_INTERVAL_MS <= n <= MAX_INTERVAL_MS:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid value {value} for {key}, interval must be "
                             f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
        return str(n)
    if key == MATCH:
        for pattern in _list(value):
            selector, eq, regex = pattern.partition("=")
            if not eq or selector.strip() not in MATCH_KEYS or not regex.strip():
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
            try:
                re.compile(regex.strip())
            except re.error:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal regex pattern: {regex.strip()}") from None
    return ",".join(_list(value))


class ClientMetricsConfigs:
    """Every client metrics subscription by name, persisted in the data directory."""

    FILE = "client_metrics_configs.json"

    def __init__(self, data_dir: Path | None) -> None:
        self.path = None if data_dir is None else data_dir / self.FILE
        self.configs: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path is not None and self.path.exists():
            self.configs = {n: dict(c) for n, c in json.loads(self.path.read_text()).items()}

    def names(self) -> list[str]:
        return sorted(self.configs)

    def describe(self, name: str) -> list[ConfigEntry]:
        """The three keys of `name` (a name with nothing set shows the defaults, as Kafka does)."""
        if not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
        own = self.configs.get(name, {})
        out = []
        for key, (default, ctype, doc) in KEYS.items():
            src = ConfigSource.CLIENT_METRICS_CONFIG if key in own else ConfigSource.DEFAULT_CONFIG
            # a set key is its own synonym (as Kafka lists it); a default one has none
            synonyms: list[tuple[str, str | None, int]] = [(key, own[key], int(src))] if key in own else []
            out.append(ConfigEntry(name=key, value=own.get(key, default), source=int(src), is_default=False,
                                   read_only=False, sensitive=False, synonyms=synonyms, type=int(ctype), doc=doc))
        return out

    def alter(self, name: str, ops: list[tuple[str, str | None]], replace: bool, validate_only: bool) -> None:
        """(key, value) pairs: a value sets the key, None deletes it; `replace` starts from nothing
        (legacy AlterConfigs). Every value is checked before anything changes."""
        configs = {} if replace else dict(self.configs.get(name, {}))
        if not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
        for key, value in ops:
            if value is None:
                if key not in KEYS:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
                configs.pop(key, None)
            else:
                configs[key] = validate(name, key, value)
        if validate_only:
            return
        if configs:
            self.configs[name] = configs
        else:
            self.configs.pop(name, None)
        if self.path is not None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.configs, sort_keys=True))
            tmp.replace(self.path)
