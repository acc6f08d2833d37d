"""The KIP-848 consumer-group records of __consumer_offsets, as Kafka writes them.

A key is an int16 record type followed by the key struct at version 0; a value is an int16
value version followed by the value struct; a null value is a tombstone
(Kafka: GroupCoordinatorRecordSerde, CoordinatorRecordType). The types:

    3  ConsumerGroupMetadata            (group)          -> group epoch, metadata hash
    4  ConsumerGroupPartitionMetadata   (group)          -> deprecated since 4.0; only read
    5  ConsumerGroupMemberMetadata      (group, member)  -> subscription, client, timeouts
    6  ConsumerGroupTargetAssignmentMetadata (group)     -> assignment epoch
    7  ConsumerGroupTargetAssignmentMember   (group, member) -> target partitions
    8  ConsumerGroupCurrentMemberAssignment  (group, member) -> epochs, state, partitions
    16 ConsumerGroupRegularExpression   (group, regex)   -> resolved topics

Kafka writes member records before the group epoch, target records before the assignment epoch
(the metadata record last, so that a replay never sees an epoch without its members); the
tombstones of a member go current assignment, target, then metadata.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minibroker_protocol import coordinator_records as cr
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.schema import Message, Schema

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16

_KEYS: dict[int, Schema] = {
    GROUP_METADATA: cr.CONSUMER_GROUP_METADATA_KEY,
    PARTITION_METADATA: cr.CONSUMER_GROUP_PARTITION_METADATA_KEY,
    MEMBER_METADATA: cr.CONSUMER_GROUP_MEMBER_METADATA_KEY,
    TARGET_ASSIGNMENT_METADATA: cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    TARGET_ASSIGNMENT_MEMBER: cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    CURRENT_MEMBER_ASSIGNMENT: cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    REGULAR_EXPRESSION: cr.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
}
_VALUES: dict[int, Schema] = {
    GROUP_METADATA: cr.CONSUMER_GROUP_METADATA_VALUE,
    PARTITION_METADATA: cr.CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    MEMBER_METADATA: cr.CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    TARGET_ASSIGNMENT_METADATA: cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    TARGET_ASSIGNMENT_MEMBER: cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    CURRENT_MEMBER_ASSIGNMENT: cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    REGULAR_EXPRESSION: cr.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
}

if TYPE_CHECKING:
    # the value struct of each record type above
    ConsumerGroupValue = (cr.ConsumerGroupMetadataValue | cr.ConsumerGroupPartitionMetadataValue
                          | cr.ConsumerGroupMemberMetadataValue | cr.ConsumerGroupTargetAssignmentMetadataValue
                          | cr.ConsumerGroupTargetAssignmentMemberValue | cr.ConsumerGroupCurrentMemberAssignmentValue
                          | cr.ConsumerGroupRegularExpressionValue)

Record = tuple[bytes, "bytes | None"]
Assignment = dict[uuid.UUID, set[int]]
PartitionEpochs = dict[tuple[uuid.UUID, int], int]


class TopicPartitions(Protocol):
    """A topic's partitions in a target or current assignment record (both structs have these)."""

    @property
    def topic_id(self) -> uuid.UUID: ...
    @property
    def partitions(self) -> list[int]: ...


@dataclass(slots=True)
class ConsumerGroupRecord:
    """One decoded record: its type, group, member id or regex (else None), value (None: tombstone)."""

    type: int
    group: str
    sub_key: str | None
    value: ConsumerGroupValue | None


def _key(rtype: int, **fields: str | None) -> bytes:
    schema = _KEYS[rtype]
    return struct.pack(">h", rtype) + bytes(encode(schema, 0, schema(**fields)))


def _value(rtype: int, obj: Message) -> bytes:
    return struct.pack(">h", 0) + bytes(encode(_VALUES[rtype], 0, obj))


def topic_partitions(assignment: Assignment) -> list[cr.ConsumerGroupTargetAssignmentMemberValue.TopicPartition]:
    T = cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE.TopicPartition
    return [T(topic_id=tid, partitions=sorted(ps)) for tid, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])) if ps]


def group_metadata(group: str, epoch: int, metadata_hash: int) -> Record:
    return (_key(GROUP_METADATA, group_id=group),
            _value(GROUP_METADATA, cr.CONSUMER_GROUP_METADATA_VALUE(epoch=epoch, metadata_hash=metadata_hash)))


def member_metadata(group: str, member_id: str, *, instance_id: str | None, rack_id: str | None, client_id: str,
                    client_host: str, topic_names: list[str], topic_regex: str | None, rebalance_timeout_ms: int,
                    server_assignor: str | None, classic: tuple[int, list[tuple[str, bytes]]] | None = None) -> Record:
    """`classic`: (session timeout, supported protocols) of a classic-protocol member."""
    V = cr.CONSUMER_GROUP_MEMBER_METADATA_VALUE
    classic_metadata = None if classic is None else V.ClassicMemberMetadata(
        session_timeout_ms=classic[0],
        supported_protocols=[V.ClassicProtocol(name=n, metadata=m) for n, m in classic[1]])
    v = V(
        instance_id=instance_id, rack_id=rack_id, client_id=client_id, client_host=client_host,
        subscribed_topic_names=sorted(topic_names), subscribed_topic_regex=topic_regex,
        rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=server_assignor,
        classic_member_metadata=classic_metadata)
    return _key(MEMBER_METADATA, group_id=group, member_id=member_id), _value(MEMBER_METADATA, v)


