"""A consumer group's records: what the coordinator writes for a member, and the replay of every
record read back from __consumer_offsets (Kafka: GroupCoordinatorRecordHelpers and
GroupMetadataManager.replay for the KIP-848 record types).

Theory of operation: a consumer group is rebuilt from its records alone. The replay applies one
record at a time to the group it names (creating the group on its first record, dropping it on
its GroupMetadata tombstone); records of one member update that member field by field, so the
last record of each (key) wins, as log compaction would leave it. The encodings themselves are
in consumer_group_records.py.
"""

from __future__ import annotations

from minibroker.coordinator.group import consumer_group_records as rec
from minibroker.coordinator.group.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol import coordinator_records as cr


def member_metadata_record(g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
    """The ConsumerGroupMemberMetadata record of a member (its subscription and identity)."""
    return rec.member_metadata(g.group_id, m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                               client_id=m.client_id, client_host=m.client_host,
                               topic_names=m.subscribed_topic_names, topic_regex=m.subscribed_topic_regex,
                               rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
                               classic=None if m.classic is None else (m.classic.session_timeout_ms,
                                                                       m.classic.protocols))


def current_assignment_record(g: ConsumerGroup, m: ConsumerGroupMember) -> CoordinatorRecord:
    """The ConsumerGroupCurrentMemberAssignment record of a member (its epochs and partitions)."""
    return rec.current_member_assignment(g.group_id, m.member_id, epoch=m.member_epoch,
                                         previous_epoch=m.previous_member_epoch, state=int(m.state),
                                         assigned=m.assigned, pending_revocation=m.pending_revocation,
                                         epochs=m.assignment_epochs)


def replay(groups: dict[str, ConsumerGroup], key: bytes, value: bytes | None) -> None:
    """Apply one record read back from __consumer_offsets to `groups` (Kafka: GroupMetadataManager.replay)."""
    r = rec.decode_consumer_group_record(key, value)
    g = groups.get(r.group)
    if g is None:
        if r.value is None:
            return
        g = groups[r.group] = ConsumerGroup(r.group)
    v = r.value  # the value struct of the record's type (decode_consumer_group_record picks it by type)
    if r.type == rec.GROUP_METADATA:
        if v is None:
            del groups[r.group]
        else:
            assert isinstance(v, cr.ConsumerGroupMetadataValue)
            g.group_epoch, g.metadata_hash = v.epoch, v.metadata_hash
    elif r.type == rec.MEMBER_METADATA:
        assert r.sub_key is not None
        if v is None:
            g.remove_member(r.sub_key)
            return
        assert isinstance(v, cr.ConsumerGroupMemberMetadataValue)
        m = g.members.get(r.sub_key)
        if m is None:
            m = ConsumerGroupMember(r.sub_key)
            g.add_member(m)
        m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
        m.subscribed_topic_names = list(v.subscribed_topic_names)
        m.subscribed_topic_regex = v.subscribed_topic_regex
        m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
        cm = v.classic_member_metadata
        if cm is not None and not cm.session_timeout_ms and not cm.supported_protocols:
            # the tag absent: Kafka reads its empty struct (it writes a null one explicitly, and a
            # classic member always has a session timeout); minibroker before issue 37 left the
            # tag out for a consumer-protocol member, so empty means "not classic" here
            cm = None
        m.classic = None if cm is None else ClassicMemberMetadata(
            cm.session_timeout_ms, [(p.name, bytes(p.metadata)) for p in cm.supported_protocols])
        if m.instance_id is not None:
            g.static_members[m.instance_id] = m.member_id
    elif r.type == rec.TARGET_ASSIGNMENT_MEMBER:
        assert r.sub_key is not None
        if v is None:
            g.target.pop(r.sub_key, None)
        else:
            assert isinstance(v, cr.ConsumerGroupTargetAssignmentMemberValue)
            g.target[r.sub_key] = rec.assignment_of(v.topic_partitions)
    elif r.type == rec.TARGET_ASSIGNMENT_METADATA:
        assert v is None or isinstance(v, cr.ConsumerGroupTargetAssignmentMetadataValue)
        g.assignment_epoch = 0 if v is None else v.assignment_epoch
    elif r.type == rec.CURRENT_MEMBER_ASSIGNMENT:
        assert r.sub_key is not None
        m = g.members.get(r.sub_key)
        if v is None or m is None:
            return
        assert isinstance(v, cr.ConsumerGroupCurrentMemberAssignmentValue)
        epochs = rec.assignment_epochs_of(v.assigned_partitions, v.member_epoch)
        epochs.update(rec.assignment_epochs_of(v.partitions_pending_revocation, v.member_epoch))
        g.update_current(m, epoch=v.member_epoch, state=MemberState(v.state),
                         assigned=rec.assignment_of(v.assigned_partitions),
                         pending=rec.assignment_of(v.partitions_pending_revocation), epochs=epochs)
        m.previous_member_epoch = v.previous_member_epoch
    elif r.type == rec.REGULAR_EXPRESSION:
        assert r.sub_key is not None
        if v is None:
            g.regex_topics.pop(r.sub_key, None)
        else:
            assert isinstance(v, cr.ConsumerGroupRegularExpressionValue)
            g.regex_topics[r.sub_key] = set(v.topics)
