"""A share group's ShareGroupStatePartitionMetadata: which of its share partitions have state with
the share coordinators (KIP-932; Kafka 4.4's GroupMetadataManager.shareGroupStatePartitionMetadata).

Theory of operation. The group coordinator keeps, per share group, three sets of topics in
`__consumer_offsets` (record type 15, share_group_records.py): the share partitions being
initialised (InitializeShareGroupState sent, not yet answered), those initialised, and the topics
whose share state is being deleted (DeleteShareGroupState sent, not yet answered). Every change
writes the whole record again; a coordinator taking over the `__consumer_offsets` partition replays
the last one (share_group_replay.py), so what the admin APIs see of a group outlives its members
and the coordinator that wrote it. The functions here are Kafka's transitions, each changing the
group in memory and returning the record to write:

- add_initializing: AlterShareGroupOffsets before its InitializeShareGroupState
  (addInitializingTopicsRecords; a topic initialising again leaves the deleting set);
- initialize: the partitions initialised (initializeShareGroupState: out of initializing, into
  initialized); a heartbeat assigning partitions does both at once here (the share-partition
  leader initialises them at share.auto.offset.reset, share_partition_manager.py);
- begin_delete_offsets / complete_delete_offsets: DeleteShareGroupOffsets before and after its
  DeleteShareGroupState (sharePartitionsEligibleForOffsetDeletion, completeDeleteShareGroupOffsets);
- begin_delete_group: DeleteGroups of a share group before its DeleteShareGroupState
  (shareGroupBuildPartitionDeleteRequest: every initialised and initialising partition, and a
  deletion left unfinished, to deleting); the group's tombstones follow once the state is gone;
- drop_topics: deleted topics leave every set (maybeCleanupShareGroupState).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol

from minibroker.coordinator.coordinator_metadata_image import TopicsMetadata
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker.coordinator.share import share_group_records as rec

# topic id -> (topic name, partitions)
TopicPartitions = dict[uuid.UUID, tuple[str, list[int]]]
UNKNOWN_TOPIC_NAME = "<UNKNOWN>"  # Kafka's attachTopicName for a topic gone from the image


class StateMetadataGroup(Protocol):
    """The part of a share group (share_group.ShareGroup) these transitions change."""

    group_id: str
    initialized: TopicPartitions
    initializing: TopicPartitions
    deleting: dict[uuid.UUID, str]
    state_metadata_written: bool


def record(group: StateMetadataGroup) -> CoordinatorRecord:
    """The group's ShareGroupStatePartitionMetadata as it stands (newShareGroupStatePartitionMetadataRecord)."""
    group.state_metadata_written = True
    return rec.state_partition_metadata(group.group_id, group.initialized, group.initializing, group.deleting)


def initialized_partitions(group: StateMetadataGroup | None) -> dict[uuid.UUID, list[int]]:
    """The share partitions whose state was initialised (Kafka: initializedShareGroupPartitions,
    what DescribeShareGroupOffsets lists when no topic is named)."""
    if group is None:
        return {}
    return {tid: sorted(ps) for tid, (_, ps) in group.initialized.items()}


def _merge(into: TopicPartitions, topics: Mapping[uuid.UUID, tuple[str, Iterable[int]]]) -> bool:
    """Add `topics`' partitions to `into` (combineInitMaps); whether that changed it."""
    grew = False
    for tid, (name, parts) in topics.items():
        known_name, known = into.get(tid, (name, []))
        merged = sorted(set(known) | set(parts))
        if tid not in into or merged != known:
            into[tid] = (known_name if known_name != UNKNOWN_TOPIC_NAME else name, merged)
            grew = True
    return grew


def _subtract(from_: TopicPartitions, topics: Mapping[uuid.UUID, Iterable[int]]) -> None:
    for tid, parts in topics.items():
        if tid in from_:
            name, known = from_[tid]
            left = sorted(set(known) - set(parts))
            if left:
                from_[tid] = (name, left)
            else:
                del from_[tid]


