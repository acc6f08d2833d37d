"""The same cluster scenarios on Apache Kafka 4.4 (one controller, three brokers:
reference/kafka_cluster.py) and on minibroker (`python -m minibroker cluster`, through
minibroker.testing.Cluster), driven by the one ClusterOps API, with the same outcomes (issue 29):

- RF 3, min.insync.replicas 2, one follower paused: the ISR shrinks to the two others, acks=all
  writes go on and the HW passes them; resumed, the ISR is whole again.
- the leader killed (kill -9): a new leader from the ISR with a higher epoch, every acknowledged
  record read back once and in order; the killed broker restarted rejoins the ISR. The same while
  the Java 4.4 client (Kafka's kafka-verifiable-producer) and kafka-python produce at once, then
  read by two groups of Kafka's kafka-verifiable-consumer, one classic and one KIP-848.
- leadership moved to a named broker as Kafka's tools move it (AlterPartitionReassignments with
  the replicas reordered, then ElectLeaders PREFERRED).
- automatic preferred-leader rebalancing (auto.leader.rebalance.enable, on by default; the
  interval shortened to LEADER_IMBALANCE_CHECK_S): a killed leader started again leads the
  partitions it is the preferred replica of within the interval.
- unclean leader election (unclean.leader.election.enable; the periodic check shortened through
  Kafka's internal unclean.leader.election.interval.ms): the ISR shrinks to the leader, which
  then dies; the out-of-sync replicas stay without a leader (LEADER_NOT_AVAILABLE) until the
  topic's key is set, then one of them leads and the records only the dead leader had are gone,
  the same offsets and records on both; meanwhile the dead leader's ISR is empty on both (ELR on).
- Eligible Leader Replicas (KIP-966, on by default in Kafka 4.4): RF 3, min.insync.replicas 2, the
  followers killed one by one, then the leader: `kafka-topics --describe` prints the same Leader,
  Isr, Elr and LastKnownElr at each step; the brokers coming back after kill -9 (an unclean
  shutdown) leave the ELR, the followers lead nothing, and the last known leader leads again. A
  follower stopped cleanly instead (SIGTERM) stays in the ELR and leads once the leader is gone.
- the divergent log of KIP-101/KIP-279: a leader with acks=1 records its (paused) followers never
  fetched is killed (kill -9); a follower from the ISR takes over and gets new writes; the old
  leader returns, truncates to the new leader's epoch boundary and catches up: the partition's
  segment files end byte-identical (sha256) on every replica, with the same records readable.
- a follower cut off from its leader (minibroker: the `replica.fetch.cut` fault; Kafka: the
  follower SIGSTOP'ed, the nearest a single host gets without iptables), min.insync.replicas 3:
  out of the ISR, an acks=all write answers NOT_ENOUGH_REPLICAS; healed, back in the ISR and the
  write goes (issue 32).
- a transaction over three partitions led by three brokers (confluent-kafka: transactions v1; the
  Java 4.4 client, tools/java/TxnFailover.java: v2), committed, then one aborted and one committed
  each after kill -9 of its coordinator (the leader of the id's __transaction_state partition, RF
  3, min ISR 2, Kafka's defaults): read_committed reads only the committed records, the markers
  are on every replica with the epochs Kafka gives them (kafka-dump-log), and the same id commits
  again with a bumped epoch, fencing the first producer.
- GROUP config resources (type 32) set with kafka-configs through one broker are described by the
  others, refused with Kafka's messages, and used by the group coordinators of the cluster (a
  KIP-848 member's heartbeat interval, a share group's share.auto.offset.reset).
- kafka-share-groups on a share group whose coordinator is not the leader of its share partition:
  --describe (start offset, lag), --reset-offsets --to-earliest (a new ShareConsumer then gets
  every record as a first delivery), --delete-offsets, --delete: the same words on both.
- a share group's offsets after kill -9 of its group coordinator, its members gone: the same
  `kafka-share-groups --describe --offsets` rows before and after (ShareGroupStatePartitionMetadata
  replayed by the next coordinator), then --reset-offsets, --delete-offsets and --delete.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import queue
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from minibroker import cluster_control as cc
from minibroker.cluster_testing import ClusterOps, poll
from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.testing import Cluster
from minibroker_protocol.apis import consumer_group_heartbeat, describe_configs, find_coordinator
from reference import kafka_reference as kr
from reference.kafka_cluster import KafkaCluster
from tests.cluster.share_state_helpers import group_coordinator
from tests.reference import share_clients
from tests.reference.share_clients import accept as share_accept
from tests.reference.share_clients import consumer as share_consumer

LEADER_IMBALANCE_CHECK_S = 3  # Kafka's default is 300 s
UNCLEAN_CHECK_MS = 2000  # Kafka's internal unclean.leader.election.interval.ms, 5 min by default
OVERRIDES = {"leader.imbalance.check.interval.seconds": LEADER_IMBALANCE_CHECK_S,
             "unclean.leader.election.interval.ms": UNCLEAN_CHECK_MS,
             # Kafka's default (minibroker's is 1, for its one-node broker): the failover test's log
             "transaction.state.log.min.isr": 2}


@pytest.fixture(scope="module", params=["minibroker", "kafka"])
def cluster(request: pytest.FixtureRequest) -> Iterator[ClusterOps]:
    c: ClusterOps
    if request.param == "kafka":
        why = kr.missing_prerequisites()
        if why is not None:
            pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
        c = KafkaCluster(3, overrides=OVERRIDES)
    else:
        c = Cluster(3, overrides=OVERRIDES)
    c.start()  # type: ignore[attr-defined]
    try:
        yield c
    finally:
        c.stop()  # type: ignore[attr-defined]


@pytest.fixture
def healed(cluster: ClusterOps) -> Iterator[ClusterOps]:
    yield cluster
    for n in (1, 2, 3):
        if cluster.running(n):
            cluster.resume(n)
        else:
            cluster.start_broker(n)


def new_topic(c: ClusterOps, min_insync: int = 2) -> str:
    name = f"ref-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": str(min_insync)})])[name].result(60)
    c.wait_for_isr(name, 0, [1, 2, 3])
    return name


def produce(c: ClusterOps, topic: str, values: list[bytes]) -> list[bytes]:
    acked: list[bytes] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 90000})
    for v in values:
        p.produce(topic, value=v, partition=0,
                  on_delivery=lambda err, m: acked.append(m.value()) if err is None else None)
        p.poll(0)
    assert p.flush(120) == 0
    return acked


def consume(c: ClusterOps, topic: str, expected: int) -> list[bytes]:
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


def test_a_paused_follower_leaves_the_isr_writes_go_on(healed: ClusterOps) -> None:
    c = healed
    topic = new_topic(c)
    leader = c.leader(topic)
    follower = next(n for n in (1, 2, 3) if n != leader)
    assert len(produce(c, topic, [b"a%d" % i for i in range(20)])) == 20
    c.pause(follower)
    try:
        isr = c.wait_for_isr(topic, 0, lambda isr: follower not in isr, timeout=90)
        assert sorted(isr) == sorted(n for n in (1, 2, 3) if n != follower)
        assert c.leader(topic) == leader  # a follower's pause moves no leadership
        assert len(produce(c, topic, [b"b%d" % i for i in range(20)])) == 20
        assert c.wait_for_high_watermark(topic, 0, 40) == 40
    finally:
        c.resume(follower)
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=90)


def test_a_killed_leader_is_replaced_from_the_isr(healed: ClusterOps) -> None:
    c = healed
    topic = new_topic(c)
    before = c.partition(topic)
    first = produce(c, topic, [b"%04d" % i for i in range(300)])
    c.stop_broker(before.leader, kill=True)
    new = c.wait_for_leader(topic, 0, lambda n: n != before.leader, timeout=90)
    after = c.partition(topic)
    assert new in before.isr and after.leader_epoch > before.leader_epoch
    c.wait_for_isr(topic, 0, lambda isr: before.leader not in isr, timeout=90)
    second = produce(c, topic, [b"%04d" % i for i in range(300, 400)])
    assert consume(c, topic, 400) == first + second  # nothing acknowledged lost, none twice, in order
    c.start_broker(before.leader)
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=120)


class _Events:
    """The JSON events a Kafka verifiable tool prints, read as they come (a thread of its own)."""

    def __init__(self, tool: str, args: list[str]) -> None:
        self.proc = subprocess.Popen(kr.tool_command(tool, args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e["name"] == name]

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 180) -> None:
        poll(check, what, timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(60)
        self._reader.join(10)


@pytest.mark.timeout(480)  # five JVMs a cluster (a producer, two consumers) on a loaded machine
def test_java_and_kafka_python_producers_and_both_group_protocols_through_a_leader_kill(healed: ClusterOps,
                                                                                      tmp_path: Path) -> None:
    """kafka-verifiable-producer (the Java 4.4 client, acks=-1) and a kafka-python producer
    (idempotent, acks=all) write one partition while its leader is killed, and two groups of
    kafka-verifiable-consumer read it meanwhile, one classic and one KIP-848: every record either
    producer had acknowledged is in the partition, none twice, each producer's in its order, and
    each group consumes and commits up to its end."""
    from kafka import KafkaProducer

    c = healed
    topic = new_topic(c)
    leader = c.leader(topic)
    groups = {protocol: _Events("kafka-verifiable-consumer", [
        "--bootstrap-server", c.bootstrap, "--topic", topic, "--group-id", f"verify-{protocol}-{topic}",
        "--group-protocol", protocol, "--reset-policy", "earliest"]) for protocol in ("classic", "consumer")}
    try:
        for protocol, g in groups.items():  # both joined (__consumer_offsets made) before anything dies
            g.wait(f"the {protocol} group's partition assigned", lambda g=g: bool(g.named("partitions_assigned")))
        # the tool's own producer has retries 0 (Kafka's system tests count failures); an application's retries
        conf = tmp_path / "producer.properties"
        conf.write_text("enable.idempotence=true\nretries=2147483647\n")
        java = _Events("kafka-verifiable-producer", [
            "--bootstrap-server", c.bootstrap, "--topic", topic, "--max-messages", "1000", "--throughput", "200",
            "--acks", "-1", "--value-prefix", "7", "--producer.config", str(conf)])
        python_acked: list[bytes] = []

        def kafka_python() -> None:
            p = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", linger_ms=5)
            sent = []
            for i in range(400):
                sent.append((b"kp-%d" % i, p.send(topic, value=b"kp-%d" % i, partition=0)))
                time.sleep(0.01)
            p.flush(150)
            for value, f in sent:
                if f.succeeded():
                    python_acked.append(value)
            p.close(30)

        t = threading.Thread(target=kafka_python, daemon=True)
        t.start()
        java.wait("the Java producer's first acknowledgements", lambda: bool(java.named("producer_send_success")))
        c.stop_broker(leader, kill=True)
        java.wait("the Java producer done", lambda: java.proc.poll() is not None, timeout=240)
        java.stop()
        t.join(240)
        java_acked = [str(e["value"]).encode() for e in java.named("producer_send_success")]
        errors = {str(e.get("exception")) + ": " + str(e.get("message")) for e in java.named("producer_send_error")}
        assert len(java_acked) == 1000 and len(python_acked) == 400, errors
        hw = c.wait_for_high_watermark(topic, 0, 1400)
        got = consume(c, topic, hw)
        assert len(got) == len(set(got)) == hw  # none twice
        assert set(java_acked) | set(python_acked) <= set(got)  # nothing acknowledged lost
        assert [v for v in got if v.startswith(b"7.")] == java_acked
        assert [v for v in got if v.startswith(b"kp-")] == python_acked
        for protocol, g in groups.items():
            g.wait(f"the {protocol} group committed the partition's end", lambda g=g: any(
                e["success"] and e["offsets"] == [{"topic": topic, "partition": 0, "offset": hw}]
                for e in g.named("offsets_committed")))
            assert sum(int(e["count"]) for e in g.named("records_consumed")) >= hw, protocol
    finally:
        for g in groups.values():
            g.stop()
    c.start_broker(leader)
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=120)

def test_leadership_moved_to_a_named_broker(healed: ClusterOps) -> None:
    c = healed
    topic = new_topic(c)
    before = c.partition(topic)
    to = next(n for n in before.replicas if n != before.leader)
    c.move_leader(topic, 0, to)
    after = c.partition(topic)
    assert after.leader == to and after.replicas == (to, *(r for r in before.replicas if r != to))
    assert after.leader_epoch > before.leader_epoch and sorted(after.isr) == [1, 2, 3]


def test_a_restarted_leader_leads_its_preferred_partitions_again(healed: ClusterOps) -> None:
    c = healed
    name = f"rb-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 3, 3)])[name].result(60)
    for p in range(3):
        c.wait_for_isr(name, p, [1, 2, 3])
    before = c.partitions(name)
    victim = before[0].replicas[0]
    preferred = [p for p, s in before.items() if s.replicas[0] == victim]
    assert all(before[p].leader == victim for p in preferred)  # a new topic is led by its preferred replicas
    c.stop_broker(victim, kill=True)
    for p in preferred:
        c.wait_for_leader(name, p, lambda n: n != victim, timeout=90)
    moved = c.partitions(name)
    c.start_broker(victim)
    for p in preferred:
        c.wait_for_isr(name, p, [1, 2, 3], timeout=120)
        # back to the preferred replica by the controller alone, within the check interval (plus slack)
        assert c.wait_for_leader(name, p, victim, timeout=LEADER_IMBALANCE_CHECK_S + 60) == victim
        assert c.partition(name, p).leader_epoch > moved[p].leader_epoch


def _metadata_error(c: ClusterOps, topic: str) -> tuple[int, int]:
    """(leader, error code) of partition 0 as Metadata tells a client."""
    md = AdminClient({"bootstrap.servers": c.bootstrap}).list_topics(topic, timeout=30)
    pm = md.topics[topic].partitions[0]
    return pm.leader, pm.error.code() if pm.error is not None else 0


def test_unclean_leader_election_loses_what_only_the_dead_leader_had(healed: ClusterOps) -> None:
    c = healed
    name = f"unclean-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "1"})])[name].result(60)
    c.wait_for_isr(name, 0, [1, 2, 3])
    leader = c.leader(name)
    followers = [n for n in (1, 2, 3) if n != leader]
    replicated = produce(c, name, [b"a%d" % i for i in range(10)])
    c.wait_for_high_watermark(name, 0, 10)
    for f in followers:
        c.stop_broker(f, kill=True)
    c.wait_for_isr(name, 0, [leader], timeout=90)
    assert len(produce(c, name, [b"b%d" % i for i in range(5)])) == 5  # on the leader alone
    c.stop_broker(leader, kill=True)
    for f in followers:
        c.start_broker(f)
    # the ISR's last member is dead (fenced once its session runs out), the live replicas are out of
    # sync: no leader while the key is off
    poll(lambda: c.leader(name) == -1, f"{name}-0 has no leader", 60)
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        assert _metadata_error(c, name) == (-1, KafkaError.LEADER_NOT_AVAILABLE)
        time.sleep(1)
    state = c.partition(name)
    epoch = state.leader_epoch
    # ELR (KIP-966) on in both: the dead leader leaves the ISR for the ELR (test_eligible_leader_replicas)
    assert list(state.isr) == []
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[
        ConfigEntry("unclean.leader.election.enable", "true", incremental_operation=AlterConfigOpType.SET)])
    # a new client: the first one's Metadata may name the dead broker as the one to send it to
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(60)
    new = c.wait_for_leader(name, 0, lambda n: n in followers, timeout=120)
    state = c.partition(name)  # the ISR restarts from the new leader (the other may have caught up since)
    assert state.leader_epoch > epoch and new in state.isr and leader not in state.isr
    assert c.high_watermark(name, 0) == 10  # the five records only the dead leader had are gone
    after = produce(c, name, [b"c%d" % i for i in range(3)])
    assert consume(c, name, 13) == replicated + after  # offsets 0-9 a*, 10-12 c*
    c.start_broker(leader)
    c.wait_for_isr(name, 0, [1, 2, 3], timeout=120)  # the old leader truncated its b* and caught up


def _described(c: ClusterOps, topic: str) -> dict[str, str]:
    """Partition 0's line of `kafka-topics --describe` as {column: value} (Leader, Replicas, Isr,
    Elr, LastKnownElr), the tool reading DescribeTopicPartitions."""
    out = kr.run_tool("kafka-topics", ["--bootstrap-server", c.bootstrap, "--describe", "--topic", topic],
                      timeout=120, check=True).stdout
    line = next(ln for ln in out.splitlines() if "Partition: 0" in ln)
    cols = [part.strip() for part in line.strip().split("\t") if ":" in part]
    return {k.strip(): v.strip() for k, v in (col.split(":", 1) for col in cols)}


def _ids(*nodes: int) -> str:
    return ",".join(str(n) for n in nodes)


def _states(c: ClusterOps, topic: str) -> tuple[str, str, str, str]:
    d = _described(c, topic)
    return d["Leader"], d["Isr"], d.get("Elr", ""), d.get("LastKnownElr", "")


def test_eligible_leader_replicas(healed: ClusterOps) -> None:
    c = healed
    name = new_topic(c, min_insync=2)
    leader = c.leader(name)
    f1, f2 = (n for n in c.partition(name).replicas if n != leader)
    assert len(produce(c, name, [b"a%d" % i for i in range(5)])) == 5
    assert _states(c, name)[2:] == ("", "")
    c.stop_broker(f1, kill=True)  # ISR 2 = min ISR: no ELR
    c.wait_for_isr(name, 0, lambda isr: sorted(isr) == sorted([leader, f2]), timeout=90)
    assert _states(c, name)[2:] == ("", "")
    c.stop_broker(f2, kill=True)  # below min ISR: f2 has every committed record and stays eligible
    c.wait_for_isr(name, 0, [leader], timeout=90)
    assert _states(c, name) == (str(leader), str(leader), str(f2), "")
    c.stop_broker(leader, kill=True)  # the ISR empties into the ELR; the leader is remembered
    # f1 back after kill -9 (no broker answers while all three are down): never eligible, no leader
    c.start_broker(f1)
    poll(lambda: _states(c, name) == ("none", "", _ids(*sorted([leader, f2])), str(leader)),
         "the last ISR member moved to the ELR", 90, interval=1)
    c.start_broker(f2)  # f2 back after kill -9 (an unclean shutdown): out of the ELR
    poll(lambda: _states(c, name) == ("none", "", str(leader), str(leader)), "f2 out of the ELR", 60, interval=1)
    time.sleep(3)  # f1 and f2 unfenced meanwhile: still no leader
    assert _states(c, name) == ("none", "", str(leader), str(leader))
    # the leader back, also uncleanly: ISR and ELR empty, the last known leader leads again
    c.start_broker(leader)
    c.wait_for_leader(name, 0, leader, timeout=120)
    c.wait_for_isr(name, 0, lambda isr: sorted(isr) == [1, 2, 3], timeout=120)
    led, isr, elr, last_known = _states(c, name)
    assert (led, sorted(isr.split(",")), elr, last_known) == (str(leader), ["1", "2", "3"], "", "")
    assert consume(c, name, 5) == [b"a%d" % i for i in range(5)]


@pytest.mark.timeout(300)
def test_a_cleanly_stopped_replica_stays_eligible(healed: ClusterOps) -> None:
    """KIP-966's clean-shutdown case: a follower stopped with SIGTERM writes its broker epoch to
    `.kafka_cleanshutdown` and registers with it (PreviousBrokerEpoch) when started again, so it
    stays in the ELR and leads once the leader is gone; after kill -9 it would leave the ELR (the
    test above)."""
    c = healed
    name = new_topic(c, min_insync=2)
    leader = c.leader(name)
    f1, f2 = (n for n in c.partition(name).replicas if n != leader)
    assert len(produce(c, name, [b"c%d" % i for i in range(5)])) == 5
    c.stop_broker(f1, kill=True)
    c.wait_for_isr(name, 0, lambda isr: sorted(isr) == sorted([leader, f2]), timeout=90)
    c.stop_broker(f2)  # a controlled shutdown: out of the ISR, into the ELR
    c.wait_for_isr(name, 0, [leader], timeout=90)
    assert _states(c, name) == (str(leader), str(leader), str(f2), "")
    c.stop_broker(leader, kill=True)
    c.start_broker(f1)  # back after kill -9: not eligible, leads nothing (and answers the tools)
    poll(lambda: _states(c, name) == ("none", "", _ids(*sorted([leader, f2])), str(leader)),
         "the last ISR member moved to the ELR", 90, interval=1)
    c.start_broker(f2)  # back from its clean shutdown: still eligible, so it leads
    c.wait_for_leader(name, 0, f2, timeout=120)
    # f2 alone was the ISR at its election; f1 (caught up from f2) may have joined it already
    led, isr, _, _ = _states(c, name)
    assert led == str(f2) and str(f2) in isr.split(",")
    assert consume(c, name, 5) == [b"c%d" % i for i in range(5)]


def _segments(c: ClusterOps, topic: str, node: int) -> dict[str, bytes]:
    """{segment file: bytes} of partition 0's .log files on the broker's disk."""
    d = c.brokers[node].data_dir / f"{topic}-0"  # type: ignore[attr-defined]
    return {f.name: f.read_bytes() for f in sorted(d.glob("*.log"))}


def _segment_digests(c: ClusterOps, topic: str) -> dict[int, dict[str, str]]:
    """{broker: {segment file: sha256}} of partition 0's .log files on every broker's disk."""
    return {n: {k: hashlib.sha256(v).hexdigest() for k, v in _segments(c, topic, n).items()} for n in (1, 2, 3)}


def test_a_returning_leader_truncates_its_unreplicated_records(healed: ClusterOps) -> None:
    c = healed
    name = f"diverge-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "1"})])[name].result(60)
    c.wait_for_isr(name, 0, [1, 2, 3])
    old = c.partition(name)
    followers = [n for n in (1, 2, 3) if n != old.leader]
    replicated: list[bytes] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "1", "linger.ms": 0})
    for i in range(10):
        p.produce(name, value=b"a%d" % i, partition=0,
                  on_delivery=lambda err, m: replicated.append(m.value()) if err is None else None)
    assert p.flush(60) == 0 and len(replicated) == 10
    c.wait_for_high_watermark(name, 0, 10)
    for f in followers:
        c.pause(f)
    try:
        # a paused follower's fetch already at the leader is answered into its socket when the leader
        # appends, and read on resume; past replica.fetch.wait.max.ms (500 ms) that answer went out
        # empty, and no new fetch comes (still well within replica.lag.time.max.ms: no ISR shrink)
        time.sleep(1.5)
        for i in range(5):  # acknowledged by the leader alone: its followers never see them
            p.produce(name, value=b"b%d" % i, partition=0)
        assert p.flush(30) == 0
        c.stop_broker(old.leader, kill=True)
    finally:
        for f in followers:
            c.resume(f)
    new = c.wait_for_leader(name, 0, lambda n: n != old.leader, timeout=90)
    assert new in followers and c.partition(name).leader_epoch > old.leader_epoch  # a clean election
    after = produce(c, name, [b"c%d" % i for i in range(3)])
    assert any(b"b4" in data for data in _segments(c, name, old.leader).values())  # the dead leader's own records
    assert not any(b"b4" in data for f in followers for data in _segments(c, name, f).values())
    c.start_broker(old.leader)
    c.wait_for_isr(name, 0, [1, 2, 3], timeout=120)
    assert consume(c, name, 13) == replicated + after  # offsets 0-9 a*, 10-12 c*; the b* are gone
    digests = poll(lambda: (d := _segment_digests(c, name)) and len({str(v) for v in d.values()}) == 1 and d,
                   f"{name}-0's segments identical on every replica", 60)
    assert len(digests[old.leader]) >= 1
    assert not any(b"b4" in data for data in _segments(c, name, old.leader).values())  # truncated away
def _errors_of_one_write(c: ClusterOps, topic: str, value: bytes, acks: str) -> list[int]:
    """The error codes the producer's delivery report gives one write (none: acknowledged), with
    no retry, so the broker's first answer is what the client sees."""
    errors: list[int] = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": acks, "retries": 0, "enable.idempotence": False,
                  "message.timeout.ms": 60000})
    p.produce(topic, value=value, partition=0, on_delivery=lambda err, m: errors.append(err.code()) if err else None)
    assert p.flush(90) == 0
    return errors


