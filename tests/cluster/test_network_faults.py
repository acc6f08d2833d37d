"""Faults that reach any broker of a cluster, and network partitions inside it (issue 32): a
request fault set for node 2 acts in node 2's process and is counted there; `replica.fetch.cut`
takes a follower out of the ISR (acks=all with min.insync.replicas answers NOT_ENOUGH_REPLICAS)
until removed; `controller.cut` gets a leader fenced and its leadership moved, and nothing
acknowledged is lost when it rejoins. Real clients (confluent-kafka, kafka-python) on one
module-scoped cluster of three brokers; the HTTP path through broker 1's console."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer

from minibroker.testing import Cluster

pytestmark = pytest.mark.minibroker_cluster(brokers=3, console=True)


def new_topic(c: Cluster, config: dict[str, str] | None = None, leader: int | None = None) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config=config or {})])[name].result(30)
    c.wait_for_isr(name, 0, [1, 2, 3])
    if leader is not None and c.leader(name) != leader:
        c.move_leader(name, 0, leader)
    return name


def produce(bootstrap: str, topic: str, values: list[bytes], **config: str | int | bool
            ) -> tuple[list[bytes], list[KafkaError]]:
    """(the values acknowledged, in order; the errors of the others)."""
    acked: list[bytes] = []
    errors: list[KafkaError] = []

    def done(err: KafkaError | None, m: object) -> None:
        if err is None:
            acked.append(m.value())  # type: ignore[attr-defined]
        else:
            errors.append(err)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000, **config})
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=done)
        p.poll(0)
    p.flush(120)
    return acked, errors


def consume_all(c: Cluster, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + 120
    try:
        while len(out) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                out.append(m.value())
        # and nothing more beyond what was expected
        end = time.monotonic() + 2
        while time.monotonic() < end:
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                out.append(m.value())
    finally:
        consumer.close()
    return out


def http(c: Cluster, method: str, path: str, body: dict | None = None) -> tuple[int, dict | list]:
    assert c.console_url is not None
    req = urllib.request.Request(c.console_url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=90) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_a_request_fault_on_node_2_fires_on_node_2_only(kafka_cluster: Cluster) -> None:
    """The idempotent producer rides through NOT_LEADER_OR_FOLLOWER answered by node 2 (its
    leader), every record once, in order; the same fault on node 3 never fires (no client
    produces to it), and broker 1 holds neither."""
    c = kafka_cluster
    topic = new_topic(c, leader=2)
    on_2 = c.inject("Produce", node=2, error="NOT_LEADER_OR_FOLLOWER", topic=topic, count=2)
    on_3 = c.faults(3).inject("Produce", error="NOT_LEADER_OR_FOLLOWER", topic=topic, count=2)
    assert on_2 is not None
    with on_2, on_3:
        assert on_2.id // 1_000_000 == 2 and on_3.id // 1_000_000 == 3  # an id names its broker
        values = [b"%03d" % i for i in range(50)]
        acked, errors = produce(c.bootstrap, topic, values)
        assert errors == [] and acked == values
        on_2.wait_fired(2, timeout=30)
        assert on_3.fired == 0
        assert c.faults(1).all() == []  # nothing was set on broker 1
        history = c.faults(2).history()
        assert [e["fault"] for e in history].count(on_2.id) == 2
        assert all(e["on"].startswith("Produce") for e in history if e["fault"] == on_2.id)
    assert c.faults(2).all() == [] and c.faults(3).all() == []  # removed on leaving the block
    assert consume_all(c, topic, len(values)) == values


def test_a_follower_cut_off_from_its_leader_leaves_the_isr_and_rejoins(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    topic = new_topic(c, config={"min.insync.replicas": "3"}, leader=1)
    first, errors = produce(c.bootstrap, topic, [b"a%d" % i for i in range(10)])
    assert errors == [] and len(first) == 10
    with c.inject(kind="replica.fetch.cut", node=3, topic=topic) as cut:  # type: ignore[union-attr]
        cut.wait_fired(1, timeout=30)
        # acks=1 goes (the leader alone); the follower, now behind, falls out of the ISR after
        # replica.lag.time.max.ms (4 s here) — a caught-up follower of an idle partition stays
        # in sync, as in Kafka (Replica.isCaughtUp: at the leader's log end, or fetched lately)
        one, errors = produce(c.bootstrap, topic, [b"b0"], acks=1, **{"enable.idempotence": False})
        assert one == [b"b0"] and errors == []
        assert c.wait_for_isr(topic, 0, [1, 2]) == [1, 2]
        # acks=all with 2 in sync < min.insync.replicas 3: NOT_ENOUGH_REPLICAS, no retry
        acked, errors = produce(c.bootstrap, topic, [b"refused"], retries=0, **{"enable.idempotence": False})
        assert acked == [] and [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS], errors
        assert cut.refresh()["fired"] >= 1
    # removed: the follower fetches from its log end again, catches up, the leader puts it back
    assert c.wait_for_isr(topic, 0, [1, 2, 3]) == [1, 2, 3]
    after, errors = produce(c.bootstrap, topic, [b"c%d" % i for i in range(10)])
    assert errors == [] and len(after) == 10
    assert consume_all(c, topic, 21) == first + [b"b0"] + after


def test_a_partition_cut_on_one_follower_leaves_the_others_alone(kafka_cluster: Cluster) -> None:
    """The cut names a topic: the follower keeps fetching the other topics from the same leader."""
    c = kafka_cluster
    cut_topic, other = new_topic(c, leader=1), new_topic(c, leader=1)
    with c.inject(kind="replica.fetch.cut", node=2, topic=cut_topic, partition=0, action="close") as cut:  # type: ignore[union-attr]
        acked, errors = produce(c.bootstrap, cut_topic, [b"y"], acks=1, **{"enable.idempotence": False})
        assert acked == [b"y"] and errors == []
        c.wait_for_isr(cut_topic, 0, [1, 3])
        acked, errors = produce(c.bootstrap, other, [b"x"])  # acks=all: node 2 fetches it
        assert acked == [b"x"] and errors == []
        assert c.isr(other, 0) == [1, 2, 3]
        assert cut.refresh()["fired"] >= 1
    c.wait_for_isr(cut_topic, 0, [1, 2, 3])


class AckedProducer:
    """One idempotent confluent-kafka producer for a whole test (its producer id allocated before
    any fault), and what it had acknowledged."""

    def __init__(self, bootstrap: str, **config: str | int) -> None:
        self.acked: list[bytes] = []
        self.errors: list[KafkaError] = []
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                           "message.timeout.ms": 180000, **config})

    def _done(self, err: KafkaError | None, m: object) -> None:
        if err is None:
            self.acked.append(m.value())  # type: ignore[attr-defined]
        else:
            self.errors.append(err)

    def send(self, topic: str, values: list[bytes]) -> list[bytes]:
        before = len(self.acked)
        for v in values:
            self.p.produce(topic, value=v, partition=0, on_delivery=self._done)
            self.p.poll(0)
        assert self.p.flush(120) == 0
        return self.acked[before:]


def test_a_leader_cut_off_from_the_controller_is_fenced_and_loses_nothing_acked(kafka_cluster: Cluster) -> None:
    """KIP-101/KIP-279: the isolated leader keeps believing it leads but cannot advance the HW of
    acks=all writes (not even for a producer's retry of a batch it appended: a duplicate waits for
    the HW like the original); the controller fences it and elects another; on rejoining it
    truncates what it appended alone, so every acknowledged record is read once, in order."""
    c = kafka_cluster
    topic = new_topic(c, config={"min.insync.replicas": "2"}, leader=2)
    # its metadata names node 2 as the leader until told otherwise; its requests time out after 5 s
    # and are retried there (the same batches: duplicates to node 2)
    old = AckedProducer(c.bootstrap, **{"request.timeout.ms": 5000})
    assert len(old.send(topic, [b"before-%d" % i for i in range(20)])) == 20
    epoch = c.partition(topic).leader_epoch
    with c.inject(kind="controller.cut", node=2) as cut:  # type: ignore[union-attr]
        cut.wait_fired(1, timeout=30)
        # fenced after broker.session.timeout.ms (3 s here): the leadership moves to the ISR's others
        new = c.wait_for_leader(topic, 0, lambda n: n != 2)
        assert c.partition(topic).leader_epoch > epoch
        assert c.running(2)  # the process runs on: only its link to the controller is cut
        # the old producer still writes to node 2, which appends alone and acknowledges nothing
        for i in range(10):
            old.p.produce(topic, value=b"isolated-%d" % i, partition=0, on_delivery=old._done)
        old.p.flush(15)
        assert len(old.acked) == 20, old.acked[20:]
        # a producer that asks the others finds the new leader and writes there
        others = ",".join(f"{b.host}:{b.port}" for n, b in c.brokers.items() if n != 2)
        fresh = AckedProducer(others)
        assert len(fresh.send(topic, [b"during-%d" % i for i in range(20)])) == 20
        assert c.leader(topic) == new
    # the cut removed: node 2 heartbeats again, is unfenced, follows the new leader and truncates;
    # the old producer's batches, refused there now, go to the new leader
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=120)
    assert old.p.flush(120) == 0
    assert len(fresh.send(topic, [b"after-%d" % i for i in range(20)])) == 20
    acked = old.acked + fresh.acked
    assert fresh.errors == []
    got = consume_all(c, topic, len(acked))
    assert sorted(got) == sorted(acked) and len(set(got)) == len(got)  # each acked record once, nothing else
    for run in (old.acked, fresh.acked):
        assert [v for v in got if v in set(run)] == run  # in the order it was acknowledged
    # read from node 2 as the leader again: its log is the cluster's, nothing it appended alone
    c.move_leader(topic, 0, 2)
    assert consume_all(c, topic, len(got)) == got


def test_faults_on_other_brokers_over_http(kafka_cluster: Cluster) -> None:
    """POST /api/faults on broker 1 with "node": 2 sets the fault in node 2; GET lists it with
    the fired count node 2 counted; wait_fired and DELETE reach it by its id."""
    c = kafka_cluster
    topic = new_topic(c)
    status, fault = http(c, "POST", "/api/faults", {"api": "Metadata", "node": 2, "delay_ms": 1, "count": 0})
    assert status == 201, fault
    assert isinstance(fault, dict) and fault["node"] == 2 and fault["id"] // 1_000_000 == 2
    fid = fault["id"]
    # a Metadata to node 2 alone (kafka-python's consumer asks its bootstrap broker first)
    consumer = KafkaConsumer(bootstrap_servers=f"{c.brokers[2].host}:{c.brokers[2].port}")
    try:
        assert topic in consumer.topics()
    finally:
        consumer.close()
    status, fired = http(c, "GET", f"/api/faults/{fid}?wait_fired=1&timeout=30")
    assert status == 200 and isinstance(fired, dict) and fired["fired"] >= 1, fired
    status, listed = http(c, "GET", "/api/faults")
    assert status == 200 and isinstance(listed, list)
    mine = [f for f in listed if f["id"] == fid]
    assert len(mine) == 1 and mine[0]["fired"] >= 1 and mine[0]["node"] == 2
    assert c.faults(1).all() == []  # counted on node 2, not on broker 1
    # a network kind over HTTP: a follower of the topic's partition cut off from its leader (the
    # leader itself fetches from nobody: cutting it would change nothing)
    follower = next(n for n in (3, 2, 1) if n != c.leader(topic))
    status, cut = http(c, "POST", "/api/faults", {"kind": "replica.fetch.cut", "node": follower, "topic": topic})
    assert status == 201 and isinstance(cut, dict) and cut["id"] // 1_000_000 == follower, cut
    acked, errors = produce(c.bootstrap, topic, [b"z"], acks=1, **{"enable.idempotence": False})
    assert acked == [b"z"] and errors == []
    c.wait_for_isr(topic, 0, lambda isr: follower not in isr)
    status, _ = http(c, "DELETE", f"/api/faults/{cut['id']}")
    assert status == 200
    c.wait_for_isr(topic, 0, [1, 2, 3])
    status, _ = http(c, "DELETE", f"/api/faults/{fid}")
    assert status == 200
    status, gone = http(c, "GET", f"/api/faults/{fid}")
    assert status == 404, gone
    # a cut with an action it does not take, a broker the cluster does not have: 400
    status, err = http(c, "POST", "/api/faults", {"kind": "controller.cut", "node": 2, "error": "NETWORK_EXCEPTION"})
    assert status == 400, err
    status, err = http(c, "POST", "/api/faults", {"api": "Produce", "node": 9, "error": "NOT_LEADER_OR_FOLLOWER"})
    assert status == 400 and "node id 9" in str(err), err
