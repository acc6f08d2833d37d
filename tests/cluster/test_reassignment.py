"""Partition reassignment on a minibroker cluster with Kafka's own tool (KIP-455; issue 29): Kafka's
`kafka-reassign-partitions --execute/--verify/--list/--cancel` against our controller and brokers.
A replicated partition moves from [1, 2] to [2, 3] while its new replica's fetches fail (so the
move is held in progress: `kafka-topics --describe` shows Adding/Removing Replicas, `--list` lists
it), then completes when they succeed again; the replication factor goes 2 -> 3 -> 2; a held move
is cancelled. Every record produced before and during a move is read back afterwards, and the
broker a partition left deletes its directory (the `-delete` rename, then the removal after
file.delete.delay.ms). One cluster for the module."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition

from minibroker.cluster_testing import poll
from minibroker.testing import Cluster
from reference import kafka_reference as kr

pytestmark = pytest.mark.minibroker_cluster(brokers=3, console=True, overrides={
    # the `-delete` directories of moved replicas go within seconds (Kafka's default: a minute)
    "log.segment.delete.delay.ms": 500, "log.retention.check.interval.ms": 500})


@contextlib.contextmanager
def held(c: Cluster, topic: str, replica: int = 3) -> Iterator[None]:
    """The new replica's fetches from the leader (broker 1: of `topic` and the others it leads)
    fail while inside: the move stays in
    progress. A fault on broker 1's console (issue 32) rather than a paused broker: a SIGSTOPped
    broker still accepts connections, and Kafka's tools bootstrapping at it, or sending it their
    admin calls, would wait for it (and kafka-reassign-partitions refuses a fenced target)."""
    fault = http(c, "POST", "/api/faults", {"api": "Fetch", "client_id": f"broker-{replica}-fetcher-0",
                                            "error": "NOT_LEADER_OR_FOLLOWER", "count": None})
    try:
        yield
    finally:
        http(c, "DELETE", f"/api/faults/{fault['id']}")


def http(c: Cluster, method: str, path: str, body: dict[str, object] | None = None) -> dict[str, object]:
    assert c.console_url is not None
    req = urllib.request.Request(c.console_url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=90) as r:
        out = json.loads(r.read() or b"null")
    return out if isinstance(out, dict) else {}


def new_topic(c: Cluster, *assignment: list[int]) -> str:
    name = f"r-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=len(assignment), replica_assignment=list(assignment))])[name].result(30)
    for p, replicas in enumerate(assignment):
        c.wait_for_isr(name, p, replicas)
    return name


def produce(c: Cluster, topic: str, values: list[bytes]) -> None:
    acked: list[bytes] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000})
    for v in values:
        p.produce(topic, value=v, partition=0,
                  on_delivery=lambda err, m: acked.append(m.value()) if err is None else None)
        p.poll(0)
    assert p.flush(90) == 0
    assert acked == values


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


def tool(c: Cluster, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = kr.run_tool(name, ["--bootstrap-server", c.bootstrap, *args], timeout=120)
    if check:
        assert r.returncode == 0, f"{name} {args} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def plan(tmp_path: Path, topic: str, replicas: list[int]) -> str:
    path = tmp_path / f"{topic}-{'-'.join(map(str, replicas))}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}))
    return str(path)


def reassign(c: Cluster, mode: str, path: str, *extra: str) -> str:
    return tool(c, "kafka-reassign-partitions", "--reassignment-json-file", path, f"--{mode}", *extra).stdout


def wait_replicas(c: Cluster, topic: str, replicas: list[int]) -> None:
    poll(lambda: c.partition(topic).replicas == tuple(replicas) and c.isr(topic, 0) == sorted(replicas) or None,
         f"{topic}-0 on {replicas}", timeout=90)


def partition_dirs(c: Cluster, node: int, topic: str) -> list[str]:
    return sorted(d.name for d in c.brokers[node].data_dir.iterdir() if d.name.startswith(f"{topic}-0"))


def assert_moved_away(c: Cluster, node: int, topic: str) -> None:
    """The replica's directory was renamed `-delete` and is removed after file.delete.delay.ms."""
    poll(lambda: partition_dirs(c, node, topic) == [] or None, f"{topic}-0 deleted on broker {node}", timeout=60)


