"""KIP-848 consumer groups in-process (a BrokerServer built over tmp_path with a ManualClock, no network):
per-partition assignment epochs and OffsetCommit at a member's previous epoch, a static member
returning under a new member id, and the expiry of a consumer group's committed offsets.

What Kafka 4.4 answers for the same commits is checked by
tests/reference/test_kip848_commit_epochs_reference.py; these pin the same rules without a JVM.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.coordinator.group import consumer_group_records as cgr
from minibroker_protocol.apis import consumer_group_heartbeat, offset_commit, txn_offset_commit
from minibroker_protocol.errors import ErrorCode
from minibroker_storage.clock import ManualClock
from tests.coordinator.stack import Stack

E = ErrorCode
HB = consumer_group_heartbeat.REQUEST
OC = offset_commit.REQUEST


class Client:
    """One member driven by full heartbeats, as tests/reference/commit_epochs_helpers.py does."""

    def __init__(self, s: Stack, group: str, topics: list[str], *, instance_id: str | None = None,
                 client_id: str = "c", host: str = "/127.0.0.1", member_id: str | None = None) -> None:
        self.s, self.group, self.topics = s, group, topics
        self.instance_id, self.client_id, self.host = instance_id, client_id, host
        self.member_id = member_id or str(uuid.uuid4())
        self.epoch = 0
        self.owned: dict[uuid.UUID, set[int]] = {}

    def beat(self, **changes: Any) -> Any:
        first = self.epoch == 0
        req = HB(group_id=self.group, member_id=self.member_id, member_epoch=self.epoch,
                 instance_id=self.instance_id, rebalance_timeout_ms=30_000 if first else -1,
                 subscribed_topic_names=self.topics if first else None,
                 topic_partitions=[HB.TopicPartitions(topic_id=t, partitions=sorted(ps))
                                   for t, ps in self.owned.items()])
        for k, v in changes.items():
            setattr(req, k, v)
        r = self.s.groups.consumer_groups.heartbeat(req, 1, self.client_id, self.host)
        assert r.error_code == 0, (r.error_code, r.error_message)
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = {tp.topic_id: set(tp.partitions) for tp in r.assignment.topic_partitions if tp.partitions}
        return r

    def leave(self, epoch: int) -> None:
        r = self.s.groups.consumer_groups.heartbeat(
            HB(group_id=self.group, member_id=self.member_id, member_epoch=epoch, instance_id=self.instance_id),
            1, self.client_id, self.host)
        assert r.error_code == 0

    def partitions(self) -> set[int]:
        return {p for ps in self.owned.values() for p in ps}

    def commit(self, epoch: int, partitions: list[int], topic: str = "t", version: int = 9) -> list[int]:
        req = OC(group_id=self.group, generation_id_or_member_epoch=epoch, member_id=self.member_id,
                 topics=[OC.OffsetCommitRequestTopic(name=topic, partitions=[
                     OC.OffsetCommitRequestPartition(partition_index=p, committed_offset=5, committed_metadata="")
                     for p in partitions])])
        got = self.s.groups.commit_offsets(req, version)
        return [got[(topic, p)] for p in partitions]

    def txn_commit(self, epoch: int, partitions: list[int]) -> list[int]:
        T = txn_offset_commit.REQUEST
        req = T(transactional_id="tx", group_id=self.group, producer_id=7, producer_epoch=0, generation_id_or_member_epoch=epoch,
                member_id=self.member_id, topics=[T.TxnOffsetCommitRequestTopic(name="t", partitions=[
                    T.TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=5, committed_metadata="")
                    for p in partitions])])
        got = self.s.groups.commit_transactional_offsets(req)
        return [got[("t", p)] for p in partitions]


def settle(*clients: Client, rounds: int = 6) -> None:
    for _ in range(rounds):
        for c in clients:
            c.beat()


def group(s: Stack, gid: str = "g") -> Any:
    return s.groups.consumer_groups.groups[gid]


def current_assignment_records(s: Stack, gid: str) -> list[Any]:
    part = s.groups.store.partition_for(gid)
    out = []
    for k, v in s.groups.store.load_partition(part):
        if k is not None and cgr.is_consumer_group_record(k):
            r = cgr.decode_consumer_group_record(k, v)
            if r.type == cgr.CURRENT_MEMBER_ASSIGNMENT and r.value is not None:
                out.append(r)
    return out


async def test_a_commit_at_the_previous_epoch_is_checked_partition_by_partition(tmp_path):
    s = await Stack(tmp_path / "d").start()
    try:
        s.topics.create("t", 2)
        a, b = Client(s, "g", ["t"]), Client(s, "g", ["t"])
        a.beat()
        assert (a.epoch, a.partitions()) == (1, {0, 1})
        b.beat()
        settle(a, b)
        assert (a.epoch, b.epoch) == (2, 2) and len(a.partitions()) == len(b.partitions()) == 1
        [y], [x] = a.partitions(), b.partitions()
        tid = s.topics.get("t").topic_id
        m = group(s).members[a.member_id]
        assert (m.previous_member_epoch, m.assignment_epochs) == (1, {(tid, y): 1})
        assert group(s).members[b.member_id].assignment_epochs == {(tid, x): 2}
        # the record carries them (Kafka 4.3+: the tagged AssignmentEpochs of each topic)
        last_a = [r for r in current_assignment_records(s, "g") if r.sub_key == a.member_id][-1]
        assert [(tp.partitions, tp.assignment_epochs) for tp in last_a.value.assigned_partitions] == [([y], [1])]

        def answers() -> list[list[int]]:
            return [a.commit(2, [y]), a.commit(1, [y]), a.commit(1, [x]), a.commit(1, [y, x]), a.commit(3, [y]),
                    a.commit(0, [y]), b.commit(1, [x]), a.txn_commit(1, [y]), a.txn_commit(1, [x]),
                    a.txn_commit(3, [y])]

        stale, gen = E.STALE_MEMBER_EPOCH, E.ILLEGAL_GENERATION
        expected = [[0], [0], [stale], [stale, stale], [stale], [stale], [stale], [0], [gen], [gen]]
        assert answers() == expected
        s = await s.reopen()  # the epochs come back from the records
        a.s = b.s = s
        assert group(s).members[a.member_id].assignment_epochs == {(tid, y): 1}
        assert answers() == expected
    finally:
        await s.stop()


async def test_partitions_being_revoked_keep_their_assignment_epoch(tmp_path):
    s = await Stack(tmp_path / "d").start()
    try:
        s.topics.create("t", 2)
        a, b = Client(s, "g", ["t"]), Client(s, "g", ["t"])
        a.beat()
        b.beat()
        kept = set(a.owned[next(iter(a.owned))])
        r = a.beat(topic_partitions=None)  # a lightweight heartbeat: A is told to revoke, and has not
        assert r.member_epoch == 1
        m = group(s).members[a.member_id]
        assert m.state.name == "UNREVOKED_PARTITIONS" and len(m.pending_revocation) == 1
        [x] = {0, 1} - {p for ps in m.assigned.values() for p in ps}
        assert sorted(m.assignment_epochs.values()) == [1, 1]
        assert a.commit(1, [x]) == [0] and a.commit(0, [x]) == [E.STALE_MEMBER_EPOCH]
        assert kept  # A still owned both when told
    finally:
        await s.stop()


async def test_a_static_member_back_under_a_new_id_keeps_the_epoch_and_partitions(tmp_path):
    """Last session's fix (GroupMetadataManager.hasMemberSubscriptionChanged): a new client id or
    host does not bump the group epoch; a new subscription, regex or assignor does."""
    s = await Stack(tmp_path / "d").start()
    try:
        s.topics.create("t", 4)
        s.topics.create("u", 1)
        a = Client(s, "g", ["t"], instance_id="i-a", client_id="app-1", host="/10.0.0.1")
        b = Client(s, "g", ["t"])
        a.beat()
        b.beat()
        settle(a, b)
        g = group(s)
        epoch, a_parts, b_parts = g.group_epoch, a.partitions(), b.partitions()
        assert len(a_parts) == len(b_parts) == 2 and g.state.value == "Stable"
        a.leave(-2)  # a static member's temporary leave: it keeps its partitions
        assert g.group_epoch == epoch
        back = Client(s, "g", ["t"], instance_id="i-a", client_id="app-1-restarted", host="/10.0.0.2")
        back.beat()
        settle(back, b)
        assert a.member_id not in g.members and back.member_id in g.members
        assert g.group_epoch == epoch and back.epoch == b.epoch == epoch
        assert (back.partitions(), b.partitions()) == (a_parts, b_parts)
        m = g.members[back.member_id]
        assert (m.client_id, m.client_host) == ("app-1-restarted", "/10.0.0.2")
        assert set(m.assignment_epochs.values()) == {0}  # reset at the static leave (Kafka: same)
        assert back.commit(epoch, sorted(a_parts)) == [0, 0]
        # a heartbeat with a new client id only: still no bump
        back.client_id = "app-1-again"
        back.beat()
        assert g.group_epoch == epoch
        # what the assignment depends on does bump it, once per change
        back.beat(subscribed_topic_names=["t", "u"])
        assert g.group_epoch == epoch + 1
        back.beat(subscribed_topic_regex="^u$")
        assert g.group_epoch == epoch + 2
        back.beat(server_assignor="range")
        assert g.group_epoch == epoch + 3 and g.assignor_name == "range"
    finally:
        await s.stop()


async def test_a_static_member_leaving_while_revoking_releases_what_it_revokes(tmp_path):
    s = await Stack(tmp_path / "d").start()
    try:
        s.topics.create("t", 2)
        a, b = Client(s, "g", ["t"], instance_id="i-a"), Client(s, "g", ["t"])
        a.beat()
        b.beat()
        a.beat(topic_partitions=None)  # told to revoke one partition; it has not yet
        m = group(s).members[a.member_id]
        assert m.state.name == "UNREVOKED_PARTITIONS"
        [x] = {p for ps in m.pending_revocation.values() for p in ps}
        b.beat()
        assert b.partitions() == set()  # x is still A's
        a.leave(-2)
        assert m.pending_revocation == {} and set(m.assignment_epochs.values()) == {0}
        b.beat()
        assert b.partitions() == {x}  # Kafka 4.4 releases it at the static leave
    finally:
        await s.stop()


async def test_consumer_group_offsets_expire_as_kafkas_do(tmp_path):
    clock = ManualClock()
    s = await Stack(tmp_path / "d", {"offsets.retention.minutes": 1}, clock).start()
    try:
        s.topics.create("t", 1)
        s.topics.create("u", 1)
        a = Client(s, "g", ["t"])
        a.beat()
        assert a.commit(a.epoch, [0], "t") == [0] and a.commit(a.epoch, [0], "u") == [0]
        clock.advance(30_000)
        assert s.groups.cleanup_group_metadata() == 0
        clock.advance(30_000)
        # a minute after the commit: the topic nobody subscribes to goes, the subscribed one stays
        assert s.groups.cleanup_group_metadata() == 1
        assert s.groups.committed("g", "u", 0) is None and s.groups.committed("g", "t", 0) is not None
        a.leave(-1)
        assert group(s).state.value == "Empty"
        # retention counts from the commit, not from when the group became Empty (Kafka 4.4)
        assert s.groups.cleanup_group_metadata() == 1
        assert "g" not in s.groups.consumer_groups.groups and s.groups.committed("g", "t", 0) is None
        s = await s.reopen()
        assert "g" not in s.groups.consumer_groups.groups and s.groups.committed("g", "t", 0) is None
        # an Empty consumer group with no offsets at all goes at the next check
        c = Client(s, "h", ["t"])
        c.beat()
        c.leave(-1)
        assert "h" in s.groups.consumer_groups.groups
        assert s.groups.cleanup_group_metadata() == 0 and "h" not in s.groups.consumer_groups.groups
    finally:
        await s.stop()
