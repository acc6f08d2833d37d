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

Which share partitions a group has: Kafka's group coordinator keeps them in `__consumer_offsets`
(ShareGroupStatePartitionMetadata: the topics whose share state it initialized when it first
assigned them). These admin APIs still take them from memory (differences.md#kraft-share-groups):
the partitions assigned to a member or altered, less those deleted; the record itself is written
and replayed with the group (share_group_records.py) but not read here yet.
"""

from __future__ import annotations

import uuid
from collections.abc import Sized
from typing import Protocol

from minibroker.coordinator.share.persister import DefaultStatePersister, StateSummary
from minibroker_protocol.errors import ErrorCode


class _Group(Protocol):
    @property
    def members(self) -> Sized: ...


class _Groups(Protocol):
    """What deleting a share group needs of the ShareGroupCoordinator."""

    def describe(self, group_id: str) -> _Group | None: ...

    def delete_group(self, group_id: str) -> int: ...


class ShareGroupStateAdmin:
    """The group coordinator's share-state look-ups and changes for the admin APIs (a cluster's)."""

    def __init__(self, persister: DefaultStatePersister) -> None:
        self.persister = persister
        # group id -> topic id -> the partitions whose share state the group may have
        self.initialized: dict[str, dict[uuid.UUID, set[int]]] = {}

    def note(self, group_id: str, topic_id: uuid.UUID, partitions: list[int]) -> None:
        """`partitions` of the topic were assigned to a member of the group (or altered)."""
        self.initialized.setdefault(group_id, {}).setdefault(topic_id, set()).update(partitions)

    def note_assignment(self, group_id: str, assignment: dict[uuid.UUID, list[int]]) -> None:
        for tid, parts in assignment.items():
            self.note(group_id, tid, parts)

    def topics(self, group_id: str) -> dict[uuid.UUID, list[int]]:
        return {tid: sorted(ps) for tid, ps in self.initialized.get(group_id, {}).items()}

    async def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, StateSummary | None]:
        """A share partition's state summary: (NONE, None) when its share coordinator holds none
        (Kafka's answers an uninitialized start offset, -1)."""
        code, summary = await self.persister.read_summary((group_id, topic_id, partition))
        if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return ErrorCode.NONE, None
        return code, summary

    async def alter(self, group_id: str, topic_id: uuid.UUID, partition: int, offset: int) -> int:
        """Start the share partition again at `offset`, its state epoch moved on."""
        key = (group_id, topic_id, partition)
        code, summary = await self.summary(group_id, topic_id, partition)
        if code != ErrorCode.NONE:
            return code
        code = await self.persister.initialize(key, offset, summary.state_epoch + 1 if summary is not None else 0)
        if code == ErrorCode.NONE:
            self.note(group_id, topic_id, [partition])
        return code

    async def delete_topic(self, group_id: str, topic_id: uuid.UUID, partitions: list[int]) -> int:
        """Forget the group's share state of the topic: the first error, if any."""
        first: int = ErrorCode.NONE
        for p in partitions:
            code = await self.persister.delete_state((group_id, topic_id, p))
            if code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) and first == ErrorCode.NONE:
                first = code
        if first == ErrorCode.NONE:
            self.initialized.get(group_id, {}).pop(topic_id, None)
        return first

    async def delete_share_group(self, coord: _Groups, group_id: str) -> int:
        """DeleteGroups of a share group: its share state first goes from the share coordinators
        (Kafka's GroupCoordinatorService.deleteShareGroups: DeleteShareGroupState, then the
        group's records), then the group."""
        group = coord.describe(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        code = await self.delete_group(group_id)
        return code if code != ErrorCode.NONE else coord.delete_group(group_id)

    async def delete_group(self, group_id: str) -> int:
        """Forget every share state of the group (DeleteGroups of a share group)."""
        first: int = ErrorCode.NONE
        for tid, parts in self.topics(group_id).items():
            code = await self.delete_topic(group_id, tid, parts)
            first = first or code
        if first == ErrorCode.NONE:
            self.initialized.pop(group_id, None)
        return first


def lag(summary: StateSummary | None, high_watermark: int | None) -> int:
    """KIP-1226's share-partition lag: the high watermark less the start offset less the records
    of the window done; -1 when a part is unknown."""
    if summary is None or summary.start_offset < 0 or high_watermark is None:
        return -1
    return max(0, high_watermark - summary.start_offset - max(0, summary.delivery_complete_count))

