"""streams.* keys of GROUP config resources (KIP-1071; Kafka's GroupConfig), for handlers/configs.py's
GROUP_CONFIG_PROVIDERS. The store is the Coordinators' `streams_group_configs`
(coordinator/group/streams_group_configs.py); the streams group coordinator reads it."""

from __future__ import annotations

from minibroker.config import ConfigEntry, ConfigSource, OpType
from minibroker.coordinator.group import streams_group_configs as sgc
from minibroker.services import BrokerServices
from minibroker_protocol.errors import ErrorCode, KafkaError


class _StreamsGroupConfigs:
    def group_keys(self) -> frozenset[str]:
        return sgc.GROUP_KEYS

    def describe_group(self, services: BrokerServices, group: str) -> list[ConfigEntry]:
        own = services.coordinators.streams_group_configs.configs.get(group, {})
        out = []
        for name in sorted(sgc.KEYS):
            key = sgc.KEYS[name]
            if key.internal and name not in own:
                continue  # Kafka lists its internal streams keys only when the group sets them
            default = sgc.broker_text(name, services.config)
            # synonyms as Kafka lists them: the group's own value, then the broker default it overrides
            synonyms: list[tuple[str, str | None, int]] = [(key.broker_key, default, int(ConfigSource.DEFAULT_CONFIG))]
            if name in own:
                synonyms.insert(0, (name, own[name], int(ConfigSource.GROUP_CONFIG)))
            out.append(ConfigEntry(name=name, value=own.get(name, default),
                                   source=ConfigSource.GROUP_CONFIG if name in own else ConfigSource.DEFAULT_CONFIG,
                                   is_default=name not in own, read_only=False, sensitive=False,
                                   synonyms=synonyms, type=key.type))
        return out

    def alter_group(self, services: BrokerServices, group: str, ops: list[tuple[str, int, str | None]],
                    replace: bool, validate_only: bool) -> None:
        store = services.coordinators.streams_group_configs
        configs = {} if replace else dict(store.configs.get(group, {}))
        for name, op, value in ops:
            if OpType(op) is OpType.SET:
                if value is not None:
                    configs[name] = sgc.check_value(name, value, services.config)
            elif OpType(op) is OpType.DELETE:
                configs.pop(name, None)
            else:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value append is not allowed for config key: {name}")
        if not validate_only:
            store.set(group, configs)


GROUP_CONFIGS = _StreamsGroupConfigs()