def test_a_follower_cut_off_makes_acks_all_answer_not_enough_replicas(healed: ClusterOps) -> None:
    c = healed
    topic = new_topic(c, min_insync=3)
    leader = c.leader(topic)
    follower = next(n for n in (1, 2, 3) if n != leader)
    cut = c.inject(kind="replica.fetch.cut", node=follower, topic=topic) if isinstance(c, Cluster) else None
    if cut is None:
        c.pause(follower)
    try:
        assert _errors_of_one_write(c, topic, b"acks-1", "1") == []  # the leader moves on alone
        isr = c.wait_for_isr(topic, 0, lambda isr: follower not in isr, timeout=90)
        assert sorted(isr) == sorted(n for n in (1, 2, 3) if n != follower)
        assert c.leader(topic) == leader
        assert _errors_of_one_write(c, topic, b"refused", "all") == [KafkaError.NOT_ENOUGH_REPLICAS]
    finally:
        if cut is not None:
            cut.remove()
        else:
            c.resume(follower)
    c.wait_for_isr(topic, 0, [1, 2, 3], timeout=120)
    # with retries: the broker Metadata asked may name the follower in the ISR a moment before the
    # leader does (Kafka answered one NOT_ENOUGH_REPLICAS there)
    assert produce(c, topic, [b"after"]) == [b"after"]
    assert consume(c, topic, 2) == [b"acks-1", b"after"]


