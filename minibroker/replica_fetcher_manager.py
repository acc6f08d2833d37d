"""The follower fetchers of this broker, one per leader broker (Kafka: ReplicaFetcherManager on
AbstractFetcherManager, with num.replica.fetchers = 1).

The ReplicaManager's `apply_delta` adds the partitions this broker now follows (with the
leader's endpoint) and removes those it leads, no longer holds, or follows elsewhere; a fetcher
left with no partition is shut down (Kafka: shutdownIdleFetcherThreads), and a leader whose
endpoint changed gets a new one. `pause` / `resume` stop and restart every fetcher, or the one
of a leader: the test seam for a follower that falls behind (a process's SIGSTOP does the same
to a whole broker).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping

from minibroker.partition import Partition
from minibroker.quotas.replication_quota import ReplicationQuotas
from minibroker.replica import BrokerEndpoint
from minibroker.replica_fetcher import (
    FetcherConfig,
    FetchFaultHook,
    PartitionFetchState,
    ReplicaFetcherThread,
)

logger = logging.getLogger("minibroker.replica_fetcher")
TopicPartition = tuple[str, int]


class ReplicaFetcherManager:
    def __init__(self, node_id: int, *, broker_epoch: Callable[[], int], on_append: Callable[[Partition], None],
                 config: FetcherConfig | None = None, quotas: ReplicationQuotas | None = None) -> None:
        self.node_id = node_id
        self.quotas = quotas  # KIP-73's follower throttle, shared by every fetcher
        self.config = config or FetcherConfig()
        self._broker_epoch = broker_epoch
        self._on_append = on_append
        self.fetchers: dict[int, ReplicaFetcherThread] = {}  # by leader broker id
        self._closing: set[asyncio.Task[None]] = set()
        self.fetch_fault: FetchFaultHook | None = None  # set while a replica.fetch.cut is (minibroker.faults)

    def add_fetcher_for_partitions(self, partitions: Mapping[TopicPartition, tuple[Partition, BrokerEndpoint]]) -> None:
        """Fetch each partition from its leader, from the log end offset on (Kafka:
        addFetcherForPartitions; the divergence check of the first fetch truncates if needed)."""
        for tp, (part, leader) in partitions.items():
            fetcher = self.fetchers.get(leader.node_id)
            if fetcher is not None and (fetcher.source.host, fetcher.source.port) != (leader.host, leader.port):
                self._shutdown(self.fetchers.pop(leader.node_id))
                fetcher = None
            if fetcher is None:
                fetcher = self.fetchers[leader.node_id] = ReplicaFetcherThread(
                    self.node_id, leader, broker_epoch=self._broker_epoch, on_append=self._on_append,
                    config=self.config, fault=lambda: self.fetch_fault, quotas=self.quotas)
                fetcher.start()
            fetcher.add_partitions({tp: PartitionFetchState(part, part.leader_epoch)})
            logger.info("broker %d follows %s-%d from leader %d (epoch %d) at offset %d", self.node_id, tp[0], tp[1],
                        leader.node_id, part.leader_epoch, part.log_end_offset)

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition]) -> None:
        tps = list(tps)
        if not tps:
            return
        for leader_id, fetcher in list(self.fetchers.items()):
            fetcher.remove_partitions(tps)
            if not fetcher.partitions:
                self._shutdown(self.fetchers.pop(leader_id))

    def _shutdown(self, fetcher: ReplicaFetcherThread) -> None:
        task = asyncio.get_running_loop().create_task(fetcher.shutdown())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def fetcher_for(self, topic: str, partition: int) -> ReplicaFetcherThread | None:
        return next((f for f in self.fetchers.values() if (topic, partition) in f.partitions), None)

    async def pause(self, leader_id: int | None = None) -> None:
        """Pause the fetchers (of one leader); returns when their rounds in flight are done."""
        for lid, f in list(self.fetchers.items()):
            if leader_id is None or lid == leader_id:
                await f.pause()

    def resume(self, leader_id: int | None = None) -> None:
        for lid, f in self.fetchers.items():
            if leader_id is None or lid == leader_id:
                f.resume()

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for f in fetchers:
            await f.shutdown()
        for task in list(self._closing):
            await task
