"""The records of __consumer_offsets, as Kafka writes them.

A record key is an int16 key version followed by the key struct; a value is an int16 value
version followed by the value struct; a null value is a tombstone (log compaction then drops
the key). Key versions tell the record types apart (Kafka: GroupCoordinatorRecordSerde):

    0, 1  OffsetCommitKey  (group, topic, partition); Kafka writes version 1
    2     GroupMetadataKey (group)
    3+    consumer/share group records of KIP-848 and later: not served here, skipped on load

Value versions written (Kafka 4.x, MetadataVersion.offsetCommitValueVersion /
groupMetadataValueVersion): OffsetCommitValue v3, or v1 when the commit carried an explicit
retention (only v1 has expire_timestamp); GroupMetadataValue v3.

A group lives in partition Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions
(runtime/coordinator_store.py `partition_for`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.coordinator.group.classic_group import ClassicGroup
from minibroker_protocol import coordinator_records as cr
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.schema import M, Message, Schema

if TYPE_CHECKING:
    from minibroker.coordinator.runtime.coordinator_store import TopicConfigs

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3

TOPIC = "__consumer_offsets"


def topic_configs(segment_bytes: int) -> TopicConfigs:
    """The configs __consumer_offsets is created with: compacted, offsets.topic.segment.bytes
    segments, the batches kept as written (GroupCoordinatorService.groupMetadataTopicConfigs)."""
    return {"cleanup.policy": ["compact"], "segment.bytes": segment_bytes, "compression.type": "producer"}


@dataclass(slots=True)
class OffsetAndMetadata:
    """A committed offset (Kafka: OffsetAndMetadata)."""

    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None  # only from OffsetCommit v2-4 with a retention time


@dataclass(slots=True)
class OffsetCommitRecord:
    group: str
    topic: str
    partition: int
    value: OffsetAndMetadata | None  # None: tombstone


@dataclass(slots=True)
class GroupMetadataRecord:
    group: str
    value: cr.GroupMetadataValue | None  # None: tombstone


def _prefixed(version: int, schema: Schema, obj: Message) -> bytes:
    out = encode(schema, version, obj)
    return struct.pack(">h", version) + bytes(out)


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _prefixed(OFFSET_COMMIT_KEY_VERSION, cr.OFFSET_COMMIT_KEY,
                     cr.OFFSET_COMMIT_KEY(group=group, topic=topic, partition=partition))


def offset_commit_record(group: str, topic: str, partition: int,
                         om: OffsetAndMetadata) -> tuple[bytes, bytes]:
    version = OFFSET_COMMIT_VALUE_VERSION if om.expire_timestamp_ms is None \
        else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    value = cr.OFFSET_COMMIT_VALUE(
        offset=om.offset, leader_epoch=om.leader_epoch, metadata=om.metadata,
        commit_timestamp=om.commit_timestamp_ms,
        expire_timestamp=-1 if om.expire_timestamp_ms is None else om.expire_timestamp_ms,
    )
    return offset_commit_key(group, topic, partition), _prefixed(version, cr.OFFSET_COMMIT_VALUE, value)


def offset_commit_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    return offset_commit_key(group, topic, partition), None


def group_metadata_key(group: str) -> bytes:
    return _prefixed(GROUP_METADATA_KEY_VERSION, cr.GROUP_METADATA_KEY, cr.GROUP_METADATA_KEY(group=group))


def group_metadata_record(group: ClassicGroup, assignment: dict[str, bytes]) -> tuple[bytes, bytes]:
    """The GroupMetadata record of a classic group (Kafka: newGroupMetadataRecord): every member
    with its subscription for the chosen protocol and its assignment."""
    MM = cr.GROUP_METADATA_VALUE.MemberMetadata
    members = [
        MM(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
           client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
           session_timeout=m.session_timeout_ms, subscription=m.metadata(group.protocol_name),
           assignment=assignment[m.member_id])
        for m in group.members.values()
    ]
    value = cr.GROUP_METADATA_VALUE(
        protocol_type=group.protocol_type or "", generation=group.generation_id,
        protocol=group.protocol_name, leader=group.leader_id,
        current_state_timestamp=-1 if group.current_state_timestamp is None else group.current_state_timestamp,
        members=members,
    )
    return group_metadata_key(group.group_id), _prefixed(GROUP_METADATA_VALUE_VERSION,
                                                        cr.GROUP_METADATA_VALUE, value)


def group_metadata_tombstone(group: str) -> tuple[bytes, None]:
    return group_metadata_key(group), None


def decode_record(key: bytes | memoryview | None,
                  value: bytes | memoryview | None) -> OffsetCommitRecord | GroupMetadataRecord | None:
    """Decode one __consumer_offsets record; None for record types this coordinator does not keep.

    Raises ValueError for a record that cannot be read (Kafka fails the load in that case)."""
    if key is None or len(key) < 2:
        raise ValueError("__consumer_offsets record without a key")
    key = bytes(key)
    (kv,) = struct.unpack_from(">h", key, 0)
    try:
        if kv in (0, 1):
            k = decode(cr.OFFSET_COMMIT_KEY, kv, key, 2)
            if value is None:
                return OffsetCommitRecord(k.group, k.topic, k.partition, None)
            v, vv = _value(cr.OFFSET_COMMIT_VALUE, value)
            expire = v.expire_timestamp if vv == 1 and v.expire_timestamp != -1 else None
            return OffsetCommitRecord(k.group, k.topic, k.partition, OffsetAndMetadata(
                v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, expire))
        if kv == 2:
            gk = decode(cr.GROUP_METADATA_KEY, kv, key, 2)
            if value is None:
                return GroupMetadataRecord(gk.group, None)
            gv, _ = _value(cr.GROUP_METADATA_VALUE, value)
            return GroupMetadataRecord(gk.group, gv)
    except Exception as e:  # DecodeError, unknown value version
        raise ValueError(f"unreadable __consumer_offsets record (key version {kv}): {e}") from None
    return None


def _value(schema: Schema[M], value: bytes | memoryview) -> tuple[M, int]:
    buf = bytes(value)
    (version,) = struct.unpack_from(">h", buf, 0)
    return decode(schema, version, buf, 2, exact=False), version