def test_min_insync_replicas_stays_at_the_cluster_and_topic_levels_with_elr(healed: ClusterOps) -> None:
    """KIP-966 with ELR on: `kafka-configs` shows the cluster-level min.insync.replicas recorded
    at format time, refuses a broker-level one and the removal of the cluster-level one with
    Kafka's words, and takes a topic's (which clears that topic's ELR: tests/broker/test_controller_elr.py)."""
    c = healed

    def configs(*args: str) -> str:
        res = kr.run_tool("kafka-configs", ["--bootstrap-server", c.bootstrap, *args], timeout=120)
        return (res.stdout + res.stderr).strip()

    default = configs("--describe", "--entity-type", "brokers", "--entity-default")
    assert "min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}" \
        in default, default
    refused = configs("--alter", "--entity-type", "brokers", "--entity-name", "1",
                      "--add-config", "min.insync.replicas=2")
    assert "Broker-level min.insync.replicas cannot be altered while ELR is enabled." in refused, refused
    removal = configs("--alter", "--entity-type", "brokers", "--entity-default",
                      "--delete-config", "min.insync.replicas")
    assert "Cluster-level min.insync.replicas cannot be removed while ELR is enabled." in removal, removal
    name = new_topic(c, min_insync=2)
    assert "Completed updating config for topic" in configs(
        "--alter", "--entity-type", "topics", "--entity-name", name, "--add-config", "min.insync.replicas=1")
    assert "min.insync.replicas=1" in configs("--describe", "--entity-type", "topics", "--entity-name", name)


