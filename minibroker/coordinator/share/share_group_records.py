"""The KIP-932 share-group records of __consumer_offsets, as Kafka 4.4 writes them.

A key is an int16 record type followed by the key struct at version 0; a value is an int16 value
version followed by the value struct; a null value is a tombstone (Kafka: GroupCoordinatorRecordSerde,
CoordinatorRecordType). The types (Kafka 4.4: GroupCoordinatorRecordHelpers.newShareGroup*Record):

    10 ShareGroupMemberMetadata            (group, member) -> rack, client, subscribed topics
    11 ShareGroupMetadata                  (group)         -> group epoch, metadata hash
    12 ShareGroupTargetAssignmentMetadata  (group)         -> assignment epoch, timestamp
    13 ShareGroupTargetAssignmentMember    (group, member) -> target partitions
    14 ShareGroupCurrentMemberAssignment   (group, member) -> member epoch, state, partitions
    15 ShareGroupStatePartitionMetadata    (group)         -> initializing / initialized / deleting topics

(type 9, ShareGroupPartitionMetadata, is gone in Kafka 4.4.) As for consumer groups, member records
go before the group epoch and target records before the assignment epoch; a leaving member's
tombstones go current assignment, target, subscription (GroupMetadataManager.shareGroupFenceMember),
a deleted group's then the target-assignment, state-partition and group metadata
(ShareGroup.createGroupTombstoneRecords).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol import share_group_records as sr
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.schema import Message

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15

# ShareGroupMember's MemberState: a share member is always STABLE (no revocation phase)
MEMBER_STATE_STABLE = 0

Assignment = Mapping[uuid.UUID, list[int]]


@dataclass(slots=True)
class ShareGroupRecord:
    """One decoded record: its type, group, member id (else None), value (None: tombstone)."""

    type: int
    group: str
    member_id: str | None
    value: Message | None


def record_type(key: bytes | memoryview) -> int | None:
    """The share-group record type of a __consumer_offsets key, None for any other record."""
    if len(key) < 2:
        return None
    (rtype,) = struct.unpack_from(">h", bytes(key[:2]), 0)
    return rtype if rtype in sr.BY_TYPE else None


def _key(rtype: int, group: str, member_id: str | None = None) -> bytes:
    schema = sr.BY_TYPE[rtype][0]
    fields = {"group_id": group} if member_id is None else {"group_id": group, "member_id": member_id}
    return struct.pack(">h", rtype) + bytes(encode(schema, 0, schema(**fields)))


def _value(rtype: int, obj: Message) -> bytes:
    return struct.pack(">h", 0) + bytes(encode(sr.BY_TYPE[rtype][1], 0, obj))


def member_subscription(group: str, member_id: str, *, rack_id: str | None, client_id: str, client_host: str,
                        subscribed: list[str]) -> CoordinatorRecord:
    """Kafka: newShareGroupMemberSubscriptionRecord (written when the member joins or its subscription changes)."""
    v = sr.SHARE_GROUP_MEMBER_METADATA_VALUE(rack_id=rack_id, client_id=client_id, client_host=client_host,
                                             subscribed_topic_names=sorted(subscribed))
    return _key(MEMBER_METADATA, group, member_id), _value(MEMBER_METADATA, v)


def group_epoch(group: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    """Kafka: newShareGroupEpochRecord."""
    v = sr.SHARE_GROUP_METADATA_VALUE(epoch=epoch, metadata_hash=metadata_hash)
    return _key(GROUP_METADATA, group), _value(GROUP_METADATA, v)


def target_assignment_member(group: str, member_id: str, assignment: Assignment) -> CoordinatorRecord:
    """Kafka: newShareGroupTargetAssignmentRecord."""
    T = sr.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE.TopicPartition
    v = sr.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE(topic_partitions=[
        T(topic_id=tid, partitions=sorted(ps)) for tid, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])) if ps])
    return _key(TARGET_ASSIGNMENT_MEMBER, group, member_id), _value(TARGET_ASSIGNMENT_MEMBER, v)


def target_assignment_metadata(group: str, epoch: int, timestamp_ms: int) -> CoordinatorRecord:
    """Kafka: newShareGroupTargetAssignmentMetadataRecord."""
    v = sr.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE(assignment_epoch=epoch, assignment_timestamp=timestamp_ms)
    return _key(TARGET_ASSIGNMENT_METADATA, group), _value(TARGET_ASSIGNMENT_METADATA, v)


def current_assignment(group: str, member_id: str, *, epoch: int, previous_epoch: int,
                       assigned: Assignment) -> CoordinatorRecord:
    """Kafka: newShareGroupCurrentAssignmentRecord."""
    V = sr.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE
    v = V(member_epoch=epoch, previous_member_epoch=previous_epoch, state=MEMBER_STATE_STABLE,
          assigned_partitions=[V.TopicPartitions(topic_id=tid, partitions=sorted(ps))
                               for tid, ps in sorted(assigned.items(), key=lambda kv: str(kv[0])) if ps])
    return _key(CURRENT_MEMBER_ASSIGNMENT, group, member_id), _value(CURRENT_MEMBER_ASSIGNMENT, v)


def state_partition_metadata(group: str, initialized: Mapping[uuid.UUID, tuple[str, list[int]]],
                             initializing: Mapping[uuid.UUID, tuple[str, list[int]]] | None = None,
                             deleting: Mapping[uuid.UUID, str] | None = None) -> CoordinatorRecord:
    """Kafka: newShareGroupStatePartitionMetadataRecord (the whole record each time: the share
    partitions being initialised, those initialised, the topics whose share state is being
    deleted; share_group_state_metadata.py)."""
    V = sr.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE

    def infos(topics: Mapping[uuid.UUID, tuple[str, list[int]]] | None) -> list[sr.ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo]:
        return [V.TopicPartitionsInfo(topic_id=tid, topic_name=name, partitions=sorted(ps))
                for tid, (name, ps) in sorted((topics or {}).items(), key=lambda kv: str(kv[0]))]

    v = V(initializing_topics=infos(initializing), initialized_topics=infos(initialized),
          deleting_topics=[V.TopicInfo(topic_id=tid, topic_name=name)
                           for tid, name in sorted((deleting or {}).items(), key=lambda kv: str(kv[0]))])
    return _key(STATE_PARTITION_METADATA, group), _value(STATE_PARTITION_METADATA, v)


def member_tombstones(group: str, member_id: str) -> list[CoordinatorRecord]:
    """A leaving member's records, deleted in Kafka's order (shareGroupFenceMember)."""
    return [(_key(CURRENT_MEMBER_ASSIGNMENT, group, member_id), None),
            (_key(TARGET_ASSIGNMENT_MEMBER, group, member_id), None),
            (_key(MEMBER_METADATA, group, member_id), None)]


def group_tombstones(group: str, member_ids: list[str]) -> list[CoordinatorRecord]:
    """A deleted group's records (Kafka: ShareGroup.createGroupTombstoneRecords)."""
    out: list[CoordinatorRecord] = []
    out += [(_key(CURRENT_MEMBER_ASSIGNMENT, group, m), None) for m in member_ids]
    out += [(_key(TARGET_ASSIGNMENT_MEMBER, group, m), None) for m in member_ids]
    out += [(_key(MEMBER_METADATA, group, m), None) for m in member_ids]
    out += [(_key(TARGET_ASSIGNMENT_METADATA, group), None), (_key(STATE_PARTITION_METADATA, group), None),
            (_key(GROUP_METADATA, group), None)]
    return out


def decode_record(key: bytes | memoryview, value: bytes | memoryview | None) -> ShareGroupRecord:
    """Decode one share-group record; ValueError when it cannot be read."""
    buf = bytes(key)
    (rtype,) = struct.unpack_from(">h", buf, 0)
    try:
        key_schema, value_schema = sr.BY_TYPE[rtype]
        k = decode(key_schema, 0, buf, 2)
        v = None
        if value is not None:
            vb = bytes(value)
            (vv,) = struct.unpack_from(">h", vb, 0)
            v = decode(value_schema, vv, vb, 2, exact=False)
    except Exception as e:
        raise ValueError(f"unreadable share group record (type {rtype}): {e}") from None
    return ShareGroupRecord(rtype, getattr(k, "group_id"), getattr(k, "member_id", None), v)  # noqa: B009
