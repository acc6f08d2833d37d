"""The `kafka_cluster` fixture (minibroker.pytest_plugin, minibroker.testing.Cluster): one cluster
of processes shared by this module's tests and healed after each; replication seen through it
(a paused follower leaves the ISR while the HW goes on, a killed leader is replaced from the ISR
with nothing acknowledged lost), leadership moved as Kafka's tools move it, and the cluster fault
kinds from the Cluster object and over broker 1's faults HTTP API (issues 29 and 32)."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition

from minibroker.testing import Cluster

pytestmark = pytest.mark.minibroker_cluster(brokers=3, console=True)


def new_topic(c: Cluster, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3, config=config or {})])[name].result(30)
    for p in range(partitions):
        c.wait_for_isr(name, p, [1, 2, 3])
    return name


def produce(c: Cluster, topic: str, values: list[bytes], partition: int = 0) -> list[bytes]:
    acked: list[bytes] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000})
    for v in values:
        p.produce(topic, value=v, partition=partition,
                  on_delivery=lambda err, m: acked.append(m.value()) if err is None else None)
        p.poll(0)
    assert p.flush(90) == 0
    return acked


def consume(c: Cluster, topic: str, expected: int) -> list[bytes]:
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


def test_leader_moves_and_shuffles(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    topic = new_topic(c, partitions=3)
    before = {p: s.leader for p, s in c.partitions(topic).items()}
    assert sorted(before.values()) == [1, 2, 3]  # spread
    to = next(n for n in (1, 2, 3) if n != before[0])
    epoch = c.partition(topic, 0).leader_epoch
    c.move_leader(topic, 0, to)
    after = c.partition(topic, 0)
    assert after.leader == to and after.replicas[0] == to and after.leader_epoch > epoch
    assert set(after.replicas) == {1, 2, 3}
    moved = c.shuffle_leaders([topic], seed=7)
    assert sorted(moved) == [(topic, 0), (topic, 1), (topic, 2)]
    assert {p: s.leader for p, s in c.partitions(topic).items()} == {p: n for (_, p), n in moved.items()}
    with pytest.raises(Exception, match="holds no replica"):
        c.move_leader(topic, 0, 7)


def test_list_partition_reassignments_is_answered_by_our_controller(kafka_cluster: Cluster) -> None:
    """ListPartitionReassignments goes through the broker to our controller (kafka-topics
    --describe asks it first); a reorder completes at once, so nothing is listed afterwards."""
    c = kafka_cluster
    topic = new_topic(c)
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=60000)
    try:
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_reassignments({topic: [0]}) == {}
        c.move_leader(topic, 0, c.partition(topic).replicas[-1])
        assert admin.list_partition_reassignments([KTopicPartition(topic, 0)]) == {}
    finally:
        admin.close()


def test_a_paused_follower_leaves_the_isr_and_the_hw_goes_on(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    topic = new_topic(c, config={"min.insync.replicas": "2"})
    leader = c.leader(topic)
    follower = next(n for n in (1, 2, 3) if n != leader)
    assert len(produce(c, topic, [b"a%d" % i for i in range(10)])) == 10
    assert c.wait_for_high_watermark(topic, 0, 10) == 10
    c.pause(follower)
    try:
        isr = c.wait_for_isr(topic, 0, lambda isr: follower not in isr)
        assert sorted(isr) == sorted(n for n in (1, 2, 3) if n != follower)
        assert len(produce(c, topic, [b"b%d" % i for i in range(10)])) == 10  # 2 in sync >= min.insync
        assert c.wait_for_high_watermark(topic, 0, 20) == 20
    finally:
        c.resume(follower)
    c.wait_for_isr(topic, 0, [1, 2, 3])


def test_a_killed_leader_is_replaced_nothing_lost(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    topic = new_topic(c, config={"min.insync.replicas": "2"})
    leader = c.leader(topic)
    epoch = c.partition(topic).leader_epoch
    first = produce(c, topic, [b"%04d" % i for i in range(200)])
    c.inject(kind="broker.kill", node=leader)
    assert not c.running(leader)
    new = c.wait_for_leader(topic, 0, lambda n: n != leader)
    assert c.partition(topic).leader_epoch > epoch
    assert leader not in c.wait_for_isr(topic, 0, lambda isr: leader not in isr)
    second = produce(c, topic, [b"%04d" % i for i in range(200, 300)])
    got = consume(c, topic, 300)
    assert got == first + second  # every acknowledged record, once, in order
    c.inject(kind="broker.start", node=leader)
    assert c.serves(leader)
    c.wait_for_isr(topic, 0, [1, 2, 3])
    assert new != leader


def test_cluster_fault_kinds_over_http(kafka_cluster: Cluster) -> None:
    c = kafka_cluster
    topic = new_topic(c)
    to = next(n for n in (2, 3) if n != c.leader(topic))
    status, fault = http(c, "POST", "/api/faults", {"kind": "leader.move", "topic": topic, "partition": 0, "node": to})
    assert status == 201, fault
    assert isinstance(fault, dict)
    status, fired = http(c, "GET", f"/api/faults/{fault['id']}?wait_fired=1&timeout=60")
    assert status == 200 and isinstance(fired, dict) and fired["fired"] == 1, fired
    assert c.leader(topic) == to
    # broker.kill of broker 3 from broker 1's console; removing the fault starts it again
    status, kill = http(c, "POST", "/api/faults", {"kind": "broker.kill", "node": 3})
    assert status == 201, kill
    assert isinstance(kill, dict)
    http(c, "GET", f"/api/faults/{kill['id']}?wait_fired=1&timeout=60")
    assert not c.running(3)
    c.wait_for_isr(topic, 0, lambda isr: 3 not in isr)
    status, _ = http(c, "DELETE", f"/api/faults/{kill['id']}")
    assert status in (200, 204)
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=180)
    # a kind that needs what is missing, or names no broker: 4xx with the reason
    status, err = http(c, "POST", "/api/faults", {"kind": "leader.move", "topic": topic})
    assert 400 <= status < 500 and "node" in json.dumps(err), err
    status, err = http(c, "POST", "/api/faults", {"kind": "broker.stop", "node": 9})
    assert 400 <= status < 500 and "no broker with node id 9" in json.dumps(err), err


def test_coordinator_move_over_http(kafka_cluster: Cluster) -> None:
    """coordinator.move: the leadership of the group's __consumer_offsets partition moves to the
    named broker, and FindCoordinator (asked through confluent-kafka's admin) names that broker."""
    from minibroker.coordinator.runtime.coordinator_store import partition_for

    c = kafka_cluster
    topic = new_topic(c)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    p = partition_for(group, len(c.partitions("__consumer_offsets")))
    to = next(n for n in (1, 2, 3) if n != c.leader("__consumer_offsets", p))
    status, fault = http(c, "POST", "/api/faults", {"kind": "coordinator.move", "group_id": group, "node": to})
    assert status == 201, fault
    assert isinstance(fault, dict)
    status, fired = http(c, "GET", f"/api/faults/{fault['id']}?wait_fired=1&timeout=60")
    assert status == 200 and isinstance(fired, dict) and fired["fired"] == 1, fired
    assert c.leader("__consumer_offsets", p) == to
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    deadline = time.monotonic() + 60
    while True:
        desc = admin.describe_consumer_groups([group])[group].result(30)
        if desc.coordinator.id == to or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert desc.coordinator.id == to
    status, err = http(c, "POST", "/api/faults", {"kind": "coordinator.move", "node": to})
    assert 400 <= status < 500 and "group_id or transactional_id" in json.dumps(err), err
