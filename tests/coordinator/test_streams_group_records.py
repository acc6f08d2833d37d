"""The KIP-1071 streams-group records of __consumer_offsets (streams_group_records.py): golden
bytes of Kafka 4.4's encoding, the records a heartbeat sequence writes (in Kafka's order), and a
replay of them that gives back the same group. tests/reference/test_streams_group_records.py has
Kafka's dump-log read them and a broker restart keep the group."""

from __future__ import annotations

import struct

from minibroker.coordinator.group import streams_group_records as sgr
from minibroker.coordinator.group.streams_group import StreamsGroupState
from minibroker.coordinator.group.streams_group_manager import StreamsGroupConfig, StreamsGroupManager
from minibroker.coordinator.runtime.keyed_timer import KeyedTimer
from minibroker.coordinator.runtime.partition_writer import CoordinatorRecord
from minibroker_protocol.errors import ErrorCode, KafkaError
from tests.coordinator.streams_group_helpers import LOOP, TOPICS, beat, join, tasks

ALL_TOPICS = {**TOPICS, "app-words-repartition": 4, "app-counts-changelog": 4}


def writing_manager(log: list[CoordinatorRecord]) -> StreamsGroupManager:
    mgr = StreamsGroupManager(StreamsGroupConfig(num_standby_replicas=1), now_ms=lambda: 1_700_000_000_000,
                              other_group_exists=lambda gid: False,
                              write=lambda gid, recs: log.extend(recs))
    mgr.timer = KeyedTimer(LOOP)
    return mgr


def types_of(recs: list[CoordinatorRecord]) -> list[tuple[int, bool]]:
    """(record type, is a tombstone) of each record, in order."""
    return [(struct.unpack_from(">h", k)[0], v is None) for k, v in recs]


def replayed(log: list[CoordinatorRecord]) -> StreamsGroupManager:
    mgr = writing_manager([])
    for k, v in log:
        mgr.replay(k, v)
    mgr.after_load(ALL_TOPICS)
    return mgr


def test_golden_bytes_of_the_group_metadata_and_target_epoch_records() -> None:
    log: list[CoordinatorRecord] = []
    mgr = writing_manager(log)
    join(mgr, "a", "p1", ALL_TOPICS)
    recs = dict(log)
    # key: type 17, then StreamsGroupMetadataKey v0 (GroupId as an int16-length string)
    key = b"\x00\x11" + b"\x00\x03app"
    # value: version 0, Epoch=1, MetadataHash (8 bytes), then the tagged fields: 2 of them,
    # ValidatedTopologyEpoch (tag 0) = 0 and LastAssignmentConfigs (tag 1) = [num.standby.replicas=1]
    value = recs[key]
    assert value is not None
    assert value[:6] == b"\x00\x00" + b"\x00\x00\x00\x01"
    assert value[14:] == (b"\x02" + b"\x00\x04" + b"\x00\x00\x00\x00"
                          + b"\x01\x19" + b"\x02" + b"\x15num.standby.replicas" + b"\x021" + b"\x00")
    # StreamsGroupTargetAssignmentMetadata: type 20; AssignmentEpoch=1, AssignmentTimestamp (tag 0)
    ts = 1_700_000_000_000
    assert recs[b"\x00\x14\x00\x03app"] == (b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x01" + b"\x00\x08"
                                            + ts.to_bytes(8, "big"))


def test_a_join_writes_kafkas_record_types_in_kafkas_order() -> None:
    log: list[CoordinatorRecord] = []
    mgr = writing_manager(log)
    join(mgr, "a", "p1", ALL_TOPICS)
    assert types_of(log) == [(sgr.MEMBER_METADATA, False), (sgr.TOPOLOGY, False), (sgr.GROUP_METADATA, False),
                             (sgr.TARGET_ASSIGNMENT_MEMBER, False), (sgr.TARGET_ASSIGNMENT_METADATA, False),
                             (sgr.CURRENT_MEMBER_ASSIGNMENT, False)]
    # an unchanged heartbeat writes nothing
    n = len(log)
    beat(mgr, "a", 1, ALL_TOPICS)
    assert len(log) == n