@pytest.mark.timeout(300)
def test_a_throttled_reassignment_is_held_to_its_rate_and_verify_clears_it(healed: ClusterOps,
                                                                            tmp_path: Path) -> None:
    """`kafka-reassign-partitions --execute --throttle R` (KIP-73) on both clusters: the tool's
    output, the throttle configs it sets, a partition outside the throttle replicating acks=all
    meanwhile, a move of 1.5 MB at 20 kB/s that cannot end before the first 1 s window of Kafka's
    11 expires (bounded below only), and `--verify` clearing the throttles
    (tests/cluster/test_reassignment.py has the same on our cluster alone)."""
    c = healed
    rate = 20_000
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    topic, other = f"thr-{uuid.uuid4().hex[:8]}", f"thr-{uuid.uuid4().hex[:8]}"
    for name, replicas in ((topic, [1, 2]), (other, [1, 3])):
        admin.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[replicas])])[name].result(60)
        c.wait_for_isr(name, 0, replicas, timeout=90)
    value = b"t" * 1000
    assert len(produce(c, topic, [value] * 1500)) == 1500
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 3]}]}))

    def tool(name: str, *args: str) -> str:
        r = kr.run_tool(name, ["--bootstrap-server", c.bootstrap, *args], timeout=120)
        assert r.returncode == 0, f"{name} {args} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        return r.stdout

    started = time.monotonic()
    out = tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--execute", "--throttle", str(rate))
    assert f"The inter-broker throttle limit was set to {rate} B/s" in out, out
    described = tool("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert "leader.replication.throttled.replicas=0:1,0:2" in described, described
    assert "follower.replication.throttled.replicas=0:3" in described, described
    assert len(produce(c, other, [b"o%d" % i for i in range(50)])) == 50  # acks=all through broker 3
    poll(lambda: c.partition(topic).replicas == (1, 3) and sorted(c.isr(topic, 0)) == [1, 3] or None,
         f"{topic}-0 on [1, 3]", 180, interval=0.5)
    took = time.monotonic() - started
    assert took >= 9, f"1.5 MB moved in {took:.1f} s under a {rate} B/s throttle"
    verify = tool("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--verify")
    assert f"Reassignment of partition {topic}-0 is completed." in verify, verify
    assert "Clearing broker-level throttles on brokers 1,2,3" in verify, verify
    assert f"Clearing topic-level throttles on topic {topic}" in verify, verify
    assert "throttled" not in tool("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert consume(c, topic, 1500) == [value] * 1500


TXN_STATE_PARTITIONS = 50  # transaction.state.log.num.partitions, Kafka's default on both


def _dump(c: ClusterOps, topic: str, partition: int, node: int) -> list[tuple[int, str, int, int]]:
    """(offset, payload or COMMIT/ABORT, producer epoch, coordinator epoch or -1) of every record in
    the partition's segments on the broker's disk, as Kafka's kafka-dump-log prints them."""
    return _dumps(c, topic, [partition], [node])[(partition, node)]


def _dumps(c: ClusterOps, topic: str, partitions: Iterable[int], nodes: Iterable[int]
           ) -> dict[tuple[int, int], list[tuple[int, str, int, int]]]:
    """_dump of each (partition, node), from one kafka-dump-log run over all their segments (one
    JVM, not one a replica: nine of them took a loaded machine 15-20 s)."""
    owner: dict[str, tuple[int, int]] = {}
    for part in partitions:
        for node in nodes:
            d = c.brokers[node].data_dir / f"{topic}-{part}"  # type: ignore[attr-defined]
            owner.update((str(f), (part, node)) for f in sorted(d.glob("*.log")))
    out = kr.run_tool("kafka-dump-log", ["--files", ",".join(owner), "--print-data-log"],
                      timeout=180, check=True).stdout
    found: dict[tuple[int, int], list[tuple[int, str, int, int]]] = {key: [] for key in owner.values()}
    records: list[tuple[int, str, int, int]] = []
    epoch = -1
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        if line.startswith("Dumping "):
            records = found[owner[line.removeprefix("Dumping ").strip()]]
        elif line.startswith("baseOffset:"):
            epoch = int(fields["producerEpoch"])
        elif line.startswith("| offset:"):
            what = fields.get("endTxnMarker") or fields["payload"]
            records.append((int(fields["offset"]), what, epoch, int(fields.get("coordinatorEpoch", -1))))
    return found


def _read_committed(c: ClusterOps, topic: str, partition: int, expected: int) -> tuple[list[bytes], int]:
    """What a read_committed consumer reads of the partition (bounded by `expected` and a deadline),
    and its last stable offset (ListOffsets READ_COMMITTED)."""
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, partition, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + 120
    try:
        while len(out) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                out.append(m.value())
        for _ in range(4):  # nothing more comes (an aborted record would)
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                out.append(m.value())
        lso = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30, cached=False)[1]
    finally:
        consumer.close()
    return out, lso


class _ConfluentTxn:
    """confluent-kafka's transactional producer (librdkafka: transactions v1)."""

    version = 1

    def __init__(self, c: ClusterOps, tid: str, topic: str) -> None:
        self.topic = topic
        self.p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid, "linger.ms": 0})

    def init(self) -> None:
        self.p.init_transactions(120)

    def write(self, tag: str) -> None:
        """Begin a transaction and write one record to each of the topic's three partitions."""
        self.p.begin_transaction()
        for part in range(3):
            self.p.produce(self.topic, value=f"{tag}{part}".encode(), partition=part)
        assert self.p.flush(120) == 0

    def end(self, outcome: str) -> None:
        (self.p.abort_transaction if outcome == "abort" else self.p.commit_transaction)(180)

    def fenced(self) -> str:
        """A transaction after another producer of the id initialised: what its commit raises."""
        self.p.begin_transaction()
        self.p.produce(self.topic, value=b"zombie", partition=0)
        with pytest.raises(KafkaException) as e:
            self.p.commit_transaction(60)
        assert e.value.args[0].fatal(), e.value
        return str(e.value)

    def close(self) -> None:
        self.p.flush(0)


