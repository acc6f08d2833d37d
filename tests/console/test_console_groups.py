"""The console's groups pages (issue 21): a KIP-848 consumer group (group epoch, target assignment
epoch, each member's epoch and current vs target assignment, the assignor) beside a classic group,
each with the rebalance timeline the coordinator recorded; the numbers are checked against what
confluent-kafka's consumers were assigned and against the coordinator's own state."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.coordinator.group.group_events import GroupEvents
from minibroker.testing import BrokerThread
from tests.console.helpers import CONSOLE_OVERRIDES, console_url, get, get_json
from tests.integration.helpers import Deadline, module_broker, unique
from tests.integration.kip848_helpers import Members, assignment, consumer, make_topic


@pytest.fixture(scope="module")
def broker(tmp_path_factory: Any) -> Iterator[BrokerThread]:
    with module_broker(tmp_path_factory, {**CONSOLE_OVERRIDES, "group.initial.rebalance.delay.ms": 0,
                                                       "group.consumer.heartbeat.interval.ms": 500}) as b:
        yield b


@pytest.fixture(scope="module")
def url(broker: BrokerThread) -> str:
    return console_url(broker)


def _names(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((r["topic"], p) for r in rows for p in r["partitions"])


def test_consumer_group_epochs_assignments_and_timeline(url: str, broker: BrokerThread) -> None:
    topic, group = unique("k848"), unique("k848-group")
    make_topic(broker.bootstrap, topic, 4, 20)
    ms = Members([consumer(broker.bootstrap, group, "first")])
    ms.members[0].subscribe([topic])
    ms.spin_until(lambda: ms.sizes() == [4], "the first member owns all 4")
    ms.members.append(consumer(broker.bootstrap, group, "second"))
    ms.members[1].subscribe([topic])
    ms.spin_until(lambda: ms.settled(4), "two members share 4 partitions")
    try:
        g = get_json(f"{url}/api/groups/{group}")
        truth = broker.call(lambda br: (lambda cg: (cg.group_epoch, cg.assignment_epoch, cg.assignor_name,
                                                    {m.client_id: m.member_epoch for m in cg.members.values()}))(
            br.group_coordinator.consumer_groups.groups[group]))
        assert (g["type"], g["group_epoch"], g["assignment_epoch"], g["assignor"]) == ("consumer", *truth[:3])
        assert g["group_epoch"] >= 2 and g["state"] == "Stable"
        by_client = {m["client_id"]: m for m in g["members"]}
        assert {c: m["member_epoch"] for c, m in by_client.items()} == truth[3]
        for c, name in zip(ms.members, ("first", "second"), strict=True):
            m = by_client[name]
            # what the client was told it owns is the coordinator's current assignment, at its target
            assert _names(m["assignment"]) == assignment(c) == _names(m["target"]), m
            assert m["converged"] and m["subscribed_topics"] == [topic]
        events = g["timeline"]
        kinds = [e["event"] for e in events]
        assert kinds.count("GroupEpoch") >= 2 and "TargetAssignment" in kinds and "MemberEpoch" in kinds
        epochs = [e["generation"] for e in events if e["event"] == "GroupEpoch"]
        assert epochs == sorted(epochs) and epochs[-1] == g["group_epoch"]
        assert [e["at_ms"] for e in events] == sorted(e["at_ms"] for e in events)
        status, _, body = get(f"{url}/groups/{group}")
        assert status == 200 and 'data-field="group_epoch">' + str(g["group_epoch"]) in body
        assert 'class="timeline"' in body and 'data-event="TargetAssignment"' in body
        listed = {x["group_id"]: x for x in get_json(f"{url}/api/groups")}
        assert listed[group]["type"] == "consumer" and listed[group]["members"] == 2
    finally:
        ms.close()
    # a member leaving: a new group epoch, recorded
    after = get_json(f"{url}/api/groups/{group}")
    assert after["state"] == "Empty" and any(e["event"] == "GroupEpoch" and "removed" in e["detail"]
                                             for e in after["timeline"])


def test_classic_group_rebalance_timeline(url: str, broker: BrokerThread) -> None:
    from confluent_kafka import Consumer

    topic, group = unique("classic"), unique("classic-group")
    make_topic(broker.bootstrap, topic, 2)
    cs = []
    for name in ("c1", "c2"):
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": name,
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
        c.subscribe([topic])
        cs.append(c)
    deadline = Deadline(30)
    while sorted(len(c.assignment()) for c in cs) != [1, 1]:
        assert deadline, [c.assignment() for c in cs]
        for c in cs:
            c.poll(0.1)
    g = get_json(f"{url}/api/groups/{group}")
    assert g["type"] == "classic" and g["state"] == "Stable"
    assert sorted(_names(m["assignment"]) for m in g["members"]) == sorted(
        [sorted((tp.topic, tp.partition) for tp in c.assignment()) for c in cs])
    kinds = [e["event"] for e in g["timeline"]]
    assert kinds.count("MemberJoined") == 2 and "PreparingRebalance" in kinds and kinds[-1] == "Stable"
    stable = [e for e in g["timeline"] if e["event"] == "Stable"][-1]
    assert stable["generation"] == g["generation"]
    cs[1].close()
    deadline = Deadline(30)
    while len(cs[0].assignment()) != 2:
        assert deadline
        cs[0].poll(0.1)
    after = get_json(f"{url}/api/groups/{group}")["timeline"]
    assert any(e["event"] == "MemberLeft" for e in after) and after[-1]["event"] == "Stable"
    assert after[-1]["generation"] == stable["generation"] + 1
    cs[0].close()


def test_group_events_are_bounded_and_off_until_enabled() -> None:
    clock = iter(range(1000, 100000))
    ev = GroupEvents(lambda: next(clock), per_group=3, max_groups=2)
    ev.record("a", "X", 1, "never %s", "kept")
    assert ev.of("a") == []
    ev.enabled = True
    for i in range(5):
        ev.record("a", "E", i, "n=%d", i)
    assert [e.detail for e in ev.of("a")] == ["n=2", "n=3", "n=4"]
    ev.record("b", "E", 0)
    ev.record("a", "E", 5)  # a is the most recently changed now
    ev.record(str(uuid.uuid4()), "E", 0)  # a third group: b, the least recently changed, goes
    assert ev.of("b") == [] and len(ev.of("a")) == 3


def _metrics(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    status, _, body = get(f"{url}/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(body) for s in fam.samples}


def _describe_share_offsets(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    """(start offset, lag) of partition 0 as DescribeShareGroupOffsets v1 answers (what
    kafka-share-groups.sh --describe prints)."""
    from minibroker_protocol.apis import describe_share_group_offsets as d
    from tests.integration.helpers import RawClient

    R = d.REQUEST
    with RawClient(bootstrap) as c:
        resp = c.call(d.API, 1, R(groups=[R.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
            R.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0])])]))
    p = resp.groups[0].topics[0].partitions[0]
    assert p.error_code == 0
    return p.start_offset, p.lag


def test_share_group_in_flight_records_and_metrics(url: str, broker: BrokerThread) -> None:
    """A confluent-kafka ShareConsumer holds five records: it accepts one, rejects one and keeps
    three acquired; the console shows each record's state, delivery count and lock, and the start
    offset and lag DescribeShareGroupOffsets reports; /metrics counts the group by protocol and state."""
    from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    topic, group = unique("share"), unique("share-group")
    make_topic(broker.bootstrap, topic, 1)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in a.incremental_alter_configs([ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])]).values():
        f.result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(10):
        p.produce(topic, value=f"s{i}".encode(), partition=0)
        p.flush(10)  # one batch per record: an acquisition takes exactly max.poll.records
    before = _metrics(url)
    c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "sharer",
                       "share.acknowledgement.mode": "explicit", "max.poll.records": 5})
    c.subscribe([topic])
    try:
        got: list[Any] = []
        deadline = Deadline(30)
        while not got:
            assert deadline, "the share consumer received nothing"
            got = list(c.poll(0.5))
        offsets = sorted(m.offset() for m in got)
        assert offsets[:2] == [0, 1], offsets
        for m in got:
            if m.offset() == 1:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            elif m.offset() == 3:
                c.acknowledge(m, AcknowledgeType.REJECT)
        c.commit_sync(10)
        truth = broker.call(lambda br: {off: (r.state.name, r.delivery_count, r.member_id) for off, r in next(
            sp for k, sp in br.share_groups.partitions.items() if k[0] == group).in_flight()})
        assert truth[1][0] == "ACKNOWLEDGED" and truth[3][0] == "ARCHIVED" and truth[0][0] == "ACQUIRED", truth
        g = get_json(f"{url}/api/groups/{group}")
        assert (g["type"], g["state"]) == ("share", "Stable")
        (m,) = g["members"]
        assert m["client_id"] == "sharer" and m["subscribed_topics"] == [topic] and m["member_epoch"] >= 1
        assert _names(m["assignment"]) == [(topic, 0)]
        assert truth[0][2] == m["member_id"]
        (sp,) = g["share_partitions"]
        states = [s for s, _, _ in truth.values()]
        assert sp["in_flight"] == {s: states.count(s) for s in ("AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED")}
        assert {r["offset"]: (r["state"], r["delivery_count"], r["member_id"]) for r in sp["records"]} == truth
        assert sp["start_offset"] == 0 and sp["end_offset"] == max(truth) + 1 and sp["high_watermark"] == 10
        assert sp["next_lock_expiry_in_ms"] is not None and 0 < sp["next_lock_expiry_in_ms"] <= 30_000
        assert (sp["start_offset"], sp["lag"]) == _describe_share_offsets(broker.bootstrap, group, topic) == (0, 8)
        status, _, html = get(f"{url}/groups/{group}")
        assert status == 200 and "share (KIP-932)" in html
        assert f'data-state="{topic}-0-acquired">{states.count("ACQUIRED")}<' in html
        assert f'data-lag="{topic}-0">8<' in html
        listed = {x["group_id"]: x for x in get_json(f"{url}/api/groups")}
        assert listed[group]["type"] == "share" and listed[group]["lag"] == 8
        after = _metrics(url)
        share_key = ("kafka_server_group_coordinator_metrics_group_count", (("protocol", "share"),))
        stable_key = ("kafka_server_group_coordinator_metrics_share_group_count", (("state", "Stable"),))
        assert after[share_key] == before[share_key] + 1 and after[stable_key] == before[stable_key] + 1
    finally:
        c.close()
    counts = broker.call(lambda br: (len(br.share_groups.groups), len(br.group_coordinator.consumer_groups.groups),
                                     len((set(br.group_coordinator.groups) | set(br.group_coordinator.offsets))
                                         - set(br.group_coordinator.consumer_groups.groups))))
    final = _metrics(url)
    for protocol, n in zip(("share", "consumer", "classic"), counts, strict=True):
        assert final[("kafka_server_group_coordinator_metrics_group_count", (("protocol", protocol),))] == n
    assert final[("kafka_server_group_coordinator_metrics_share_group_count", (("state", "Empty"),))] >= 1
    assert final[("kafka_coordinator_group_groupmetadatamanager_numgroups", ())] == counts[2]
    assert sum(v for (name, _), v in final.items()
               if name == "kafka_server_group_coordinator_metrics_consumer_group_count") == counts[1]
