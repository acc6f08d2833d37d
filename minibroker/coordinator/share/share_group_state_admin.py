"""The share-group admin APIs on a KRaft cluster: the group coordinator reads and writes share
state through the persister (KIP-932; Kafka's GroupCoordinatorService.describeShareGroupOffsets,
alterShareGroupOffsets, deleteShareGroupOffsets and deleteGroups of a share group).

Theory of operation. On a cluster the share partitions live on their topic partitions' leaders and
their state with the share coordinators (persister.py); the broker that answers the admin APIs is
the group's coordinator (FindCoordinator GROUP), which may be neither. So, as Kafka's group
coordinator does, it asks each share partition's share coordinator:
- DescribeShareGroupOffsets: ReadShareGroupStateSummary (start offset, leader epoch, and v1's
  DeliveryCompleteCount, from which the lag is the high watermark less the start offset less the
  records done: KIP-1226);
- AlterShareGroupOffsets: InitializeShareGroupState at the new start offset with the next state
  epoch, which fences the share-partition leader's later writes of the old state;
- DeleteShareGroupOffsets and DeleteGroups: DeleteShareGroupState.
A share-partition leader drops a group's share partitions when the last share session of the group
on it closes (share_group.py), so the next consumer's ShareFetch reads the state the admin wrote.

Which share partitions a group has: its ShareGroupStatePartitionMetadata in `__consumer_offsets`
(share_group_state_metadata.py), as Kafka's group coordinator keeps it: the heartbeat that assigns
partitions marks them initialised, AlterShareGroupOffsets marks its partitions initialising before
InitializeShareGroupState and initialised after, DeleteShareGroupOffsets and DeleteGroups move
topics to deleting before DeleteShareGroupState and out after. A coordinator that takes over the
group (a failover, a restart) replays the record, so DescribeShareGroupOffsets lists the same
partitions with no member back (Kafka: describeShareGroupAllOffsets reads
initializedShareGroupPartitions).
"""

from __future__ import annotations

import uuid
from collections.abc import Sized
from typing import Protocol

from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker.coordinator.share import share_group_state_metadata as state_metadata
from minibroker.coordinator.share.persister import DefaultStatePersister, StateSummary
from minibroker_protocol.errors import ErrorCode, KafkaError

NO_OFFSETS_TO_DELETE = "There is no offset information to delete."  # Kafka's sharePartitionsEligibleForOffsetDeletion


class _Group(state_metadata.StateMetadataGroup, Protocol):
    @property
    def members(self) -> Sized: ...


class _Groups(Protocol):
    """What the admin APIs need of the ShareGroupCoordinator: its groups (replayed from
    __consumer_offsets), the metadata naming topics, and the writer of the group's records."""

    metadata: TopicsMetadata

    def describe(self, group_id: str) -> _Group | None: ...

    def delete_group(self, group_id: str) -> int: ...

    def write_records(self, group_id: str, records: list[CoordinatorRecord]) -> None: ...


class ShareGroupStateAdmin:
    """The group coordinator's share-state look-ups and changes for the admin APIs (a cluster's)."""

    def __init__(self, persister: DefaultStatePersister, groups: _Groups) -> None:
        self.persister = persister
        self.groups = groups

    def topics(self, group_id: str) -> dict[uuid.UUID, list[int]]:
        """The group's initialised share partitions (Kafka: initializedShareGroupPartitions)."""
        return state_metadata.initialized_partitions(self.groups.describe(group_id))

    async def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, StateSummary | None]:
        """A share partition's state summary: (NONE, None) when its share coordinator holds none
        (Kafka's answers an uninitialized start offset, -1)."""
        code, summary = await self.persister.read_summary((group_id, topic_id, partition))
        if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return ErrorCode.NONE, None
        return code, summary

    async def alter(self, group_id: str, offsets: dict[uuid.UUID, tuple[str, dict[int, int]]]) -> dict[tuple[uuid.UUID, int], int]:
        """AlterShareGroupOffsets of an empty group (Kafka: alterShareGroupOffsets, then
        persisterInitialize): the partitions are marked initialising, each share partition starts
        again at its offset with its state epoch moved on, and those done are marked initialised
        (a failed one stays initialising, as on Kafka). The error of each partition."""
        group = self.groups.describe(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        self.groups.write_records(group_id, state_metadata.add_initializing(
            group, {tid: (name, list(parts)) for tid, (name, parts) in offsets.items()}))
        codes: dict[tuple[uuid.UUID, int], int] = {}
        for tid, (_, parts) in offsets.items():
            for p, offset in parts.items():
                codes[(tid, p)] = await self._initialize(group_id, tid, p, offset)
        done = {tid: (name, [p for p in parts if codes[(tid, p)] == ErrorCode.NONE])
                for tid, (name, parts) in offsets.items()}
        self.groups.write_records(group_id, state_metadata.initialize(group, done))
        return codes

    async def _initialize(self, group_id: str, topic_id: uuid.UUID, partition: int, offset: int) -> int:
        code, summary = await self.summary(group_id, topic_id, partition)
        if code != ErrorCode.NONE:
            return code
        return await self.persister.initialize((group_id, topic_id, partition), offset,
                                               summary.state_epoch + 1 if summary is not None else 0)

    async def _delete(self, group_id: str, topic_id: uuid.UUID, partitions: list[int]) -> int:
        """Forget the group's share state of the topic's partitions: the first error, if any."""
        first: int = ErrorCode.NONE
        for p in partitions:
            code = await self.persister.delete_state((group_id, topic_id, p))
            if code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) and first == ErrorCode.NONE:
                first = code
        return first

    async def delete_offsets(self, group_id: str, topics: list[tuple[uuid.UUID, str, int]]
                             ) -> tuple[dict[uuid.UUID, int], list[str]]:
        """DeleteShareGroupOffsets of an empty group's `topics` (id, name, partition count)
        (Kafka: initiateDeleteShareGroupOffsets, DeleteShareGroupState, then
        completeDeleteShareGroupOffsets): the error of each topic whose state was deleted or
        failed to be, and the topics with no offset information to delete."""
        group = self.groups.describe(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        to_delete, nothing, records = state_metadata.begin_delete_offsets(group, topics)
        self.groups.write_records(group_id, records)
        codes = {tid: await self._delete(group_id, tid, parts) for tid, parts in to_delete.items()}
        deleted = [tid for tid, code in codes.items() if code == ErrorCode.NONE]
        if deleted:
            self.groups.write_records(group_id, state_metadata.complete_delete_offsets(group, deleted))
        return codes, nothing

    async def delete_share_group(self, group_id: str) -> int:
        """DeleteGroups of a share group (Kafka's GroupCoordinatorService.deleteShareGroups): its
        share partitions move to deleting, their state goes from the share coordinators, then the
        group's records (tombstones); a failed deletion leaves the group, its topics deleting."""
        group = self.groups.describe(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        to_delete, records = state_metadata.begin_delete_group(group, self.groups.metadata)
        try:
            self.groups.write_records(group_id, records)
        except KafkaError as e:
            return e.code
        first: int = ErrorCode.NONE
        for tid, parts in to_delete.items():
            first = first or await self._delete(group_id, tid, parts)
        return first if first != ErrorCode.NONE else self.groups.delete_group(group_id)


def lag(summary: StateSummary | None, high_watermark: int | None) -> int:
    """KIP-1226's share-partition lag: the high watermark less the start offset less the records
    of the window done; -1 when a part is unknown."""
    if summary is None or summary.start_offset < 0 or high_watermark is None:
        return -1
    return max(0, high_watermark - summary.start_offset - max(0, summary.delivery_complete_count))