def target_assignment_member(group: str, member_id: str, assignment: Assignment) -> Record:
    V = cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE
    v = V(topic_partitions=topic_partitions(assignment))
    return _key(TARGET_ASSIGNMENT_MEMBER, group_id=group, member_id=member_id), _value(TARGET_ASSIGNMENT_MEMBER, v)


def target_assignment_metadata(group: str, epoch: int, timestamp_ms: int) -> Record:
    v = cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE(assignment_epoch=epoch, assignment_timestamp=timestamp_ms)
    return _key(TARGET_ASSIGNMENT_METADATA, group_id=group), _value(TARGET_ASSIGNMENT_METADATA, v)


def _partitions_with_epochs(assignment: Assignment, epochs: PartitionEpochs, default: int
                            ) -> list[cr.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions]:
    """TopicPartitions with the tagged AssignmentEpochs (Kafka 4.3+ writes them, same length and
    order as Partitions)."""
    T = cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.TopicPartitions
    out = []
    for tid, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        if ps:
            parts = sorted(ps)
            out.append(T(topic_id=tid, partitions=parts,
                         assignment_epochs=[epochs.get((tid, p), default) for p in parts]))
    return out


def current_member_assignment(group: str, member_id: str, *, epoch: int, previous_epoch: int, state: int,
                              assigned: Assignment, pending_revocation: Assignment,
                              epochs: PartitionEpochs | None = None) -> Record:
    V = cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE
    e = epochs or {}
    v = V(member_epoch=epoch, previous_member_epoch=previous_epoch, state=state,
          assigned_partitions=_partitions_with_epochs(assigned, e, max(epoch, 0)),
          partitions_pending_revocation=_partitions_with_epochs(pending_revocation, e, max(epoch, 0)))
    return _key(CURRENT_MEMBER_ASSIGNMENT, group_id=group, member_id=member_id), _value(CURRENT_MEMBER_ASSIGNMENT, v)


def regular_expression(group: str, regex: str, topics: list[str], version: int, timestamp_ms: int) -> Record:
    v = cr.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE(topics=sorted(topics), version=version, timestamp=timestamp_ms)
    return _key(REGULAR_EXPRESSION, group_id=group, regular_expression=regex), _value(REGULAR_EXPRESSION, v)


def tombstone(rtype: int, group: str, sub_key: str | None = None) -> Record:
    if rtype in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT):
        return _key(rtype, group_id=group, member_id=sub_key), None
    if rtype == REGULAR_EXPRESSION:
        return _key(rtype, group_id=group, regular_expression=sub_key), None
    return _key(rtype, group_id=group), None


def member_tombstones(group: str, member_id: str) -> list[Record]:
    """A member's records, deleted in Kafka's order (current assignment, target, subscription)."""
    return [tombstone(CURRENT_MEMBER_ASSIGNMENT, group, member_id),
            tombstone(TARGET_ASSIGNMENT_MEMBER, group, member_id),
            tombstone(MEMBER_METADATA, group, member_id)]


def group_tombstones(group: str) -> list[Record]:
    """The group-level records, deleted once the group is (Kafka: createGroupTombstoneRecords)."""
    return [tombstone(TARGET_ASSIGNMENT_METADATA, group), tombstone(PARTITION_METADATA, group),
            tombstone(GROUP_METADATA, group)]


def is_consumer_group_record(key: bytes | memoryview) -> bool:
    if len(key) < 2:
        return False
    (rtype,) = struct.unpack_from(">h", bytes(key[:2]), 0)
    return rtype in _KEYS


def decode_consumer_group_record(key: bytes | memoryview, value: bytes | memoryview | None) -> ConsumerGroupRecord:
    """Decode one record of a type in _KEYS; ValueError when it cannot be read."""
    buf = bytes(key)
    (rtype,) = struct.unpack_from(">h", buf, 0)
    try:
        k = decode(_KEYS[rtype], 0, buf, 2)
        sub = getattr(k, "member_id", None) if rtype != REGULAR_EXPRESSION else k.regular_expression
        v = None
        if value is not None:
            vb = bytes(value)
            (vv,) = struct.unpack_from(">h", vb, 0)
            v = decode(_VALUES[rtype], vv, vb, 2, exact=False)
    except Exception as e:
        raise ValueError(f"unreadable consumer group record (type {rtype}): {e}") from None
    return ConsumerGroupRecord(rtype, k.group_id, sub, v)


def assignment_of(items: Sequence[TopicPartitions] | None) -> Assignment:
    return {tp.topic_id: set(tp.partitions) for tp in (items or [])}


def assignment_epochs_of(items: list[cr.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions] | None,
                         member_epoch: int) -> PartitionEpochs:
    """The assignment epoch of each partition of a CurrentMemberAssignment list; a record without
    them (written before Kafka 4.3) or with a list of the wrong length gives every partition the
    member epoch, never below 0 (Kafka: Utils.assignmentFromTopicPartitions)."""
    out: PartitionEpochs = {}
    default = max(member_epoch, 0)
    for tp in items or []:
        epochs = tp.assignment_epochs
        if epochs is not None and len(epochs) == len(tp.partitions):
            out.update({(tp.topic_id, p): e for p, e in zip(tp.partitions, epochs, strict=True)})
        else:
            out.update({(tp.topic_id, p): default for p in tp.partitions})
    return out