class _JavaTxn:
    """The Java 4.4 client's transactional producer (tools/java/TxnFailover.java, one step a line on
    its stdin; transactions v2 on both clusters)."""

    version = 2
    SOURCE = Path(__file__).resolve().parents[2] / "tools" / "java" / "TxnFailover.java"

    def __init__(self, c: ClusterOps, tid: str, topic: str) -> None:
        java = kr.java_executable() or "java"
        self.proc = subprocess.Popen([java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                                      f"{kr.libs_dir()}/*", str(self.SOURCE), c.bootstrap, tid, topic],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self._answer(180) == "READY"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(f"EXIT {self.proc.wait()}")  # a failed start (compilation) answers at once

    def _answer(self, timeout: float) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"TxnFailover answered nothing in {timeout:.0f} s") from None

    def step(self, command: str, timeout: float = 240) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._answer(timeout)

    def init(self) -> None:
        assert self.step("init") == "OK init"

    def write(self, tag: str) -> None:
        assert self.step(f"write {tag}") == f"OK write {tag}"

    def end(self, outcome: str) -> None:
        assert self.step(outcome) == f"OK {outcome}"

    def fenced(self) -> str:
        self.step("write zombie")  # the send may fail at once or only the commit
        answer = self.step("commit")
        assert answer.startswith("FAIL commit "), answer
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


TXN_CLIENTS: dict[str, Callable[[ClusterOps, str, str], _ConfluentTxn | _JavaTxn]] = {
    "confluent-kafka": _ConfluentTxn, "java-4.4": _JavaTxn}