def test_a_held_move_is_listed_described_then_completes(kafka_cluster: Cluster, tmp_path: Path) -> None:
    c = kafka_cluster
    topic = new_topic(c, [1, 2])
    before = [f"before-{i}".encode() for i in range(200)]
    produce(c, topic, before)
    with held(c, topic):
        out = reassign(c, "execute", plan(tmp_path, topic, [2, 3]))
        assert f"Successfully started partition reassignment for {topic}-0" in out
        assert '"replicas":[1,2]' in out  # the rollback plan: the current assignment
        during = [f"during-{i}".encode() for i in range(100)]
        produce(c, topic, during)
        described = tool(c, "kafka-topics", "--describe", "--topic", topic).stdout
        assert f"Topic: {topic}\tPartition: 0\tLeader: 1\tReplicas: 2,3,1\tIsr: 1,2\t" \
               "Adding Replicas: 3\tRemoving Replicas: 1\t" in described, described
        listed = tool(c, "kafka-reassign-partitions", "--list").stdout
        assert f"{topic}-0: replicas: 2,3,1. adding: 3. removing: 1." in listed, listed
        verify = reassign(c, "verify", plan(tmp_path, topic, [2, 3]))
        assert f"Reassignment of partition {topic}-0 is still in progress." in verify, verify
        # the leader's console: the new replica is a follower it knows, out of the ISR, lagging
        (mine,) = [p for p in http(c, "GET", "/api/replication")["partitions"]  # type: ignore[union-attr]
                   if p["topic"] == topic]
        assert (mine["role"], mine["replicas"], mine["isr"]) == ("leader", [2, 3, 1], [1, 2])
        assert [(f["node_id"], f["in_isr"]) for f in mine["followers"]] == [(2, True), (3, False)]
    wait_replicas(c, topic, [2, 3])
    verify = reassign(c, "verify", plan(tmp_path, topic, [2, 3]))
    assert f"Reassignment of partition {topic}-0 is completed." in verify, verify
    assert c.leader(topic) == 2  # the leader left: the first target replica in the ISR leads
    assert_moved_away(c, 1, topic)
    assert consume(c, topic, 300) == before + during


def test_the_replication_factor_grows_and_shrinks(kafka_cluster: Cluster, tmp_path: Path) -> None:
    c = kafka_cluster
    topic = new_topic(c, [1, 2])
    produce(c, topic, [b"a%d" % i for i in range(100)])
    refused = tool(c, "kafka-reassign-partitions", "--reassignment-json-file", plan(tmp_path, topic, [1, 2, 3]),
                   "--execute", "--disallow-replication-factor-change", check=False)
    assert f"{topic}-0: The replication factor is changed from 2 to 3" in refused.stdout + refused.stderr
    reassign(c, "execute", plan(tmp_path, topic, [1, 2, 3]))
    wait_replicas(c, topic, [1, 2, 3])
    produce(c, topic, [b"b%d" % i for i in range(100)])
    reassign(c, "execute", plan(tmp_path, topic, [2, 3]))  # removing a replica completes at once
    wait_replicas(c, topic, [2, 3])
    assert_moved_away(c, 1, topic)
    produce(c, topic, [b"c%d" % i for i in range(100)])
    assert consume(c, topic, 300) == [b"%s%d" % (k, i) for k in (b"a", b"b", b"c") for i in range(100)]


def test_a_held_move_is_cancelled(kafka_cluster: Cluster, tmp_path: Path) -> None:
    c = kafka_cluster
    topic = new_topic(c, [1, 2])
    produce(c, topic, [b"x%d" % i for i in range(50)])
    with held(c, topic):
        path = plan(tmp_path, topic, [1, 3])
        reassign(c, "execute", path)
        assert c.partition(topic).replicas == (1, 3, 2)
        poll(lambda: partition_dirs(c, 3, topic) == [f"{topic}-0"] or None, "broker 3's new replica")
        out = reassign(c, "cancel", path)
        assert f"Successfully cancelled partition reassignment for: {topic}-0" in out, out
        assert c.partition(topic).replicas == (1, 2)
    # broker 3 made the new replica's log when the move started, and deletes it
    assert_moved_away(c, 3, topic)
    assert tool(c, "kafka-reassign-partitions", "--list").stdout.strip() == "No partition reassignments found."
    assert consume(c, topic, 50) == [b"x%d" % i for i in range(50)]


