"""The one writer of the coordinators' internal topics (Kafka: CoordinatorPartitionWriter).

Theory of operation. The group, share and transaction coordinators keep their state in internal,
compacted topics (__consumer_offsets, __share_group_state, __transaction_state); every record
they write goes through `append` here, as one RecordBatch v2 per call, into
`ReplicaManager.append` with the coordinator origin (flush policy, then the fetches parked on the
partition woken), the broker's one append path. This is the single place a coordinator calls
the replica manager, so a change of that path (a topic-partition variant, a leader check,
acks=all in the cluster issue) is made here only.
"""

from __future__ import annotations

from collections.abc import Sequence

from minibroker.replica_manager import ReplicaManager
from minibroker.topics import TopicRegistry
from protocol.records.v2 import Record, build_batch
from storage.log import AppendOrigin

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
        txn = producer_id >= 0
        batch = build_batch([Record(offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(records)],
                            base_timestamp=timestamp, producer_id=producer_id, producer_epoch=producer_epoch,
                            base_sequence=0 if txn else -1, is_transactional=txn)
        return self.replica_manager.append(lg, batch, origin=AppendOrigin.COORDINATOR).first_offset