@pytest.mark.timeout(900)  # two broker restarts and a JVM tool per replica on a loaded machine
@pytest.mark.parametrize("client", list(TXN_CLIENTS))
def test_a_transaction_over_brokers_committed_and_aborted_across_a_coordinator_failover(healed: ClusterOps,
                                                                                        client: str) -> None:
    """A transactional producer (confluent-kafka; the Java 4.4 client) writes to three partitions
    led by three brokers: one transaction committed; then twice a transaction begun and written,
    the broker leading the transactional id's __transaction_state partition (RF 3, min ISR 2)
    killed with kill -9 (it also leads one of the three partitions), and the transaction ended at
    the new coordinator, aborted the first time, committed the second; the killed broker is started
    again and catches up. A read_committed consumer sees only the committed records, the last
    stable offset passes the markers in every partition; a new producer of the same id commits
    with a higher epoch and fences the first. On every replica, kafka-dump-log shows the same
    records and markers, each ending after a failover written by the new coordinator (a higher
    coordinator epoch)."""
    if client == "java-4.4" and not kr.java_executable():
        pytest.skip("REFERENCE BROKER UNAVAILABLE: no Java")
    c = healed
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replica_assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]],
                                  config={"min.insync.replicas": "2"})])[topic].result(60)
    for part in range(3):
        c.wait_for_isr(topic, part, [1, 2, 3])
        assert c.wait_for_leader(topic, part, part + 1) == part + 1
    tid = f"tx-{topic}"
    state = partition_for(tid, TXN_STATE_PARTITIONS)
    p = TXN_CLIENTS[client](c, tid, topic)
    again = None
    try:
        p.init()
        c.wait_for_isr("__transaction_state", state, [1, 2, 3], timeout=120)
        p.write("c")
        p.end("commit")
        committed = ["c"]
        for outcome, tag in (("abort", "x"), ("commit", "y")):
            p.write(tag)
            coordinator = c.leader("__transaction_state", state)
            c.stop_broker(coordinator, kill=True)
            c.wait_for_leader("__transaction_state", state, lambda n, dead=coordinator: n != dead, timeout=90)
            p.end(outcome)  # at the new coordinator, which loaded the transaction as Ongoing
            committed += [tag] if outcome == "commit" else []
            end = 4 if outcome == "abort" else 6  # c COMMIT x ABORT (y COMMIT)
            for part in range(3):
                got = _read_committed(c, topic, part, len(committed))
                assert got == ([f"{t}{part}".encode() for t in committed], end), (
                    outcome, part, {n: _dump(c, topic, part, n) for n in (1, 2, 3)})
            c.start_broker(coordinator)
            for part in range(3):
                c.wait_for_isr(topic, part, [1, 2, 3], timeout=120)
            c.wait_for_isr("__transaction_state", state, [1, 2, 3], timeout=120)
        again = TXN_CLIENTS[client](c, tid, topic)
        again.init()
        again.write("n")
        again.end("commit")
        p.fenced()  # the first producer is fenced by the second's epoch
    finally:
        for producer in (p, again):
            if producer is not None:
                producer.close()
    for part in range(3):
        assert _read_committed(c, topic, part, 3) == ([f"{t}{part}".encode() for t in "cyn"], 8), part
    every = poll(lambda: (d := _dumps(c, topic, range(3), (1, 2, 3)))
                 and all(len({str(d[(part, n)]) for n in (1, 2, 3)}) == 1 for part in range(3)) and d,
                 f"{topic}'s partitions the same on every replica", 120, interval=2)
    for part in range(3):
        dumps = {n: every[(part, n)] for n in (1, 2, 3)}
        assert [(r[0], r[1]) for r in dumps[1]] == [
            (0, f"c{part}"), (1, "COMMIT"), (2, f"x{part}"), (3, "ABORT"), (4, f"y{part}"), (5, "COMMIT"),
            (6, f"n{part}"), (7, "COMMIT")], dumps[1]
        c0, commit, x0, abort, y0, commit_y, n0, commit_n = (r[2] for r in dumps[1])
        if p.version == 1:  # one producer epoch per producer, the new one's higher
            assert c0 == commit == x0 == abort == y0 == commit_y < n0 == commit_n, dumps[1]
        else:  # KIP-890: every transaction's end bumps the epoch, its markers carry the new one
            assert c0 < commit == x0 < abort == y0 < commit_y < n0 < commit_n, dumps[1]
        # each ending after a failover written by a coordinator of a newer epoch
        assert dumps[1][1][3] < dumps[1][3][3] < dumps[1][5][3] <= dumps[1][7][3], dumps[1]


# --------------------------------------------------------------------- GROUP config resources
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP
DYNAMIC_GROUP_CONFIG = 8  # DescribeConfigs' config source of a group's own value (Kafka: ConfigSource)


def _group_configs_on(address: tuple[str, int], group: str) -> dict[str, tuple[str | None, int]]:
    """{key: (value, config source)} of the GROUP resource, asked of one broker alone."""
    R = describe_configs.REQUEST
    req = R(resources=[R.DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=group,
                                                 configuration_keys=None)],
            include_synonyms=False, include_documentation=False)
    resp = asyncio.run(cc.request(address, describe_configs.API, req, timeout=30))
    assert isinstance(resp, describe_configs.DescribeConfigsResponse)
    (result,) = resp.results
    assert result.error_code == 0, result
    return {e.name: (e.value, e.config_source) for e in result.configs}


def _coordinator_of(address: tuple[str, int], group: str) -> tuple[str, int]:
    """The group's coordinator, once there is one (the first FindCoordinator of a cluster creates
    __consumer_offsets: COORDINATOR_NOT_AVAILABLE meanwhile)."""
    FC = find_coordinator.REQUEST

    def find() -> tuple[str, int] | None:
        resp = asyncio.run(cc.request(address, find_coordinator.API, FC(key_type=0, coordinator_keys=[group]),
                                      timeout=30))
        assert isinstance(resp, find_coordinator.FindCoordinatorResponse)
        (found,) = resp.coordinators
        assert found.error_code in (0, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS), found
        return (found.host, found.port) if found.error_code == 0 else None
    return poll(find, f"the coordinator of {group}", 120, interval=1)


def _configs_tool(address: tuple[str, int], *args: str) -> subprocess.CompletedProcess[str]:
    return kr.run_tool("kafka-configs", ["--bootstrap-server", f"{address[0]}:{address[1]}", *args], timeout=120)


def _exception_line(r: subprocess.CompletedProcess[str]) -> str:
    return next((line.strip() for line in r.stderr.splitlines() if "Exception:" in line), "")


