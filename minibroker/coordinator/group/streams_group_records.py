"""The KIP-1071 streams-group records of __consumer_offsets, as Kafka 4.4 writes them, and their replay.

A key is an int16 record type followed by the key struct at version 0; a value is an int16 value
version (0) followed by the value struct; a null value is a tombstone (Kafka:
GroupCoordinatorRecordSerde, CoordinatorRecordType). The types (Kafka 4.4 has no type 18, the
StreamsGroupPartitionMetadata of the early KIP-1071 drafts):

    17 StreamsGroupMetadata               (group)          -> group epoch, metadata hash, validated topology epoch
    19 StreamsGroupMemberMetadata         (group, member)  -> identity, process id, endpoint, client tags
    20 StreamsGroupTargetAssignmentMetadata (group)        -> assignment epoch
    21 StreamsGroupTargetAssignmentMember (group, member)  -> target active/standby/warm-up tasks
    22 StreamsGroupCurrentMemberAssignment (group, member) -> epochs, state, owned tasks
    23 StreamsGroupTopology               (group)          -> the topology the members sent

Theory of operation: the group's records are a function of its state (`group_records`), so the
manager writes, after each change, the records whose value differs from what it wrote last
(`StreamsGroupLog.diff`), and tombstones for the keys that are gone. The order is Kafka's
(GroupMetadataManager.streamsGroupHeartbeat, StreamsGroup.createGroupTombstoneRecords): a member's
tombstones go current assignment, target, member metadata; the member and topology records come
before the group epoch, the target members before the assignment epoch, the current assignments
last, so a replay never sees an epoch without what it counts. The replay (`replay`) rebuilds a
group from its records alone, the last record of each key winning, as log compaction leaves it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, cast

from minibroker.coordinator.group.streams_group import (
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    StreamsTopology,
    Subtopology,
    Tasks,
    TasksTuple,
    TopicInfo,
)
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol import streams_group_records as sr
from minibroker_protocol.codec import decode, encode
from minibroker_protocol.schema import Message

_T = TypeVar("_T", bound=Message)


class _GroupKey(Protocol):
    """Every streams-group key struct starts with GroupId."""
    group_id: str


GROUP_METADATA = 17
MEMBER_METADATA = 19
TARGET_ASSIGNMENT_METADATA = 20
TARGET_ASSIGNMENT_MEMBER = 21
CURRENT_MEMBER_ASSIGNMENT = 22
TOPOLOGY = 23
_MEMBER_TYPES = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)

# Kafka: streams.MemberState's byte values (not the consumer groups' 0, 1, 2)
_STATE_BYTES = {MemberState.STABLE: 1, MemberState.UNREVOKED_TASKS: 2, MemberState.UNRELEASED_TASKS: 3,
                MemberState.UNKNOWN: 127}
_STATES = {v: k for k, v in _STATE_BYTES.items()}

# the order records of one change are written in (see the module docstring)
_ORDER = {MEMBER_METADATA: 0, TOPOLOGY: 1, GROUP_METADATA: 2, TARGET_ASSIGNMENT_MEMBER: 3,
          TARGET_ASSIGNMENT_METADATA: 4, CURRENT_MEMBER_ASSIGNMENT: 5}
_TOMBSTONE_ORDER = {CURRENT_MEMBER_ASSIGNMENT: 0, TARGET_ASSIGNMENT_MEMBER: 1, TARGET_ASSIGNMENT_METADATA: 2,
                    MEMBER_METADATA: 3, GROUP_METADATA: 4, TOPOLOGY: 5}


def _key(rtype: int, group: str, member_id: str | None = None) -> bytes:
    schema = sr.BY_TYPE[rtype][0]
    k = schema(group_id=group) if member_id is None else schema(group_id=group, member_id=member_id)
    return struct.pack(">h", rtype) + bytes(encode(schema, 0, k))


def _value(rtype: int, obj: Message) -> bytes:
    return struct.pack(">h", 0) + bytes(encode(sr.BY_TYPE[rtype][1], 0, obj))


def record_type(key: bytes | memoryview) -> int | None:
    """The record type of a key when it is a streams-group record, else None."""
    if len(key) < 2:
        return None
    (rtype,) = struct.unpack_from(">h", bytes(key[:2]), 0)
    return rtype if rtype in sr.BY_TYPE else None


def metadata_hash(topology: StreamsTopology | None, partitions_of: Mapping[str, int]) -> int:
    """A digest of the partition counts of the topics the topology reads and writes: it changes
    when one of them does (Kafka: StreamsGroupMetadataValue.MetadataHash, from Utils.computeGroupHash
    over the topics' hashes; ours is not bit-equal to Kafka's, see docs/differences.md)."""
    if topology is None:
        return 0
    names: set[str] = set()
    for s in topology.subtopologies:
        names.update(s.source_topics)
        names.update(r.name for r in s.repartition_source_topics)
        names.update(c.name for c in s.state_changelog_topics)
    h = hashlib.sha256()
    for n in sorted(names):
        if n in partitions_of:
            h.update(f"{n}\0{partitions_of[n]}\n".encode())
    return int.from_bytes(h.digest()[:8], "big", signed=True)


# -- encoding a group ------------------------------------------------------------------------------
def _topology_value(t: StreamsTopology) -> Message:
    V = sr.STREAMS_GROUP_TOPOLOGY_VALUE

    def info(i: TopicInfo) -> sr.StreamsGroupTopologyValue.TopicInfo:
        return V.TopicInfo(name=i.name, partitions=i.partitions, replication_factor=i.replication_factor,
                           topic_configs=[V.TopicConfig(key=k, value=v) for k, v in sorted(i.configs.items())])
    return V(epoch=t.epoch, subtopologies=[
        V.Subtopology(subtopology_id=s.subtopology_id, source_topics=list(s.source_topics), source_topic_regex=[],
                      state_changelog_topics=[info(i) for i in s.state_changelog_topics],
                      repartition_sink_topics=list(s.repartition_sink_topics),
                      repartition_source_topics=[info(i) for i in s.repartition_source_topics],
                      copartition_groups=[V.CopartitionGroup(source_topics=list(src), source_topic_regex=[],
                                                             repartition_source_topics=list(rep))
                                          for src, rep in s.copartition_groups])
        for s in t.subtopologies])


def _task_ids(tasks: Tasks, struct_cls: type[_T]) -> list[_T]:
    return [struct_cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _member_value(m: StreamsGroupMember) -> Message:
    V = sr.STREAMS_GROUP_MEMBER_METADATA_VALUE
    return V(instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
             rebalance_timeout_ms=m.rebalance_timeout_ms, topology_epoch=m.topology_epoch, process_id=m.process_id,
             user_endpoint=None if m.user_endpoint is None
             else V.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]),
             client_tags=[V.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())])


def _with_epochs(tasks: Tasks, m: StreamsGroupMember) -> list[sr.StreamsGroupCurrentMemberAssignmentValue.TaskIds]:
    """Active TaskIds with their tagged AssignmentEpochs (same order as Partitions), as Kafka 4.4
    writes them."""
    out = _task_ids(tasks, sr.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.TaskIds)
    for t in out:
        t.assignment_epochs = [m.task_epochs.get((t.subtopology_id, p), max(m.member_epoch, 0)) for p in t.partitions]
    return out


def _current_value(m: StreamsGroupMember) -> Message:
    V = sr.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE
    return V(member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
             state=_STATE_BYTES[m.state], active_tasks=_with_epochs(m.assigned.active, m),
             standby_tasks=_task_ids(m.assigned.standby, V.TaskIds),
             warmup_tasks=_task_ids(m.assigned.warmup, V.TaskIds),
             active_tasks_pending_revocation=_with_epochs(m.pending_revocation, m),
             standby_tasks_pending_revocation=[], warmup_tasks_pending_revocation=[])


def _target_value(t: TasksTuple) -> Message:
    V = sr.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE
    return V(active_tasks=_task_ids(t.active, V.TaskIds), standby_tasks=_task_ids(t.standby, V.TaskIds),
             warmup_tasks=_task_ids(t.warmup, V.TaskIds))


def group_records(g: StreamsGroup, persisted: StreamsGroupLog) -> dict[bytes, tuple[int, bytes]]:
    """Every live record of `g`: key -> (record type, value)."""
    out: dict[bytes, tuple[int, bytes]] = {}

    def put(rtype: int, member_id: str | None, value: Message) -> None:
        out[_key(rtype, g.group_id, member_id)] = (rtype, _value(rtype, value))
    if g.topology is not None:
        put(TOPOLOGY, None, _topology_value(g.topology))
    for mid, m in g.members.items():
        put(MEMBER_METADATA, mid, _member_value(m))
    put(GROUP_METADATA, None, sr.STREAMS_GROUP_METADATA_VALUE(
        epoch=g.group_epoch, metadata_hash=persisted.metadata_hash,
        validated_topology_epoch=persisted.validated_topology_epoch,
        last_assignment_configs=None if persisted.last_assignment_configs is None else [
            sr.STREAMS_GROUP_METADATA_VALUE.LastAssignmentConfig(key=k, value=v)
            for k, v in sorted(persisted.last_assignment_configs.items())]))
    for mid, t in g.target.items():
        put(TARGET_ASSIGNMENT_MEMBER, mid, _target_value(t))
    put(TARGET_ASSIGNMENT_METADATA, None, sr.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE(
        assignment_epoch=g.assignment_epoch, assignment_timestamp=persisted.assignment_timestamp))
    for mid, m in g.members.items():
        put(CURRENT_MEMBER_ASSIGNMENT, mid, _current_value(m))
    return out


@dataclass(slots=True)
class StreamsGroupLog:
    """What was last written for one group: its records (key -> (type, value)) and the fields of
    StreamsGroupMetadata/TargetAssignmentMetadata the in-memory group does not hold."""
    written: dict[bytes, tuple[int, bytes]] = field(default_factory=dict)
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: dict[str, str] | None = None
    assignment_timestamp: int = 0

    def diff(self, g: StreamsGroup | None, group_id: str) -> list[CoordinatorRecord]:
        """The records that bring the log from what was written to `g` (None: the group is
        deleted), and remember them as written."""
        now = {} if g is None else group_records(g, self)
        gone = sorted((k for k in self.written if k not in now), key=lambda k: _TOMBSTONE_ORDER[self.written[k][0]])
        changed = sorted((k for k, tv in now.items() if self.written.get(k) != tv), key=lambda k: _ORDER[now[k][0]])
        self.written = now
        return [(k, None) for k in gone] + [(k, now[k][1]) for k in changed]


# -- replay ---------------------------------------------------------------------------------------
def _tasks(ids: list[sr.StreamsGroupCurrentMemberAssignmentValue.TaskIds]
           | list[sr.StreamsGroupTargetAssignmentMemberValue.TaskIds]) -> Tasks:
    return {t.subtopology_id: frozenset(t.partitions) for t in ids if t.partitions}


def _topology_of(v: sr.StreamsGroupTopologyValue) -> StreamsTopology:
    def info(i: sr.StreamsGroupTopologyValue.TopicInfo) -> TopicInfo:
        return TopicInfo(i.name, i.partitions, i.replication_factor, {c.key: c.value for c in i.topic_configs})
    return StreamsTopology(v.epoch, [
        Subtopology(s.subtopology_id, list(s.source_topics), list(s.repartition_sink_topics),
                    [info(i) for i in s.state_changelog_topics], [info(i) for i in s.repartition_source_topics],
                    [(list(c.source_topics), list(c.repartition_source_topics)) for c in s.copartition_groups])
        for s in v.subtopologies])


def replay(groups: dict[str, StreamsGroup], logs: dict[str, StreamsGroupLog], key: bytes, value: bytes | None) -> None:
    """Apply one record read back from __consumer_offsets (Kafka: GroupMetadataManager.replay for
    the streams record types); ValueError when it cannot be read."""
    rtype = record_type(key)
    if rtype is None:
        raise ValueError("not a streams group record")
    key_schema, value_schema = sr.BY_TYPE[rtype]
    try:
        k = decode(key_schema, 0, key, 2)
        v = None if value is None else decode(value_schema, struct.unpack_from(">h", value, 0)[0], value, 2,
                                              exact=False)
    except Exception as e:
        raise ValueError(f"unreadable streams group record (type {rtype}): {e}") from None
    gid = cast(_GroupKey, k).group_id
    mid: str | None = getattr(k, "member_id", None)
    g = groups.get(gid)
    if g is None:
        if v is None:
            return
        g = groups[gid] = StreamsGroup(gid)
    lg = logs.setdefault(gid, StreamsGroupLog())
    if value is None:
        lg.written.pop(key, None)
    else:
        lg.written[key] = (rtype, bytes(value))
    if rtype == GROUP_METADATA:
        if v is None:
            del groups[gid]
            logs.pop(gid, None)
            return
        assert isinstance(v, sr.StreamsGroupMetadataValue)
        g.group_epoch = v.epoch
        lg.metadata_hash, lg.validated_topology_epoch = v.metadata_hash, v.validated_topology_epoch
        lg.last_assignment_configs = (None if v.last_assignment_configs is None
                                      else {c.key: c.value for c in v.last_assignment_configs})
    elif rtype == TOPOLOGY:
        assert v is None or isinstance(v, sr.StreamsGroupTopologyValue)
        g.topology = None if v is None else _topology_of(v)
    elif rtype == TARGET_ASSIGNMENT_METADATA:
        assert v is None or isinstance(v, sr.StreamsGroupTargetAssignmentMetadataValue)
        g.assignment_epoch = 0 if v is None else v.assignment_epoch
        lg.assignment_timestamp = 0 if v is None else v.assignment_timestamp
    elif rtype == MEMBER_METADATA:
        assert mid is not None
        if v is None:
            m_old = g.members.pop(mid, None)
            if m_old is not None and m_old.instance_id and g.static_members.get(m_old.instance_id) == mid:
                del g.static_members[m_old.instance_id]
            return
        assert isinstance(v, sr.StreamsGroupMemberMetadataValue)
        m = g.members.setdefault(mid, StreamsGroupMember(mid))
        m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
        m.rebalance_timeout_ms, m.topology_epoch, m.process_id = v.rebalance_timeout_ms, v.topology_epoch, v.process_id
        m.user_endpoint = None if v.user_endpoint is None else (v.user_endpoint.host, v.user_endpoint.port)
        m.client_tags = {kv.key: kv.value for kv in v.client_tags}
        if m.instance_id:
            g.static_members[m.instance_id] = mid
    elif rtype == TARGET_ASSIGNMENT_MEMBER:
        assert mid is not None
        if v is None:
            g.target.pop(mid, None)
        else:
            assert isinstance(v, sr.StreamsGroupTargetAssignmentMemberValue)
            g.target[mid] = TasksTuple(_tasks(v.active_tasks), _tasks(v.standby_tasks), _tasks(v.warmup_tasks))
    elif rtype == CURRENT_MEMBER_ASSIGNMENT:
        assert mid is not None
        m2 = g.members.get(mid)
        if v is None or m2 is None:
            return
        assert isinstance(v, sr.StreamsGroupCurrentMemberAssignmentValue)
        m2.member_epoch, m2.previous_member_epoch = v.member_epoch, v.previous_member_epoch
        m2.state = _STATES.get(v.state, MemberState.UNKNOWN)
        m2.assigned = TasksTuple(_tasks(v.active_tasks), _tasks(v.standby_tasks), _tasks(v.warmup_tasks))
        m2.pending_revocation = _tasks(v.active_tasks_pending_revocation)
        m2.task_epochs = {}
        for t in (*v.active_tasks, *v.active_tasks_pending_revocation):
            epochs = t.assignment_epochs
            ok = epochs is not None and len(epochs) == len(t.partitions)  # none before Kafka 4.4
            for i, p in enumerate(t.partitions):
                m2.task_epochs[(t.subtopology_id, p)] = epochs[i] if ok and epochs is not None \
                    else max(v.member_epoch, 0)
