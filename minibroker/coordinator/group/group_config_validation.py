"""A GROUP config resource checked whole, as a KRaft controller checks it before writing its
ConfigRecords (Kafka: ControllerConfigurationValidator's GROUP case -> GroupConfigManager.validate).

The keys are the three kinds' (consumer.*: consumer_group_configs, share.* and
errors.deadletterqueue.*: share/share_group_configs, streams.*: streams_group_configs); each value is
checked with its kind's rules and Kafka's messages (the single broker's handlers use the same
functions), the bounds read from the controller's own properties as Kafka's controller reads its
KafkaConfig. Every name is checked before any value, as GroupConfig.validate does.
"""

from __future__ import annotations

from collections.abc import Mapping

from minibroker.config import BrokerConfig
from minibroker.coordinator.group import consumer_group_configs as cgc
from minibroker.coordinator.group import streams_group_configs as sgc
from minibroker.coordinator.share import share_group_configs as shc
from minibroker_protocol.errors import ErrorCode, KafkaError

GROUP_KEYS = cgc.GROUP_KEYS | sgc.GROUP_KEYS | frozenset(shc.GROUP_KEYS)


def validate_group_configs(configs: Mapping[str, str], broker: BrokerConfig) -> None:
    """INVALID_CONFIG with Kafka's message for the first unknown name, else the first bad value."""
    for name in configs:
        if name not in GROUP_KEYS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
    for name, value in configs.items():
        if name in cgc.GROUP_KEYS:
            cgc.ConsumerGroupConfigs.validate(name, value, broker)
        elif name in sgc.GROUP_KEYS:
            sgc.check_value(name, value, broker)
        else:
            shc.validate_group_config(name, value, broker)


def validate_group_name(name: str) -> None:
    """The cluster-wide default group resource ("") is not one Kafka accepts."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
