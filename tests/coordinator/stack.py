"""The coordinators over a real storage engine in a temporary directory, with a fake clock.

`BrokerServer.build` is the one place that wires them (issue 16); this builds a broker with a
`ManualClock`, loads its logs and starts its coordinators, without a server, a socket or the
periodic tasks. `reopen()` shuts the logs down and builds a new one over the same directory, as a
broker restart does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minibroker.config import BrokerConfig
from minibroker.server import BrokerServer
from minibroker_storage.clock import ManualClock

DEFAULTS: dict[str, Any] = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 7,
                            "transaction.state.log.num.partitions": 5}


class Stack:
    def __init__(self, data_dir: Path, overrides: dict[str, Any] | None = None,
                 clock: ManualClock | None = None) -> None:
        self.data_dir = data_dir
        self.overrides = {**DEFAULTS, **(overrides or {})}
        self.clock = clock or ManualClock()
        self.config = BrokerConfig.load(None, [f"{k}={v}" for k, v in self.overrides.items()],
                                        host="127.0.0.1", port=0, data_dir=str(data_dir))
        self.broker = BrokerServer(self.config, clock=self.clock)
        self.broker.build()
        self.log_manager = self.broker.log_manager
        self.topics = self.broker.topics
        self.replica_manager = self.broker.replica_manager
        self.groups = self.broker.group_coordinator
        self.offsets = self.groups.store
        self.producer_ids = self.broker.producer_ids
        self.txns = self.broker.txn_coordinator
        self.txn_log = self.txns.store

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