def test_replay_gives_back_the_group_with_its_epochs_and_assignments() -> None:
    log: list[CoordinatorRecord] = []
    mgr = writing_manager(log)
    ra = join(mgr, "a", "p1", ALL_TOPICS)
    rb = join(mgr, "b", "p2", ALL_TOPICS)
    ra = beat(mgr, "a", ra.member_epoch, ALL_TOPICS)
    beat(mgr, "a", ra.member_epoch, ALL_TOPICS, active=tasks(ra))
    rb = beat(mgr, "b", rb.member_epoch, ALL_TOPICS)
    g = mgr.groups["app"]
    assert g.state() is StreamsGroupState.STABLE
    # a kept its tasks from epoch 1; c got its own at epoch 2 (Kafka 4.4's AssignmentEpochs)
    assert set(g.members["a"].task_epochs.values()) == {1} and set(g.members["b"].task_epochs.values()) == {2}
    again = replayed(log).groups["app"]
    assert (again.group_epoch, again.assignment_epoch, again.topology) == (g.group_epoch, g.assignment_epoch,
                                                                           g.topology)
    assert again.target == g.target
    for mid, m in g.members.items():
        r = again.members[mid]
        assert (r.member_epoch, r.previous_member_epoch, r.state, r.assigned, r.pending_revocation, r.process_id,
                r.client_id, r.client_host, r.rebalance_timeout_ms, r.task_epochs) == \
            (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation, m.process_id,
             m.client_id, m.client_host, m.rebalance_timeout_ms, m.task_epochs)
    assert again.state() is StreamsGroupState.STABLE
    # the reloaded coordinator accepts the member at its epoch, and writes nothing new for it
    n = len(log)
    reloaded = replayed(log)
    reloaded._write = lambda gid, recs: log.extend(recs)
    assert beat(reloaded, "b", rb.member_epoch, ALL_TOPICS).error_code == 0
    assert len(log) == n


def test_leave_and_delete_write_tombstones_and_the_replay_drops_the_group() -> None:
    log: list[CoordinatorRecord] = []
    mgr = writing_manager(log)
    ra = join(mgr, "a", "p1", ALL_TOPICS)
    n = len(log)
    beat(mgr, "a", -1, ALL_TOPICS)
    # the member's tombstones, the group epoch, then the (empty) target at that epoch, as Kafka 4.4
    assert types_of(log[n:]) == [(sgr.CURRENT_MEMBER_ASSIGNMENT, True), (sgr.TARGET_ASSIGNMENT_MEMBER, True),
                                 (sgr.MEMBER_METADATA, True), (sgr.GROUP_METADATA, False),
                                 (sgr.TARGET_ASSIGNMENT_METADATA, False)]
    assert replayed(log).groups["app"].state() is StreamsGroupState.EMPTY
    assert ra.member_epoch == 1
    n = len(log)
    assert mgr.delete("app") == ErrorCode.NONE
    assert types_of(log[n:]) == [(sgr.TARGET_ASSIGNMENT_METADATA, True), (sgr.GROUP_METADATA, True),
                                 (sgr.TOPOLOGY, True)]
    assert replayed(log).groups == {}


def test_a_failed_write_fails_the_heartbeat_and_is_written_again_later() -> None:
    log: list[CoordinatorRecord] = []
    fail = [True]

    def write(gid: str, recs: list[CoordinatorRecord]) -> None:
        if fail[0]:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, "no leader")
        log.extend(recs)
    mgr = StreamsGroupManager(StreamsGroupConfig(), now_ms=lambda: 0, other_group_exists=lambda gid: False,
                              write=write)
    mgr.timer = KeyedTimer(LOOP)
    assert join(mgr, "a", "p1", ALL_TOPICS).error_code == ErrorCode.NOT_COORDINATOR
    fail[0] = False
    beat(mgr, "a", 1, ALL_TOPICS)
    assert {t for t, _ in types_of(log)} == {sgr.TOPOLOGY, sgr.MEMBER_METADATA, sgr.GROUP_METADATA,
                                             sgr.TARGET_ASSIGNMENT_MEMBER, sgr.TARGET_ASSIGNMENT_METADATA,
                                             sgr.CURRENT_MEMBER_ASSIGNMENT}


def test_a_coordinator_that_loses_the_partition_forgets_the_group_and_its_sessions() -> None:
    """forget() (GroupCoordinator.unload_partition): the group, what was written of it and its
    members' session timers go; the new leader replays the records (after_load restarts them)."""
    log: list[CoordinatorRecord] = []
    mgr = writing_manager(log)
    join(mgr, "a", "p1", ALL_TOPICS)
    assert mgr.timer.is_scheduled(("sg-session", "app", "a"))
    mgr.forget(["app"])
    assert mgr.groups == {} and mgr.logs == {} and not mgr.timer.is_scheduled(("sg-session", "app", "a"))
    moved = replayed(log)
    assert moved.timer.is_scheduled(("sg-session", "app", "a"))
    assert moved.groups["app"].members["a"].member_epoch == 1
