"""The coordinators' runtime: the internal-topic partitions this broker coordinates (Kafka:
CoordinatorRuntime, CoordinatorLoaderImpl, CoordinatorPartitionWriter, and its timer).

Theory of operation. A coordinator (group, transaction, share state) is a state machine over the
partitions of its internal topic; the broker that leads a partition coordinates the keys it holds
(groups, transactional ids, share partitions). The runtime owns what the three have in common:

- one `CoordinatorPartitionWriter`, the only path from a coordinator to `ReplicaManager.append`;
- one `CoordinatorLoader`, which replays a partition's log;
- a `CoordinatorStore` per internal topic (its configs, the key -> partition mapping, create on
  first use, append and load), built by `store()`;
- the leadership hooks: `on_become_leader(topic, partition)` replays that partition into its
  coordinator (`CoordinatorShard.load_partition`), `on_resign(topic, partition)` drops that
  state (`unload_partition`). On one node this broker leads every partition, so a coordinator's
  start is `become_leader_of_all`: every partition on disk is loaded, as before; the cluster
  issue calls the hooks when leadership moves.

Requests for keys of a partition being loaded or not led here keep the answers they have
(COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR): a request never sees a coordinator half loaded,
because a load runs to its end on one turn of the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from minibroker.coordinator.runtime.coordinator_loader import CoordinatorLoader
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore, TopicConfigs
from minibroker.coordinator.runtime.partition_writer import CoordinatorPartitionWriter
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from storage.clock import Clock, wall_clock_ms

log = logging.getLogger("minibroker.coordinator.runtime")


class CoordinatorShard(Protocol):
    """A coordinator's state, loaded and unloaded partition by partition (Kafka: CoordinatorShard)."""

    def load_partition(self, partition: int) -> None: ...

    def unload_partition(self, partition: int) -> None: ...


class CoordinatorRuntime:
    """The internal topics' stores and the partitions each coordinator has loaded."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, *, now_ms: Clock = wall_clock_ms) -> None:
        self.topics = topics
        self.now_ms = now_ms
        self.writer = CoordinatorPartitionWriter(topics, replica_manager)
        self.loader = CoordinatorLoader(topics)
        self._shards: dict[str, CoordinatorShard] = {}
        self._loaded: dict[str, set[int]] = {}

    def store(self, name: str, num_partitions: int, overrides: TopicConfigs) -> CoordinatorStore:
        """The store of internal topic `name` (created on first use with `num_partitions` and `overrides`)."""
        return CoordinatorStore(name, num_partitions, overrides, self.writer, self.loader, now_ms=self.now_ms)

    def register(self, topic: str, shard: CoordinatorShard, *, loaded: Iterable[int] = ()) -> None:
        """`shard` coordinates the partitions of `topic` this broker leads; `loaded`: those its
        start already replayed (on one node, every partition on disk)."""
        self._shards[topic] = shard
        self._loaded.setdefault(topic, set()).update(loaded)

    # -- leadership ------------------------------------------------------------------------
    def on_become_leader(self, topic: str, partition: int) -> None:
        """This broker now leads `topic`-`partition`: replay it into its coordinator."""
        shard = self._shards.get(topic)
        loaded = self._loaded.setdefault(topic, set())
        if shard is None or partition in loaded:
            return
        shard.load_partition(partition)
        loaded.add(partition)

    def on_resign(self, topic: str, partition: int) -> None:
        """This broker no longer leads `topic`-`partition`: its coordinator forgets that state."""
        shard = self._shards.get(topic)
        loaded = self._loaded.get(topic, set())
        if shard is None or partition not in loaded:
            return
        loaded.discard(partition)
        shard.unload_partition(partition)

    def become_leader_of_all(self, topic: str) -> None:
        """One node leads every partition: load each one of `topic` on disk (a coordinator's start)."""
        t = self.topics.get(topic)
        for partition in sorted(t.partitions) if t is not None else ():
            self.on_become_leader(topic, partition)

    def is_loaded(self, topic: str, partition: int) -> bool:
        return partition in self._loaded.get(topic, set())
