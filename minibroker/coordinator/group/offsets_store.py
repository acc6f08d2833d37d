"""__consumer_offsets: where the group coordinator's records live.

Theory of operation: the coordinator's records (coordinator/records.py) are appended to the
partition that owns the group, as RecordBatch v2 batches through the same storage engine as
any topic (Log.append_as_leader with the coordinator origin), so the files on disk are what
Kafka's coordinator writes and `kafka-dump-log.sh --offsets-decoder` can read them. Every append
goes through `ReplicaManager.append` (flush policy, then wake the fetches parked on the
partition), the one append path of the broker. The topic is created on first use, compacted,
with offsets.topic.num.partitions partitions and offsets.topic.segment.bytes segments; once it
exists its partition count is what the mapping uses (Kafka fixes it at creation too).

Loading reads every partition from its log start to its end and yields the records in log
order. Records of transactional batches (TxnOffsetCommit, KIP-98) are held per producer until
their commit marker, and dropped on an abort marker, the way Kafka's loader treats them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

from minibroker.coordinator.group.records import partition_for
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import Topic, TopicRegistry
from protocol.records.v2 import Record, build_batch, decode_batches, parse_control_record
from storage.clock import Clock, wall_clock_ms
from storage.log import AppendOrigin, Log

log = logging.getLogger("minibroker.coordinator.store")

TOPIC = "__consumer_offsets"
LOAD_READ_BYTES = 5 * 1024 * 1024  # Kafka: offsets.load.buffer.size


CoordinatorRecord = tuple[bytes, "bytes | None"]


class OffsetsStore:
    """Appends the group coordinator's records to __consumer_offsets and reads them back."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager, num_partitions: int,
                 segment_bytes: int, *, now_ms: Clock = wall_clock_ms) -> None:
        self.topics = topics
        self.replica_manager = replica_manager
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.now_ms = now_ms
        # producer id -> records of transactions without a marker at the end of the last load
        self.open_transactions: dict[int, list[CoordinatorRecord]] = {}

    # -- the topic ---------------------------------------------------------------------------
    def _topic_overrides(self) -> dict[str, Any]:
        return {"cleanup.policy": ["compact"], "segment.bytes": self.segment_bytes, "compression.type": "producer"}

    def ensure_topic(self) -> Topic:
        """The __consumer_offsets topic, created (compacted, internal) if it does not exist."""
        topic = self.topics.get(TOPIC)
        if topic is None:
            topic = self.topics.ensure_internal_topic(TOPIC, self.num_partitions, self._topic_overrides())
        self.num_partitions = len(topic.partitions)
        return topic

    async def ensure_topic_async(self) -> Topic:
        """ensure_topic with the partition directories made off the event loop (FindCoordinator
        is where Kafka creates the topic; 50 partitions of fsyncs would stall the loop)."""
        topic = self.topics.get(TOPIC)
        if topic is None:
            # The creation must outlive the request that started it: a consumer that closes its
            # connection mid-FindCoordinator would otherwise leave half-made partition
            # directories for the next creation to trip over (a second topic id).
            topic = await asyncio.shield(self.topics.ensure_internal_topic_async(
                TOPIC, self.num_partitions, self._topic_overrides()))
        self.num_partitions = len(topic.partitions)
        return topic

    def partition_for(self, group_id: str) -> int:
        topic = self.topics.get(TOPIC)
        if topic is not None:
            self.num_partitions = len(topic.partitions)
        return partition_for(group_id, self.num_partitions)

    # -- writing -----------------------------------------------------------------------------
    def append(self, group_id: str, records: list[CoordinatorRecord], *, producer_id: int = -1,
               producer_epoch: int = -1) -> int:
        """Append the records in one batch to the group's partition; returns the first offset.
        With a producer id the batch is transactional (TxnOffsetCommit): it counts once the
        transaction's COMMIT marker follows it."""
        topic = self.ensure_topic()
        partition = partition_for(group_id, len(topic.partitions))
        lg = topic.partitions[partition]
        txn = producer_id >= 0
        batch = build_batch([Record(offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(records)],
                            base_timestamp=self.now_ms(), producer_id=producer_id, producer_epoch=producer_epoch,
                            base_sequence=0 if txn else -1, is_transactional=txn)
        return self.replica_manager.append(lg, batch, origin=AppendOrigin.COORDINATOR).first_offset

    # -- loading -----------------------------------------------------------------------------
    def load(self) -> Iterator[CoordinatorRecord]:
        """Every committed record of every partition, in log order. The records of transactions
        still open at the end are left in `open_transactions` (producer id -> records)."""
        self.open_transactions = {}
        topic = self.topics.get(TOPIC)
        if topic is None:
            return
        self.num_partitions = len(topic.partitions)
        for partition in sorted(topic.partitions):
            yield from read_partition(topic.partitions[partition], self.open_transactions)


def read_partition(lg: Log, open_txns: dict[int, list[CoordinatorRecord]] | None = None
                   ) -> Iterator[CoordinatorRecord]:
    """The (key, value) records of one coordinator log, committed transactions only; those of
    transactions without a marker yet are added to `open_txns` if given."""
    pending: dict[int, list[CoordinatorRecord]] = {}  # producer id -> open txn records
    offset, end = lg.log_start_offset, lg.log_end_offset
    while offset < end:
        info = lg.read(offset, LOAD_READ_BYTES, max_offset=end)
        if info.region is None:
            break
        buf = info.region.read_all()
        progressed = False
        for batch in decode_batches(buf):
            progressed = True
            offset = batch.next_offset
            if batch.is_control:
                marker = parse_control_record(batch.records[0]) if batch.records else None
                held = pending.pop(batch.producer_id, [])
                if marker is not None and marker.is_commit:
                    yield from held
                continue
            records = [(bytes(r.key), None if r.value is None else bytes(r.value))
                       for r in batch.records if r.key is not None]
            if batch.is_transactional:
                pending.setdefault(batch.producer_id, []).extend(records)
            else:
                yield from records
        if not progressed:
            break
    if pending:
        log.info("%s-%d: %d open transaction(s) at the end of the log", lg.topic, lg.partition, len(pending))
        if open_txns is not None:
            for pid, held in pending.items():
                open_txns.setdefault(pid, []).extend(held)
