"""The coordinators' runtime: the internal-topic partitions this broker coordinates (Kafka:
CoordinatorRuntime, CoordinatorLoaderImpl, CoordinatorPartitionWriter, and its timer).

Theory of operation. A coordinator (group, transaction, share state) is a state machine over the
partitions of its internal topic; the broker that leads a partition coordinates the keys it holds
(groups, transactional ids, share partitions). The runtime owns what the three have in common:

- one `CoordinatorPartitionWriter`, the only path from a coordinator to `ReplicaManager.append`;
- one `CoordinatorLoader`, which replays a partition's log;
- a `CoordinatorStore` per internal topic (its configs, the key -> partition mapping, create on
  first use, append and load), built by `store()`;
- the leadership hooks: `on_election(topic, partition, epoch)` (from ReplicaManager.apply_delta
  through minibroker.coordinator_elections) schedules the replay of that partition into its
  coordinator (`CoordinatorShard.load_partition`), `on_resignation(topic, partition, epoch)`
  drops that state (`unload_partition`); both ignore a stale epoch, as Kafka's runtime does. A
  coordinator's start loads the partitions on disk this broker leads (on one node: all of them).
- `coordinator_error(topic, partition)`: whether a request for a key of that partition is served
  here (NONE), sent elsewhere (NOT_COORDINATOR: not the leader, or not loaded) or asked to retry
  (COORDINATOR_LOAD_IN_PROGRESS: elected, the load not run yet). A request never sees a
  coordinator half loaded, because a load runs to its end on one turn of the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from minibroker.coordinator.runtime.coordinator_loader import CoordinatorLoader
from minibroker.coordinator.runtime.coordinator_store import CoordinatorStore, TopicConfigs
from minibroker.coordinator.runtime.partition_writer import CoordinatorPartitionWriter
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from minibroker_protocol.errors import ErrorCode
from minibroker_storage.clock import Clock, wall_clock_ms

log = logging.getLogger("minibroker.coordinator.runtime")


class CoordinatorShard(Protocol):
    """A coordinator's state, loaded and unloaded partition by partition (Kafka: CoordinatorShard)."""

    def load_partition(self, partition: int) -> None: ...

    def unload_partition(self, partition: int) -> None: ...