def test_a_broker_down_while_its_replica_moved_away_deletes_it_at_start(kafka_cluster: Cluster) -> None:
    """Kafka's tool refuses a target broker that is not live, so the move is asked with the admin
    API (kafka-python's alter_partition_reassignments): broker 3, stopped, leaves [1, 3] for
    [1, 2]; started again, it finds from the metadata that it no longer holds the partition."""
    c = kafka_cluster
    topic = new_topic(c, [1, 3])
    produce(c, topic, [b"y%d" % i for i in range(20)])
    c.stop_broker(3)
    admin = KafkaAdminClient(bootstrap_servers=f"{c.brokers[1].bootstrap},{c.brokers[2].bootstrap}")
    try:
        assert admin.alter_partition_reassignments({KTopicPartition(topic, 0): [1, 2]}) == {
            KTopicPartition(topic, 0): None}
    finally:
        admin.close()
    wait_replicas(c, topic, [1, 2])
    assert partition_dirs(c, 3, topic) == [f"{topic}-0"]  # still there while broker 3 is down
    c.start_broker(3)
    assert_moved_away(c, 3, topic)
    assert consume(c, topic, 20) == [b"y%d" % i for i in range(20)]


def test_a_throttled_move_is_held_to_its_rate_and_verify_clears_the_throttle(
        kafka_cluster: Cluster, tmp_path: Path) -> None:
    """`--execute --throttle R` (KIP-73): leader 1 and new follower 3 each let a throttled
    partition's replication through at R bytes/s, measured over Kafka's 11 windows of 1 s, so
    from nothing about 10 s' worth (plus one fetch of up to replica.fetch.max.bytes, 1 MiB) goes
    at once and the rest waits for the rate to fall. With 1.5 MB at 20 kB/s that is more than
    10 R + 1 MiB: the move cannot end before the first window's bytes expire, 11 s after they
    were sent (bounded below only; a loaded machine makes it longer). Meanwhile a partition
    outside the throttle, led by the same leader and followed by the same follower (one
    fetcher), replicates acks=all at once. `--verify` clears the topic and broker throttles."""
    c = kafka_cluster
    rate = 20_000
    topic = new_topic(c, [1, 2])
    other = new_topic(c, [1, 3])
    value = b"t" * 1000
    produce(c, topic, [value] * 1500)
    started = time.monotonic()
    out = reassign(c, "execute", plan(tmp_path, topic, [1, 3]), "--throttle", str(rate))
    assert f"The inter-broker throttle limit was set to {rate} B/s" in out, out
    described = tool(c, "kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic).stdout
    assert "leader.replication.throttled.replicas=0:1,0:2" in described, described
    assert "follower.replication.throttled.replicas=0:3" in described, described
    produce(c, other, [b"o%d" % i for i in range(50)])  # acks=all: broker 3 fetched it, unthrottled
    assert c.isr(other, 0) == [1, 3]
    verify = reassign(c, "verify", plan(tmp_path, topic, [1, 3]))
    assert f"Reassignment of partition {topic}-0 is still in progress." in verify, verify
    wait_replicas(c, topic, [1, 3])
    took = time.monotonic() - started
    assert took >= 9, f"1.5 MB moved in {took:.1f} s under a {rate} B/s throttle"
    verify = reassign(c, "verify", plan(tmp_path, topic, [1, 3]))
    assert f"Reassignment of partition {topic}-0 is completed." in verify, verify
    assert "Clearing broker-level throttles on brokers 1,2,3" in verify, verify
    assert f"Clearing topic-level throttles on topic {topic}" in verify, verify
    described = tool(c, "kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic).stdout
    assert "throttled" not in described, described
    assert consume(c, topic, 1500) == [value] * 1500
