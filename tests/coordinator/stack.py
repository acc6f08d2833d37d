"""The coordinators built by hand over a real storage engine in a temporary directory.

What `Broker` start-up wires (issue 16), without a broker: a `LogManager`, the `TopicRegistry`
over it, the `ReplicaManager` every append goes through, the offsets and transaction stores and
the two coordinators, all sharing one `ManualClock`. `reopen()` shuts the logs down and builds a
new stack over the same directory, as a broker restart does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minibroker.config import BrokerConfig, effective_topic_config, to_log_config_props
from minibroker.coordinator.group_coordinator import GroupConfig, GroupCoordinator
from minibroker.coordinator.offsets_store import OffsetsStore
from minibroker.coordinator.transaction_coordinator import TransactionConfig, TransactionCoordinator
from minibroker.coordinator.transaction_log import TransactionLogStore
from minibroker.coordinator.transaction_producer_ids import ProducerIdManager
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from storage.clock import ManualClock
from storage.config import LogConfig
from storage.log_manager import LogManager

DEFAULTS: dict[str, Any] = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 7,
                            "transaction.state.log.num.partitions": 5}


class Stack:
    def __init__(self, data_dir: Path, overrides: dict[str, Any] | None = None,
                 clock: ManualClock | None = None) -> None:
        self.data_dir = data_dir
        self.overrides = {**DEFAULTS, **(overrides or {})}
        self.clock = clock or ManualClock()
        self.config = BrokerConfig.from_props(self.overrides)
        default_log = LogConfig.from_kafka(to_log_config_props(effective_topic_config(self.config, {})))
        self.log_manager = LogManager(data_dir, default_log, now_ms=self.clock, node_id=1)
        self.log_manager.startup()
        self.topics = TopicRegistry(self.log_manager, self.config)
        self.topics.load()
        self.replica_manager = ReplicaManager()
        cfg = self.config
        self.offsets = OffsetsStore(self.topics, self.replica_manager, cfg.get("offsets.topic.num.partitions"),
                                    cfg.get("offsets.topic.segment.bytes"), now_ms=self.clock)
        self.groups = GroupCoordinator(GroupConfig.from_broker_config(cfg), self.offsets, now_ms=self.clock)
        self.topics.on_delete(lambda t: self.groups.on_partitions_deleted(t.name))
        self.producer_ids = ProducerIdManager(data_dir, 1)
        txn_config = TransactionConfig.from_broker_config(cfg)
        self.txn_log = TransactionLogStore(self.topics, self.replica_manager, txn_config.num_partitions,
                                           txn_config.segment_bytes, txn_config.min_isr)
        self.txns = TransactionCoordinator(txn_config, self.txn_log, self.producer_ids, self.topics,
                                           self.replica_manager, self.groups, self.log_manager, now_ms=self.clock)

    async def start(self) -> Stack:
        await self.groups.start()
        await self.txns.start()
        return self

    async def stop(self) -> None:
        await self.txns.stop()
        await self.groups.stop()
        self.log_manager.shutdown()

    async def reopen(self) -> Stack:
        await self.stop()
        return await Stack(self.data_dir, self.overrides, self.clock).start()
