"""GROUP config resources of consumer groups (KIP-848): `consumer.session.timeout.ms` and
`consumer.heartbeat.interval.ms` per group (Kafka: GroupConfig, GroupConfigManager).

Theory of operation. DescribeConfigs / IncrementalAlterConfigs on a resource of type GROUP (32)
reach `ConsumerGroupConfigs` through the GROUP config registry of handlers/configs.py (the share
groups register their `share.*` keys there too). A value is checked against the broker's bounds
(`group.consumer.{min,max}.{session.timeout,heartbeat.interval,assignment.interval}.ms`, as Kafka's
GroupConfig.validate does; `consumer.assignment.interval.ms` is accepted and shown without effect), written to `consumer_group_configs.json` in the data directory (Kafka keeps them in the
cluster metadata as ConfigRecords; one file survives a restart alike) and handed to the
ConsumerGroupManager, which uses them from the members' next heartbeat on.
"""

from __future__ import annotations

import json
from pathlib import Path

from minibroker.config import BrokerConfig
from minibroker_protocol.errors import ErrorCode, KafkaError

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
# accepted and shown as Kafka 4.4 does, without effect: targets are computed at once here
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
# each key -> (broker default, broker minimum, broker maximum, the type's own floor)
BROKER_KEYS = {
    SESSION_TIMEOUT: ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                      "group.consumer.max.session.timeout.ms", 1),
    HEARTBEAT_INTERVAL: ("group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
                         "group.consumer.max.heartbeat.interval.ms", 1),
    ASSIGNMENT_INTERVAL: ("group.consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms",
                          "group.consumer.max.assignment.interval.ms", 0),
}
GROUP_KEYS = frozenset(BROKER_KEYS)


class ConsumerGroupConfigs:
    """The consumer.* GROUP configs of every group, persisted; `configs` is shared with the
    ConsumerGroupManager (its `group_configs`)."""

    FILE = "consumer_group_configs.json"

    def __init__(self, data_dir: Path | None, configs: dict[str, dict[str, int]]) -> None:
        self.path = None if data_dir is None else data_dir / self.FILE
        self.configs = configs

    def load(self) -> None:
        if self.path is not None and self.path.exists():
            self.configs.clear()
            self.configs.update({g: {k: int(v) for k, v in c.items()}
                                 for g, c in json.loads(self.path.read_text()).items()})

    def value(self, group_id: str, name: str, broker: BrokerConfig) -> int:
        own = self.configs.get(group_id, {})
        return own[name] if name in own else int(broker.get(BROKER_KEYS[name][0]))

    @staticmethod
    def validate(name: str, value: str, broker: BrokerConfig) -> int:
        """Kafka's GroupConfig.validate for one key: INVALID_CONFIG with Kafka's message."""
        if name not in BROKER_KEYS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
        try:
            n = int(value)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
        _, low_key, high_key, floor = BROKER_KEYS[name]
        if n < floor:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Invalid value {value} for configuration {name}: Value must be at least {floor}")
        low, high = int(broker.get(low_key)), int(broker.get(high_key))
        if not low <= n <= high:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} must be in the range {low} to {high} inclusive.")
        return n

    def set(self, group_id: str, configs: dict[str, int]) -> None:
        if configs:
            self.configs[group_id] = dict(configs)
        else:
            self.configs.pop(group_id, None)
        if self.path is not None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.configs, sort_keys=True))
            tmp.replace(self.path)