@pytest.mark.timeout(300)
def test_group_configs_altered_through_one_broker_are_used_by_every_broker(healed: ClusterOps) -> None:
    """GROUP config resources (type 32) on a cluster: `kafka-configs --alter` through broker 1
    goes to the controller, which checks the values and writes ConfigRecords; brokers 2 and 3
    describe them (each asked alone) and Kafka's tool prints the same through broker 3; refused
    values and keys answer Kafka's INVALID_CONFIG messages (APPEND too: no group key is a LIST to
    Kafka's controller); a consumer group's coordinator answers a joining member with the
    consumer.heartbeat.interval.ms set through another broker; and share.auto.offset.reset=earliest
    set through broker 2 makes a share consumer of the cluster read the records produced before it
    joined."""
    c = healed
    b1, b2, b3 = (c.brokers[n] for n in (1, 2, 3))  # type: ignore[attr-defined]
    a1, a2, a3 = ((b.host, b.port) for b in (b1, b2, b3))
    group = f"gcfg-{uuid.uuid4().hex[:8]}"
    entity = ["--entity-type", "groups", "--entity-name", group]
    r = _configs_tool(a1, *entity, "--alter", "--add-config",
                      "consumer.session.timeout.ms=50000,share.record.lock.duration.ms=20000,"
                      "streams.num.standby.replicas=1")
    assert (r.returncode, r.stdout.strip()) == (0, f"Completed updating config for group {group}."), r.stderr
    want = {"consumer.session.timeout.ms": ("50000", DYNAMIC_GROUP_CONFIG),
            "share.record.lock.duration.ms": ("20000", DYNAMIC_GROUP_CONFIG),
            "streams.num.standby.replicas": ("1", DYNAMIC_GROUP_CONFIG)}
    for address in (a2, a3, a1):
        got = poll(lambda address=address: (g := _group_configs_on(address, group))
                   and all(g.get(k) == v for k, v in want.items()) and g, f"{group} on {address}", 60, interval=0.5)
        assert got["consumer.heartbeat.interval.ms"] == ("5000", 5), got  # DEFAULT_CONFIG: the broker's
        assert got["share.auto.offset.reset"] == ("latest", 5), got
    r = _configs_tool(a3, *entity, "--describe")
    assert (r.returncode, r.stdout) == (0, f"Dynamic configs for group {group} are:\n" + "".join(
        f"  {k}={v} sensitive=false synonyms={{DYNAMIC_GROUP_CONFIG:{k}={v}, DEFAULT_CONFIG:{broker_key}={default}}}\n"
        for k, v, broker_key, default in (
            ("consumer.session.timeout.ms", 50000, "group.consumer.session.timeout.ms", 45000),
            ("share.record.lock.duration.ms", 20000, "group.share.record.lock.duration.ms", 30000),
            ("streams.num.standby.replicas", 1, "group.streams.num.standby.replicas", 0)))), r.stderr
    # refused with Kafka 4.4's messages, nothing of the resource written
    reset_msg = ("Invalid value first for configuration share.auto.offset.reset: Invalid value `first` for "
                 "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the "
                 "format 'by_duration:<PnDTnHnMn.nS>'.")
    for bad, message in (
            ("consumer.session.timeout.ms=1000", "consumer.session.timeout.ms must be in the range 45000 to 60000 "
                                                 "inclusive."),
            ("share.record.lock.duration.ms=x", "Invalid value x for configuration share.record.lock.duration.ms: "
                                                "Not a number of type INT"),
            ("share.auto.offset.reset=first", reset_msg),
            ("consumer.unknown.key=1", "Unknown group config name: consumer.unknown.key")):
        r = _configs_tool(a2, *entity, "--alter", "--add-config", bad)
        assert (r.returncode, _exception_line(r)) == (1, "java.util.concurrent.ExecutionException: org.apache.kafka."
                                                         f"common.errors.InvalidConfigurationException: {message}"), r.stderr
    admin = AdminClient({"bootstrap.servers": f"{a2[0]}:{a2[1]}"})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "1", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(KafkaException) as err:
        admin.incremental_alter_configs([res])[res].result(60)
    assert err.value.args[0].code() == KafkaError.INVALID_CONFIG, err.value
    assert err.value.args[0].str() == "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
    assert _group_configs_on(a3, group)["consumer.session.timeout.ms"] == ("50000", DYNAMIC_GROUP_CONFIG)
    # deleted through broker 3, gone on broker 1
    r = _configs_tool(a3, *entity, "--alter", "--delete-config", "consumer.session.timeout.ms")
    assert r.returncode == 0, r.stderr
    poll(lambda: _group_configs_on(a1, group)["consumer.session.timeout.ms"] == ("45000", 5) or None,
         "the group's session timeout back to the broker's on broker 1", 60, interval=0.5)
    # behaviour: a consumer group's coordinator on another broker tells its members the interval
    # set through this one (KIP-848's heartbeat answer)
    consumer_group = f"{group}-c"  # a group id is one kind of group: the share group below is another
    found = _coordinator_of(a1, consumer_group)
    altering = next(a for a in (a1, a2, a3) if a != found)
    r = _configs_tool(altering, "--entity-type", "groups", "--entity-name", consumer_group, "--alter",
                      "--add-config", "consumer.heartbeat.interval.ms=7000")
    assert r.returncode == 0, r.stderr
    poll(lambda: _group_configs_on(found, consumer_group)["consumer.heartbeat.interval.ms"]
         == ("7000", DYNAMIC_GROUP_CONFIG) or None, f"{consumer_group}'s interval on its coordinator", 60, interval=0.5)
    topic = new_topic(c)
    HB = consumer_group_heartbeat.REQUEST
    join = asyncio.run(cc.request(found, consumer_group_heartbeat.API, HB(
        group_id=consumer_group, member_id=uuid.uuid4().hex[:22], member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[topic], topic_partitions=[]), timeout=30))
    assert isinstance(join, consumer_group_heartbeat.ConsumerGroupHeartbeatResponse)
    assert (join.error_code, join.heartbeat_interval_ms) == (0, 7000), join
    leave = asyncio.run(cc.request(found, consumer_group_heartbeat.API, HB(
        group_id=consumer_group, member_id=join.member_id, member_epoch=-1), timeout=30))
    assert isinstance(leave, consumer_group_heartbeat.ConsumerGroupHeartbeatResponse) and leave.error_code == 0
    # behaviour: a share group reading from the start, as set through broker 2
    share_clients.produce(c.bootstrap, topic, [f"early-{i}" for i in range(5)])
    r = _configs_tool(a2, *entity, "--alter", "--add-config", "share.auto.offset.reset=earliest")
    assert r.returncode == 0, r.stderr
    consumer = share_clients.consumer(c.bootstrap, group, topic, 10)
    try:
        got = share_clients.poll_until(consumer, lambda ms: len(ms) >= 5, share_clients.accept, timeout=90)
    finally:
        consumer.close()
    assert sorted((m.offset(), m.value()) for m in got) == [(i, f"early-{i}".encode()) for i in range(5)]


