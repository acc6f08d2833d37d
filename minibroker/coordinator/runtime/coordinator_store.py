"""One coordinator's internal topic: created on first use, keys mapped to partitions, records
written through the partition writer and read back through the loader.

Theory of operation: the three coordinators keep their state in the same way (Kafka's
CoordinatorRuntime over __consumer_offsets, __transaction_state and __share_group_state), so one
class serves them, built with the topic's name, its configured partition count and the configs
Kafka creates it with. A key (group id, transactional id, "group:topicId:partition") lives in
partition Utils.abs(key.hashCode()) % partitions, with Java's String.hashCode over UTF-16 code
units, so other tools (and Kafka itself, reading a data directory we wrote) find it in the same
partition. The topic is created on first use (FindCoordinator, the first write), compacted; once
it exists its partition count is what the mapping uses (Kafka fixes it at creation too).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import TypeAlias

from minibroker.config import ConfigValue
from minibroker.coordinator.runtime.coordinator_loader import CoordinatorLoader, LoadedRecord
from minibroker.coordinator.runtime.partition_writer import CoordinatorPartitionWriter, CoordinatorRecord
from minibroker.topics import Topic
from minibroker_protocol.errors import ErrorCode
from minibroker_storage.clock import Clock, wall_clock_ms

# The configs an internal topic is created with, as Kafka states them (cleanup.policy a list,
# sizes ints, flags bools; e.g. GroupCoordinatorService.groupMetadataTopicConfigs).
TopicConfigs: TypeAlias = dict[str, ConfigValue]


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: h = 31*h + c over UTF-16 code units, in int32 arithmetic."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka: Utils.abs(key.hashCode()) % numPartitions (Utils.abs maps MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


class CoordinatorStore:
    """An internal topic of one coordinator: its topic, its key -> partition mapping, appends and loads."""

    def __init__(self, name: str, num_partitions: int, overrides: TopicConfigs, writer: CoordinatorPartitionWriter,
                 loader: CoordinatorLoader, *, now_ms: Clock = wall_clock_ms,
                 ownership: Callable[[str, int], int] | None = None,
                 partition_count: Callable[[str], int | None] | None = None) -> None:
        self.name = name
        self.num_partitions = num_partitions
        self.overrides = overrides  # the topic configs it is created with
        self.writer = writer
        self.loader = loader
        self.topics = writer.topics
        self.now_ms = now_ms
        # producer id -> records of transactions without a marker at the end of the last load
        self.open_transactions: dict[int, list[LoadedRecord]] = {}
        # (topic, partition) -> NONE / NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (the runtime's)
        self.ownership = ownership
        # the topic's partition count in the cluster's metadata (Kafka: the IntSupplier the
        # coordinators start with, metadataCache.numPartitions(topic) else the config); None
        # without metadata (tests' stacks): then the partitions on disk here, all of them on one node
        self.partition_count = partition_count

    # -- the topic ---------------------------------------------------------------------------
    def topic(self) -> Topic | None:
        """The topic's partitions this broker holds (all of them on one node), or None."""
        topic = self.topics.get(self.name)
        self._count(topic)
        return topic

    def _count(self, topic: Topic | None) -> int:
        # A key's partition is its hash modulo the topic's partitions in the cluster, never the
        # ones this broker holds: a KRaft broker holds only its replicas, and counting those sent
        # a group to a partition led elsewhere (NOT_COORDINATOR for ever, issue 37)
        total = self.partition_count(self.name) if self.partition_count is not None else None
        if total:
            self.num_partitions = total
        elif topic is not None:
            self.num_partitions = len(topic.partitions)
        return self.num_partitions

    def ensure_topic(self) -> Topic:
        """The topic, created (internal, with `overrides`) if it does not exist."""
        topic = self.topic()
        if topic is None:
            topic = self.topics.ensure_internal_topic(self.name, self.num_partitions, self.overrides)
            self._count(topic)
        return topic

    async def ensure_topic_async(self) -> Topic:
        """ensure_topic with the partition directories made off the event loop (FindCoordinator
        is where Kafka creates the topic; 50 partitions of fsyncs would stall the loop)."""
        topic = self.topic()
        if topic is None:
            # The creation must outlive the request that started it: a client that closes its
            # connection mid-FindCoordinator would otherwise leave half-made partition
            # directories for the next creation to trip over (a second topic id).
            topic = await asyncio.shield(self.topics.ensure_internal_topic_async(
                self.name, self.num_partitions, self.overrides))
            self._count(topic)
        return topic

    def partition_for(self, key: str) -> int:
        self.topic()
        return partition_for(key, self.num_partitions)

    def partitions(self) -> list[int]:
        """The partitions of the topic on disk that this broker leads, in order (none before it is
        created; on one node every partition on disk): those a coordinator's start loads."""
        topic = self.topic()
        return [] if topic is None else [p for p in sorted(topic.partitions) if self.writer.leads(self.name, p)]

    def coordinator_error(self, key: str) -> int:
        """Whether this broker coordinates `key` now: NONE, NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS (CoordinatorRuntime.coordinator_error). NONE before the
        topic exists anywhere (a single broker creates it on the first write)."""
        if self.ownership is None:
            return ErrorCode.NONE
        topic = self.topics.get(self.name)
        if topic is None and not (self.partition_count is not None and self.partition_count(self.name)):
            return ErrorCode.NONE  # the topic does not exist anywhere yet
        return self.ownership(self.name, partition_for(key, self._count(topic)))

    async def wait_replicated(self, key: str, timeout_ms: int) -> int:
        """Until the high watermark of `key`'s partition passed everything appended to it so far
        (the coordinator's write is committed: acks=all against the topic's min.insync.replicas):
        NONE, or the produce error (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
        REQUEST_TIMED_OUT) for the coordinator to map to its API's error."""
        topic = self.topic()
        if topic is None:
            return ErrorCode.NONE
        return await self.writer.wait_replicated(self.name, partition_for(key, self._count(topic)), timeout_ms)

    # -- writing -----------------------------------------------------------------------------
    def append(self, key: str, records: list[CoordinatorRecord], *, producer_id: int = -1,
               producer_epoch: int = -1, timestamp: int | None = None) -> int:
        """Append the records in one batch to `key`'s partition; returns the first offset."""
        partition = partition_for(key, self._count(self.ensure_topic()))
        return self.writer.append(self.name, partition, records, producer_id=producer_id, producer_epoch=producer_epoch,
                                  timestamp=self.now_ms() if timestamp is None else timestamp)

    # -- loading -----------------------------------------------------------------------------
    def load_partition(self, partition: int, open_transactions: dict[int, list[LoadedRecord]] | None = None
                       ) -> Iterator[LoadedRecord]:
        """Every committed record of one partition, in log order; the records of transactions
        still open at its end are added to `open_transactions` (this store's, if not given)."""
        yield from self.loader.read(self.name, partition,
                                    self.open_transactions if open_transactions is None else open_transactions)

    def load(self) -> Iterator[LoadedRecord]:
        """Every committed record of every partition, in partition then log order (a restart
        of a broker leading them all). `open_transactions` is reset first."""
        self.open_transactions = {}
        for partition in self.partitions():
            yield from self.load_partition(partition)
