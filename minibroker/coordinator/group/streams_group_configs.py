"""GROUP config resources of streams groups (KIP-1071): the `streams.*` keys of Kafka 4.4's
GroupConfig, with the bounds of GroupCoordinatorConfig's `group.streams.*` broker keys.

Theory of operation. DescribeConfigs / IncrementalAlterConfigs on a GROUP resource reach
`StreamsGroupConfigs` through handlers/streams_group_configs.py (one of handlers/configs.py's
GROUP_CONFIG_PROVIDERS). A value is parsed as Kafka's ConfigDef does (type, then its floor), then
checked against the broker's bounds as GroupConfig.validate does, with Kafka's messages. The
values are kept as text in `streams_group_configs.json` in the data directory (Kafka keeps them in
the cluster metadata as ConfigRecords) and read by the StreamsGroupManager at each heartbeat:
session timeout, heartbeat interval, standby replicas and the initial rebalance delay act, the
acceptable recovery lag and task offset interval are told to the members in each heartbeat answer;
the other keys are accepted and shown as Kafka shows them, without effect (docs/differences.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from minibroker.config import BrokerConfig, ConfigType
from minibroker_protocol.errors import ErrorCode, KafkaError

SESSION_TIMEOUT = "streams.session.timeout.ms"
HEARTBEAT_INTERVAL = "streams.heartbeat.interval.ms"
NUM_STANDBY_REPLICAS = "streams.num.standby.replicas"
INITIAL_REBALANCE_DELAY = "streams.initial.rebalance.delay.ms"


@dataclass(frozen=True, slots=True)
class StreamsKey:
    """One streams.* GROUP key: its broker default, type, floor (ConfigDef's atLeast) and bounds
    (broker keys: `low`/`high` give a range message, `high` alone a 'less than or equal' one)."""

    broker_key: str
    type: ConfigType
    floor: int | None = None
    low: str | None = None
    high: str | None = None
    # Kafka lists these only when the group sets them (GroupConfig's internal keys)
    internal: bool = False


KEYS: dict[str, StreamsKey] = {
    SESSION_TIMEOUT: StreamsKey("group.streams.session.timeout.ms", ConfigType.INT, 1,
                                "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    HEARTBEAT_INTERVAL: StreamsKey("group.streams.heartbeat.interval.ms", ConfigType.INT, 1,
                                   "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"),
    NUM_STANDBY_REPLICAS: StreamsKey("group.streams.num.standby.replicas", ConfigType.INT, 0,
                                     None, "group.streams.max.standby.replicas"),
    INITIAL_REBALANCE_DELAY: StreamsKey("group.streams.initial.rebalance.delay.ms", ConfigType.INT, 0),
    "streams.assignment.interval.ms": StreamsKey("group.streams.assignment.interval.ms", ConfigType.INT, 0,
                                                 "group.streams.min.assignment.interval.ms",
                                                 "group.streams.max.assignment.interval.ms"),
    "streams.assignor.name": StreamsKey("group.streams.assignors", ConfigType.STRING),
    "streams.rack.aware.assignment.tags": StreamsKey("group.streams.rack.aware.assignment.tags", ConfigType.LIST),
    "streams.assignor.offload.enable": StreamsKey("group.streams.assignor.offload.enable", ConfigType.BOOLEAN,
                                                  internal=True),
    "streams.task.offset.interval.ms": StreamsKey("group.streams.task.offset.interval.ms", ConfigType.INT, 1,
                                                  "group.streams.min.task.offset.interval.ms", internal=True),
    "streams.num.warmup.replicas": StreamsKey("group.streams.num.warmup.replicas", ConfigType.INT, 0,
                                              None, "group.streams.max.warmup.replicas", internal=True),
    "streams.acceptable.recovery.lag": StreamsKey("group.streams.acceptable.recovery.lag", ConfigType.LONG, 0,
                                                  internal=True),
}
GROUP_KEYS = frozenset(KEYS)


def broker_text(name: str, broker: BrokerConfig) -> str:
    """The broker default of a streams.* key as Kafka prints it (lists comma-joined; the assignor
    name is the first of group.streams.assignors)."""
    value = broker.get(KEYS[name].broker_key)
    if isinstance(value, list):
        return str(value[0]) if name == "streams.assignor.name" else ",".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def check_value(name: str, value: str, broker: BrokerConfig) -> str:
    """Kafka's GroupConfig.validate for one key: INVALID_CONFIG with Kafka's message; the value as kept."""
    key = KEYS.get(name)
    if key is None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")

    def bad(why: str) -> KafkaError:
        return KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: {why}")

    if key.type is ConfigType.BOOLEAN:
        if value.strip().lower() not in ("true", "false"):
            raise bad("Expected value to be either true or false")
        return value.strip().lower()
    if key.type is ConfigType.STRING:
        assignors = [str(a) for a in broker.get("group.streams.assignors")]
        if value not in assignors:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} '{value}' is not a registered task assignor. "
                                                       f"Registered assignors are: [{', '.join(assignors)}].")
        return value
    if key.type is ConfigType.LIST:
        return ",".join(t.strip() for t in value.split(",") if t.strip())
    try:
        n = int(value.strip())
    except ValueError:
        raise bad(f"Not a number of type {key.type.name}") from None
    if key.floor is not None and n < key.floor:
        raise bad(f"Value must be at least {key.floor}")
    low = None if key.low is None else int(broker.get(key.low))
    high = None if key.high is None else int(broker.get(key.high))
    if low is not None and high is not None and not low <= n <= high:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} must be in the range {low} to {high} inclusive.")
    if low is not None and high is None and n < low:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} must be greater than or equal to {low}")
    if high is not None and low is None and n > high:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} must be less than or equal to {high}")
    return str(n)


class StreamsGroupConfigs:
    """The streams.* GROUP configs of every group (group id -> key -> text), persisted; `configs`
    is shared with the StreamsGroupManager (its `group_configs`)."""

    FILE = "streams_group_configs.json"

    def __init__(self, data_dir: Path | None) -> None:
        self.path = None if data_dir is None else data_dir / self.FILE
        self.configs: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path is not None and self.path.exists():
            self.configs.clear()
            self.configs.update({g: {k: str(v) for k, v in c.items()}
                                 for g, c in json.loads(self.path.read_text()).items()})

    def set(self, group_id: str, configs: dict[str, str]) -> None:
        if configs:
            self.configs[group_id] = dict(configs)
        else:
            self.configs.pop(group_id, None)
        if self.path is not None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.configs, sort_keys=True))
            tmp.replace(self.path)