class CoordinatorRuntime:
    """The internal topics' stores and the partitions each coordinator has loaded."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, *, now_ms: Clock = wall_clock_ms) -> None:
        self.topics = topics
        self.replica_manager = replica_manager
        self.now_ms = now_ms
        self.writer = CoordinatorPartitionWriter(topics, replica_manager)
        self.loader = CoordinatorLoader(topics)
        self._shards: dict[str, CoordinatorShard] = {}
        self._loaded: dict[str, set[int]] = {}
        # (topic, partition) -> the leader epoch of its last election here (Kafka: the runtime's
        # epoch per coordinator context); stale elections and resignations are ignored
        self._epochs: dict[tuple[str, int], int] = {}
        self._loading: set[tuple[str, int]] = set()  # elected, load scheduled: COORDINATOR_LOAD_IN_PROGRESS
        # an internal topic's partition count in the cluster's metadata (set by the broker's
        # Coordinators; None in tests' stacks without metadata): the stores map keys with it
        self.partition_count: Callable[[str], int | None] | None = None

    def store(self, name: str, num_partitions: int, overrides: TopicConfigs) -> CoordinatorStore:
        """The store of internal topic `name` (created on first use with `num_partitions` and `overrides`)."""
        return CoordinatorStore(name, num_partitions, overrides, self.writer, self.loader, now_ms=self.now_ms,
                                ownership=self.coordinator_error, partition_count=self.partition_count)

    def register(self, topic: str, shard: CoordinatorShard, *, loaded: Iterable[int] = ()) -> None:
        """`shard` coordinates the partitions of `topic` this broker leads; `loaded`: those its
        start already replayed (the partitions on disk this broker leads)."""
        self._shards[topic] = shard
        self._loaded.setdefault(topic, set()).update(loaded)

    # -- leadership ------------------------------------------------------------------------
    def on_become_leader(self, topic: str, partition: int) -> None:
        """This broker now leads `topic`-`partition`: replay it into its coordinator."""
        self._loading.discard((topic, partition))
        shard = self._shards.get(topic)
        loaded = self._loaded.setdefault(topic, set())
        if shard is None or partition in loaded:
            return
        shard.load_partition(partition)
        loaded.add(partition)

    def on_resign(self, topic: str, partition: int) -> None:
        """This broker no longer leads `topic`-`partition`: its coordinator forgets that state."""
        self._loading.discard((topic, partition))
        shard = self._shards.get(topic)
        loaded = self._loaded.get(topic, set())
        if shard is None or partition not in loaded:
            return
        loaded.discard(partition)
        shard.unload_partition(partition)

    def on_election(self, topic: str, partition: int, leader_epoch: int) -> None:
        """The metadata made this broker the leader of `topic`-`partition` at `leader_epoch`
        (Kafka: CoordinatorRuntime.scheduleLoadOperation): its state is loaded on the next turn
        of the loop, requests for its keys answered COORDINATOR_LOAD_IN_PROGRESS meanwhile (Kafka
        loads on its own threads; here a load runs to its end in one turn, so nothing sees a
        half-loaded coordinator). An election older than the one in force is ignored; one of a
        new epoch after a resignation loads again."""
        tp = (topic, partition)
        current = self._epochs.get(tp)
        if current is not None and leader_epoch < current:
            return
        self._epochs[tp] = leader_epoch
        if partition in self._loaded.get(topic, set()) or tp in self._loading:
            return
        self._loading.add(tp)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._load_if_still_elected(topic, partition, leader_epoch)
            return
        loop.call_soon(self._load_if_still_elected, topic, partition, leader_epoch)

    def _load_if_still_elected(self, topic: str, partition: int, leader_epoch: int) -> None:
        tp = (topic, partition)
        if tp not in self._loading or self._epochs.get(tp) != leader_epoch:
            return  # resigned (or elected again) before the load ran
        try:
            self.on_become_leader(topic, partition)
        except Exception:
            log.exception("loading %s-%d failed", topic, partition)

    def on_resignation(self, topic: str, partition: int, leader_epoch: int | None) -> None:
        """This broker no longer leads `topic`-`partition` (Kafka: scheduleUnloadOperation): its
        state is unloaded at once, unless `leader_epoch` is older than the election in force (a
        delayed resignation). `None`: the topic was deleted."""
        tp = (topic, partition)
        current = self._epochs.get(tp)
        if leader_epoch is not None and current is not None and leader_epoch < current:
            return
        if leader_epoch is not None:
            self._epochs[tp] = leader_epoch
        else:
            self._epochs.pop(tp, None)
        self.on_resign(topic, partition)

    def become_leader_of_all(self, topic: str) -> None:
        """One node leads every partition: load each one of `topic` on disk (a coordinator's start)."""
        t = self.topics.get(topic)
        for partition in sorted(t.partitions) if t is not None else ():
            self.on_become_leader(topic, partition)

    def is_loaded(self, topic: str, partition: int) -> bool:
        return partition in self._loaded.get(topic, set())

    def coordinator_error(self, topic: str, partition: int) -> int:
        """Whether this broker coordinates the keys of `topic`-`partition` now (Kafka: the
        runtime's context lookup, NOT_COORDINATOR when the shard is absent): NONE, or
        NOT_COORDINATOR (not its leader: the client finds the coordinator again), or
        COORDINATOR_LOAD_IN_PROGRESS (elected, not loaded yet: the client retries here)."""
        part = self.replica_manager.get_partition(topic, partition)
        if part is None:
            # a single broker keeps every partition it has on disk; a KRaft broker has a
            # partition object for every replica it holds, and leads none without one
            return ErrorCode.NOT_COORDINATOR if self.topics.remote_creator is not None else ErrorCode.NONE
        if not part.is_leader:
            return ErrorCode.NOT_COORDINATOR
        if (topic, partition) in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if part.from_metadata and topic in self._shards and partition not in self._loaded.get(topic, set()):
            return ErrorCode.NOT_COORDINATOR  # led, but no election reached the coordinator (yet)
        return ErrorCode.NONE
