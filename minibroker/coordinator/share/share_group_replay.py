"""A share group rebuilt from its records of __consumer_offsets (Kafka: GroupMetadataManager.replay
of the ShareGroup* record types, KIP-932).

The group coordinator replays the records of a partition it loads (a restart, or the partition's
leadership moving to this broker) into its share groups, which the share-group coordinator serves:
the group comes back with its epoch, members and their subscriptions, target assignment, the
members' current assignments and its initialised share partitions. One record at a time; the last
record of each key wins, as log compaction would leave it. A replayed member has no session
deadline yet (deadline_ms 0): the share-group coordinator's timer gives it a fresh session timeout,
as Kafka's onLoaded does. Encodings: share_group_records.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.coordinator.share import share_group_records as rec
from minibroker_protocol import share_group_records as sr

if TYPE_CHECKING:
    from minibroker.coordinator.share.share_group import ShareGroup


def replay(groups: dict[str, ShareGroup], key: bytes, value: bytes | None) -> None:
    """Apply one share-group record read back from __consumer_offsets to `groups`."""
    from minibroker.coordinator.share.share_group import ShareGroup, ShareMember  # lazy: issue 22

    r = rec.decode_record(key, value)
    g = groups.get(r.group)
    if g is None:
        if r.value is None:
            return
        g = groups[r.group] = ShareGroup(r.group)
    v = r.value
    if r.type == rec.GROUP_METADATA:
        if v is None:
            del groups[r.group]
            return
        assert isinstance(v, sr.ShareGroupMetadataValue)
        g.group_epoch, g.metadata_hash = v.epoch, v.metadata_hash
    elif r.type == rec.MEMBER_METADATA:
        assert r.member_id is not None
        if v is None:
            g.members.pop(r.member_id, None)
            return
        assert isinstance(v, sr.ShareGroupMemberMetadataValue)
        m = g.members.get(r.member_id)
        if m is None:
            m = g.members[r.member_id] = ShareMember(r.member_id, 0, v.client_id, v.client_host, v.rack_id, [])
        m.client_id, m.client_host, m.rack_id = v.client_id, v.client_host, v.rack_id
        m.subscribed = sorted(v.subscribed_topic_names)
    elif r.type == rec.TARGET_ASSIGNMENT_MEMBER:
        assert r.member_id is not None
        if v is None:
            g.target.pop(r.member_id, None)
        else:
            assert isinstance(v, sr.ShareGroupTargetAssignmentMemberValue)
            g.target[r.member_id] = {tp.topic_id: sorted(tp.partitions) for tp in v.topic_partitions}
    elif r.type == rec.TARGET_ASSIGNMENT_METADATA:
        if v is None:
            g.assignment_epoch, g.assigned_at_ms = 0, 0
        else:
            assert isinstance(v, sr.ShareGroupTargetAssignmentMetadataValue)
            g.assignment_epoch, g.assigned_at_ms = v.assignment_epoch, v.assignment_timestamp
    elif r.type == rec.CURRENT_MEMBER_ASSIGNMENT:
        assert r.member_id is not None
        cm = g.members.get(r.member_id)
        if v is None or cm is None:
            return
        assert isinstance(v, sr.ShareGroupCurrentMemberAssignmentValue)
        cm.member_epoch = v.member_epoch
        cm.assignment = {tp.topic_id: sorted(tp.partitions) for tp in v.assigned_partitions}
    elif r.type == rec.STATE_PARTITION_METADATA:
        # the three sets as written (Kafka's replay of ShareGroupStatePartitionMetadataValue):
        # what the admin APIs list after a failover (share_group_state_metadata.py)
        if v is None:
            g.initialized, g.initializing, g.deleting, g.state_metadata_written = {}, {}, {}, False
            return
        assert isinstance(v, sr.ShareGroupStatePartitionMetadataValue)
        g.initializing = {t.topic_id: (t.topic_name, sorted(t.partitions)) for t in v.initializing_topics}
        g.initialized = {t.topic_id: (t.topic_name, sorted(t.partitions)) for t in v.initialized_topics}
        g.deleting = {t.topic_id: t.topic_name for t in v.deleting_topics}
        g.state_metadata_written = True
