"""KIP-1071 streams groups: the topology, the sticky task assignor and the heartbeat state machine
(minibroker/coordinator/group/streams_group*.py, streams_task_assignor.py), driven with real
StreamsGroupHeartbeat messages. tests/reference/test_kafka_streams.py runs Kafka Streams itself."""

from __future__ import annotations

from minibroker.coordinator.group.streams_group import (
    MemberState,
    StatusCode,
    StreamsGroupState,
    StreamsTopology,
    TasksTuple,
    configure_topology,
)
from minibroker.coordinator.group.streams_task_assignor import AssignorMember, assign
from minibroker_protocol.errors import ErrorCode
from tests.coordinator.streams_group_helpers import (
    TOPICS,
    Q,
    beat,
    join,
    manager,
    tasks,
    word_count_topology,
)


def test_configure_derives_repartition_and_changelog_partitions() -> None:
    topology = StreamsTopology.from_request(word_count_topology())
    c = configure_topology(topology, TOPICS)
    assert c.task_counts == {} and not c.ready
    assert c.missing_internal_topics == ["app-counts-changelog", "app-words-repartition"]
    assert c.internal_topics["app-words-repartition"].partitions == 4  # the writer's task count
    assert c.internal_topics["app-counts-changelog"].partitions == 4  # one per task of subtopology 1
    assert c.internal_topics["app-counts-changelog"].configs == {"cleanup.policy": "compact"}
    ready = configure_topology(topology, {**TOPICS, "app-words-repartition": 4, "app-counts-changelog": 4})
    assert ready.ready and ready.task_counts == {"0": 4, "1": 4}
    wrong = configure_topology(topology, {**TOPICS, "app-words-repartition": 4, "app-counts-changelog": 2})
    assert wrong.incorrectly_partitioned == ["app-counts-changelog"] and not wrong.ready
    assert configure_topology(topology, {}).missing_source_topics == ["in"]


def test_assignor_balances_keeps_owners_and_places_standbys_on_other_processes() -> None:
    counts = {"0": 4, "1": 4}
    first = assign({"a": AssignorMember("p1", TasksTuple())}, counts, {"1"}, 1)
    assert sum(len(ps) for ps in first["a"].active.values()) == 8
    assert first["a"].standby == {}  # no other process to hold a copy
    second = assign({"a": AssignorMember("p1", first["a"]), "b": AssignorMember("p2", TasksTuple())}, counts, {"1"}, 1)
    a_active = {(s, p) for s, ps in second["a"].active.items() for p in ps}
    b_active = {(s, p) for s, ps in second["b"].active.items() for p in ps}
    assert len(a_active) == len(b_active) == 4 and not a_active & b_active
    # every stateful task has its standby on the other process
    for mine, other in (("a", "b"), ("b", "a")):
        stateful = {p for p in second[mine].active.get("1", ())}
        assert stateful == set(second[other].standby.get("1", ()))
    # sticky: the same members again change nothing
    again = assign({"a": AssignorMember("p1", second["a"]), "b": AssignorMember("p2", second["b"])}, counts, {"1"}, 1)
    assert again == second


def test_join_reports_missing_internal_topics_then_assigns() -> None:
    mgr = manager()
    r = join(mgr, "a", "p1", TOPICS)
    assert r.error_code == 0 and r.member_epoch == 1 and tasks(r) == {}
    assert [s.status_code for s in r.status or []] == [StatusCode.MISSING_INTERNAL_TOPICS]
    assert mgr.groups["app"].state() is StreamsGroupState.NOT_READY
    topics = {**TOPICS, "app-words-repartition": 4, "app-counts-changelog": 4}
    r = beat(mgr, "a", 1, topics)
    assert r.member_epoch == 2 and r.status is None
    assert tasks(r) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert mgr.groups["app"].state() is StreamsGroupState.STABLE


def test_second_member_gets_tasks_only_after_the_first_revoked_them() -> None:
    mgr = manager()
    topics = {**TOPICS, "app-words-repartition": 4, "app-counts-changelog": 4}
    ra = join(mgr, "a", "p1", topics)
    a_epoch = ra.member_epoch
    rb = join(mgr, "b", "p2", topics)
    assert rb.member_epoch == a_epoch + 1
    assert tasks(rb) == {}  # everything is still a's
    m_b = mgr.groups["app"].members["b"]
    assert m_b.state is MemberState.UNRELEASED_TASKS
    # a is told to keep half: it stays at its epoch until it reports it let go
    ra = beat(mgr, "a", a_epoch, topics)
    assert ra.member_epoch == a_epoch
    kept = tasks(ra)
    assert sum(len(v) for v in kept.values()) == 4
    assert mgr.groups["app"].members["a"].state is MemberState.UNREVOKED_TASKS
    assert mgr.groups["app"].state() is StreamsGroupState.RECONCILING
    ra = beat(mgr, "a", a_epoch, topics, active=kept)
    assert ra.member_epoch == rb.member_epoch
    rb = beat(mgr, "b", rb.member_epoch, topics)
    got = tasks(rb)
    assert sum(len(v) for v in got.values()) == 4
    assert not {(s, p) for s, ps in got.items() for p in ps} & {(s, p) for s, ps in kept.items() for p in ps}
    assert mgr.groups["app"].state() is StreamsGroupState.STABLE


def test_epochs_members_and_requests_are_checked() -> None:
    mgr = manager()
    topics = {**TOPICS, "app-words-repartition": 4, "app-counts-changelog": 4}
    r = join(mgr, "a", "p1", topics)
    assert beat(mgr, "a", r.member_epoch + 5, topics).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(mgr, "nobody", 1, topics).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    no_topology = mgr.heartbeat(Q(group_id="app", member_id="c", member_epoch=0, endpoint_information_epoch=0,
                                  rebalance_timeout_ms=30000, process_id="p"), "c", "/h", topics)
    assert no_topology.error_code == ErrorCode.INVALID_REQUEST
    assert no_topology.error_message == "Topology must be non-null when joining the group."
    # leaving bumps the group epoch; the group is empty afterwards
    before = mgr.groups["app"].group_epoch
    left = beat(mgr, "a", -1, topics)
    assert left.member_epoch == -1 and mgr.groups["app"].group_epoch == before + 1
    assert mgr.groups["app"].state() is StreamsGroupState.EMPTY
    assert mgr.list_entries() == [("app", "streams", "Empty", "streams")]
