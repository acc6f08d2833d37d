"""The broker settings of the classic group coordinator (Kafka: GroupCoordinatorConfig's classic
group and offsets keys), read once when the coordinator is built."""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.config import BrokerConfig


@dataclass
class GroupConfig:
    """The broker settings the coordinator uses; defaults are Kafka's."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    # Kafka: GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (not a broker key).
    new_member_join_timeout_ms: int = 5 * 60 * 1000
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> GroupConfig:
        return cls(
            initial_rebalance_delay_ms=cfg.get("group.initial.rebalance.delay.ms"),
            min_session_timeout_ms=cfg.get("group.min.session.timeout.ms"),
            max_session_timeout_ms=cfg.get("group.max.session.timeout.ms"),
            max_size=cfg.get("group.max.size"),
            offsets_retention_ms=cfg.get("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=cfg.get("offsets.retention.check.interval.ms"),
            offset_metadata_max_bytes=cfg.get("offset.metadata.max.bytes"),
        )
