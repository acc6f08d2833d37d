"""The one writer of the coordinators' internal topics (Kafka: CoordinatorPartitionWriter).

Theory of operation. The group, share and transaction coordinators keep their state in internal,
compacted topics (__consumer_offsets, __share_group_state, __transaction_state); every record
they write goes through `append` here, as one RecordBatch v2 per call, into
`ReplicaManager.append` with the coordinator origin (flush policy, then the fetches parked on the
partition woken), the broker's one append path. This is the single place a coordinator calls
the replica manager, so a change of that path is made here only. On a cluster (a partition the
metadata placed) the append is refused on a follower (NOT_LEADER_OR_FOLLOWER) and under
min.insync.replicas (NOT_ENOUGH_REPLICAS), and `wait_replicated` is the acks=all wait the
coordinators' answers go through (Kafka: the runtime completes a write once the HW passed it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.v2 import Record, build_batch
from minibroker_storage.log import AppendOrigin

CoordinatorRecord = tuple[bytes, "bytes | None"]


class CoordinatorPartitionWriter:
    """Appends coordinator records to a partition of an internal topic."""

    def __init__(self, topics: TopicRegistry, replica_manager: ReplicaManager) -> None:
        self.topics = topics
        self.replica_manager = replica_manager

    def append(self, topic: str, partition: int, records: Sequence[CoordinatorRecord], *, timestamp: int,
               producer_id: int = -1, producer_epoch: int = -1) -> int:
        """Append `records` in one batch to topic-partition; returns the batch's first offset.
        With a producer id the batch is transactional (TxnOffsetCommit, KIP-98): it counts once
        the transaction's COMMIT marker follows it."""
        t = self.topics.get(topic)
        if t is None:
            raise KeyError(f"{topic} does not exist")
        lg = t.partitions[partition]
        part = self.replica_manager.get_partition(topic, partition)
        if part is not None and part.from_metadata:
            # Kafka: the runtime appends as leader with acks=all (CoordinatorPartitionWriter.append)
            if not part.is_leader:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"Leader not local for partition {topic}-{partition}")
            if len(part.isr) < part.min_insync_replicas:
                raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"The size of the current ISR {len(part.isr)} is insufficient to satisfy the "
                                 f"min.isr requirement of {part.min_insync_replicas} for {topic}-{partition}")
        txn = producer_id >= 0
        batch = build_batch([Record(offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(records)],
                            base_timestamp=timestamp, producer_id=producer_id, producer_epoch=producer_epoch,
                            base_sequence=0 if txn else -1, is_transactional=txn)
        return self.replica_manager.append(lg, batch, origin=AppendOrigin.COORDINATOR).first_offset

    def leads(self, topic: str, partition: int) -> bool:
        """Whether this broker leads topic-partition (one that the replica manager does not hold
        is led only on a single broker, whose partitions are all its own)."""
        part = self.replica_manager.get_partition(topic, partition)
        if part is None:
            return self.topics.remote_creator is None
        return part.is_leader

    async def wait_replicated(self, topic: str, partition: int, timeout_ms: int) -> int:
        """`wait_replicated` of this writer's replica manager."""
        return await wait_replicated(self.replica_manager, topic, partition, timeout_ms)


async def wait_replicated(rm: ReplicaManager, topic: str, partition: int, timeout_ms: int) -> int:
    """Until the partition's HW reaches its LEO as it is now (every record appended so far is
    committed), as an acks=all produce waits in DelayedProduce: NONE,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND (the ISR shrank under min.insync.replicas),
    NOT_LEADER_OR_FOLLOWER (leadership moved) or REQUEST_TIMED_OUT."""
    part = rm.get_partition(topic, partition)
    if part is None or part.log.high_watermark_follows_leo:
        return ErrorCode.NONE  # the leader alone in the ISR: committed as appended
    target = part.log_end_offset
    deadline = time.monotonic() + max(0, timeout_ms) / 1000
    while part.high_watermark < target:
        if rm.get_partition(topic, partition) is not part or not part.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(part.isr) < part.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return ErrorCode.REQUEST_TIMED_OUT
        await rm.produce_waiters.wait([(topic, partition)], remaining)
    return ErrorCode.NONE