def add_initializing(group: StateMetadataGroup, topics: Mapping[uuid.UUID, tuple[str, Iterable[int]]]) -> list[CoordinatorRecord]:
    """`topics` are being initialised (AlterShareGroupOffsets; Kafka: addInitializingTopicsRecords)."""
    if not topics:
        return []
    _merge(group.initializing, topics)
    for tid in topics:  # initialising again: no longer being deleted
        group.deleting.pop(tid, None)
    return [record(group)]


def initialize(group: StateMetadataGroup, topics: Mapping[uuid.UUID, tuple[str, Iterable[int]]]) -> list[CoordinatorRecord]:
    """`topics`' partitions were initialised (Kafka: initializeShareGroupState): the record when
    that changed anything."""
    topics = {tid: (name, list(ps)) for tid, (name, ps) in topics.items() if ps}
    if not topics:
        return []
    before = (dict(group.initializing), dict(group.deleting))
    grew = _merge(group.initialized, topics)
    _subtract(group.initializing, {tid: ps for tid, (_, ps) in topics.items()})
    for tid in topics:  # Kafka removes them from deleting when they start initialising
        group.deleting.pop(tid, None)
    if not grew and before == (group.initializing, group.deleting):
        return []
    return [record(group)]


def begin_delete_offsets(group: StateMetadataGroup, topics: Iterable[tuple[uuid.UUID, str, int]]
                         ) -> tuple[dict[uuid.UUID, list[int]], list[str], list[CoordinatorRecord]]:
    """DeleteShareGroupOffsets of `topics` (id, name, partition count), before the share state goes
    (Kafka: sharePartitionsEligibleForOffsetDeletion): the partitions to delete per topic (an
    initialised topic's initialised partitions, or every partition of a topic whose deletion did not
    finish), the topics with nothing to delete, and the record moving the others to deleting."""
    to_delete: dict[uuid.UUID, list[int]] = {}
    nothing: list[str] = []
    for tid, name, count in topics:
        if tid in group.initialized:
            to_delete[tid] = sorted(group.initialized.pop(tid)[1])
            group.deleting[tid] = name
        elif tid in group.deleting:
            to_delete[tid] = list(range(count))
        else:
            nothing.append(name)
    return to_delete, nothing, [record(group)]


def complete_delete_offsets(group: StateMetadataGroup, deleted: Iterable[uuid.UUID]) -> list[CoordinatorRecord]:
    """The topics whose share state is gone leave deleting (Kafka: completeDeleteShareGroupOffsets)."""
    for tid in deleted:
        group.deleting.pop(tid, None)
    return [record(group)]


def begin_delete_group(group: StateMetadataGroup, metadata: TopicsMetadata) -> tuple[dict[uuid.UUID, list[int]], list[CoordinatorRecord]]:
    """DeleteGroups of a share group, before its share state goes (Kafka:
    shareGroupBuildPartitionDeleteRequest): every initialised and initialising partition, and every
    partition of a topic still deleting from an earlier attempt that the metadata still has, move
    to deleting; returns them and the record (none when the group never had share state)."""
    if not (group.initialized or group.initializing or group.deleting or group.state_metadata_written):
        return {}, []
    candidates: TopicPartitions = {}
    _merge(candidates, group.initialized)
    _merge(candidates, group.initializing)
    for tid in list(group.deleting):
        topic = metadata.by_id(tid)
        if topic is not None:  # a deletion left unfinished is tried again
            _merge(candidates, {tid: (topic.name, range(len(topic.partitions)))})
    group.initialized, group.initializing = {}, {}
    group.deleting = {tid: name for tid, (name, _) in candidates.items()}
    return {tid: ps for tid, (_, ps) in candidates.items()}, [record(group)]


def drop_topics(group: StateMetadataGroup, topic_ids: Iterable[uuid.UUID]) -> list[CoordinatorRecord]:
    """Deleted topics leave the group's sets (Kafka: maybeCleanupShareGroupState)."""
    ids = set(topic_ids)
    if not ids & (set(group.initialized) | set(group.initializing) | set(group.deleting)):
        return []
    for tid in ids:
        group.initialized.pop(tid, None)
        group.initializing.pop(tid, None)
        group.deleting.pop(tid, None)
    return [record(group)]