def _share_groups(c: ClusterOps, *args: str) -> list[list[str]]:
    """kafka-share-groups' output as words per line."""
    r = kr.run_tool("kafka-share-groups", ["--bootstrap-server", c.bootstrap, *args], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return [line.split() for line in r.stdout.splitlines() if line.strip()]


@pytest.mark.timeout(600)  # Kafka makes __consumer_offsets and __share_group_state on first use
def test_share_group_tool_on_a_coordinator_that_is_not_the_share_partition_leader(healed: ClusterOps) -> None:
    """kafka-share-groups --describe/--reset-offsets/--delete-offsets/--delete on a group whose
    coordinator is not the leader of its share partition (Kafka's group coordinator goes through
    the persister: ReadShareGroupStateSummary, InitializeShareGroupState, DeleteShareGroupState);
    the tool's answers are the same words on both, and a consumer after the reset starts at 0."""
    c = healed
    topic = new_topic(c)
    leader = c.leader(topic, 0)

    def coordinator_of(g: str) -> int | None:
        try:
            return group_coordinator(c.bootstrap, g)
        except AssertionError:  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is made
            return None

    group = next(g for g in (f"sg-{uuid.uuid4().hex[:8]}" for _ in range(100))
                 if poll(lambda g=g: coordinator_of(g), "the group's coordinator", 180) != leader)
    first = share_consumer(c.bootstrap, group, topic, 4)
    seen: list[int] = []
    warm_ups: list[bytes] = []
    try:
        def take(produce_one: bool, want: int) -> bool:
            if produce_one:  # share.auto.offset.reset is latest: records until the member gets one
                warm_ups.extend(produce(c, topic, [f"w{len(warm_ups)}".encode()]))
            for m in first.poll(1.0):
                seen.append(m.offset())
                first.acknowledge(m, share_accept(m))
            first.commit_sync(30)
            return len(seen) >= want

        poll(lambda: take(True, 1), "the member's first record", 180)
        produce(c, topic, [f"v{i}".encode() for i in range(10)])
        want = len(seen) + 4
        poll(lambda: take(False, want), "four more records accepted", 90)
    finally:
        first.close()
    done, total = len(seen), len(warm_ups) + 10

    def described() -> list[list[str]] | None:
        out = _share_groups(c, "--describe", "--offsets", "--group", group)
        # the lag: the records from the member's first position (latest at its start) not accepted
        assert [group, topic, "0"] == out[-1][:3] and out[-1][-1] == str(total - min(seen) - done), (out, seen, total)
        return out

    out = poll(described, "the lag described", 60)
    assert out[0] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], out
    assert min(seen) <= int(out[1][3]) <= total, out  # Kafka moves the persisted start offset lazily
    reset = _share_groups(c, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert reset == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "0"]], reset
    out = _share_groups(c, "--describe", "--offsets", "--group", group)
    assert out[1] == [group, topic, "0", "0", str(total)], out
    second = share_consumer(c.bootstrap, group, topic, 10)
    again: list[tuple[int, int]] = []
    try:
        def take_all() -> bool:
            for m in second.poll(1.0):
                again.append((m.offset(), m.delivery_count()))
                second.acknowledge(m, share_accept(m))
            second.commit_sync(30)
            return len(again) >= total

        poll(take_all, "every record again after the reset", 120)
    finally:
        second.close()
    assert sorted(again) == [(o, 1) for o in range(total)], again
    deleted = _share_groups(c, "--delete-offsets", "--group", group, "--topic", topic)
    assert deleted == [["TOPIC", "STATUS"], [topic, "Successful"]], deleted
    out = _share_groups(c, "--describe", "--offsets", "--group", group)
    assert not any(line[:2] == [group, topic] for line in out), out
    gone = _share_groups(c, "--delete", "--group", group)
    assert gone == [["Deletion", "of", "requested", "share", "groups", f"('{group}')", "was", "successful."]], gone
    assert [group] not in _share_groups(c, "--list")


def _offset_rows(c: ClusterOps, group: str) -> list[list[str]]:
    """kafka-share-groups --describe --offsets: the group's rows (group, topic, partition, start offset, lag)."""
    return sorted(line for line in _share_groups(c, "--describe", "--offsets", "--group", group) if line[:1] == [group])


@pytest.mark.timeout(600)
def test_share_group_offsets_described_after_a_group_coordinator_failover(healed: ClusterOps) -> None:
    """A share group's share partitions outlive its members and its coordinator: the group
    coordinator keeps them in ShareGroupStatePartitionMetadata (__consumer_offsets record type 15),
    which the next coordinator replays. The members gone and the coordinator killed (kill -9),
    `kafka-share-groups --describe --offsets` prints the same rows; --reset-offsets of one partition,
    --delete-offsets and --delete then work on the new coordinator, with the same words on both."""
    c = healed
    topic = f"ref-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 3, config={"min.insync.replicas": "2"})])[topic].result(60)
    for p in (0, 1):
        c.wait_for_isr(topic, p, [1, 2, 3])
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(6):
        p.produce(topic, value=f"v{i}".encode(), partition=i % 2)
    assert p.flush(60) == 0
    group = f"sgf-{uuid.uuid4().hex[:8]}"
    address = (c.addresses[0][0], int(c.addresses[0][1]))
    r = _configs_tool(address, "--entity-type", "groups", "--entity-name", group, "--alter", "--add-config",
                      "share.auto.offset.reset=earliest")
    assert r.returncode == 0, r.stderr
    consumer = share_consumer(c.bootstrap, group, topic, 10)
    try:
        got = share_clients.poll_until(consumer, lambda ms: len(ms) >= 6, share_clients.accept, timeout=120)
    finally:
        consumer.close()  # the member leaves: nobody heartbeats the group again
    assert sorted((m.partition(), m.offset()) for m in got) == [(p, o) for p in (0, 1) for o in range(3)]
    seen: list[list[list[str]]] = []

    def both_done() -> list[list[str]] | None:
        seen.append(rows := _offset_rows(c, group))
        # every record accepted: no lag on either partition (KIP-1226); the start offset is 0-3,
        # as the share-partition leader moved it (Kafka's moves it lazily)
        return rows if [(r[:3], r[4]) for r in rows] == [([group, topic, str(p)], "0") for p in (0, 1)] else None

    try:
        before = poll(both_done, "both share partitions described", 90)
    except TimeoutError:
        raise AssertionError(seen[-3:]) from None
    assert all(0 <= int(r[3]) <= 3 for r in before), before
    coordinator = group_coordinator(c.bootstrap, group)
    c.wait_for_isr("__consumer_offsets", partition_for(group, 50), [1, 2, 3], timeout=90)
    c.stop_broker(coordinator, kill=True)
    poll(lambda: group_coordinator(c.bootstrap, group) != coordinator, "a new group coordinator", 120, interval=1)
    after = poll(lambda: _offset_rows(c, group), "the group described again", 90, interval=1)
    assert after == before, (before, after)
    reset = _share_groups(c, "--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-earliest", "--execute")
    assert reset == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "1", "0"]], reset
    assert _offset_rows(c, group) == [before[0], [group, topic, "1", "0", "3"]]
    deleted = _share_groups(c, "--delete-offsets", "--group", group, "--topic", topic)
    assert deleted == [["TOPIC", "STATUS"], [topic, "Successful"]], deleted
    assert _offset_rows(c, group) == []
    # again: the group has no share state of the topic left (Kafka: "There is no offset information
    # to delete.", UNKNOWN_TOPIC_OR_PARTITION for the topic)
    again = _share_groups(c, "--delete-offsets", "--group", group, "--topic", topic)
    assert again == [["TOPIC", "STATUS"], [topic, *"Error: There is no offset information to delete.".split()]], again
    gone = _share_groups(c, "--delete", "--group", group)
    assert gone == [["Deletion", "of", "requested", "share", "groups", f"('{group}')", "was", "successful."]], gone
