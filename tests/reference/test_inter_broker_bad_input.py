"""Bad input on the inter-broker protocol, sent to Apache Kafka 4.4's cluster and to minibroker's
(issue 29): follower Fetch and OffsetForLeaderEpoch requests with stale or future leader epochs,
to a broker that is not the leader, from a broker that is not a replica, for a topic id nobody
has, past the log end, or with a last fetched epoch that diverged. Each answer's error code (and
the diverging epoch / end offset where there is one) must be Kafka's; neither broker may fail,
close the connection or change the partition (its leader, epoch, ISR and high watermark are the
same afterwards). The expected codes are what Kafka 4.4 answered: FENCED_LEADER_EPOCH (74),
UNKNOWN_LEADER_EPOCH (75, also to a replica id that is no replica), NOT_LEADER_OR_FOLLOWER (6),
UNKNOWN_TOPIC_ID (100), OFFSET_OUT_OF_RANGE (1)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.cluster_testing import ClusterOps
from minibroker.testing import Cluster
from minibroker_protocol.apis import controller_registration, fetch, metadata, offset_for_leader_epoch
from reference import kafka_reference as kr
from reference.kafka_cluster import KafkaCluster
from tests.integration.helpers import RawClient

FETCH_VERSION = 17  # what Kafka 4.4's followers send (replica state, directory ids)
OFFSET_FOR_EPOCH_VERSION = 4
ZERO = uuid.UUID(int=0)


@pytest.fixture(scope="module", params=["minibroker", "kafka"])
def cluster(request: pytest.FixtureRequest) -> Iterator[ClusterOps]:
    c: ClusterOps
    if request.param == "kafka":
        why = kr.missing_prerequisites()
        if why is not None:
            pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
        c = KafkaCluster(3)
    else:
        c = Cluster(3)
    c.start()  # type: ignore[attr-defined]
    try:
        yield c
    finally:
        c.stop()  # type: ignore[attr-defined]


def address(c: ClusterOps, node_id: int) -> str:
    b = c.brokers[node_id]  # type: ignore[attr-defined]
    return f"{b.host}:{b.port}"


def topic_id(c: ClusterOps, topic: str) -> uuid.UUID:
    with RawClient(address(c, c.partition(topic).leader)) as raw:
        resp = raw.call(metadata.API, 12, metadata.REQUEST(
            topics=[metadata.REQUEST.MetadataRequestTopic(name=topic, topic_id=ZERO)], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False))
    (t,) = resp.topics
    return t.topic_id


def follower_fetch(c: ClusterOps, to: int, replica: int, tid: uuid.UUID, *, epoch: int, offset: int,
                   last_fetched_epoch: int = -1) -> fetch.FetchResponse.PartitionData:
    R = fetch.REQUEST
    req = R(replica_state=R.ReplicaState(replica_id=replica, replica_epoch=-1), max_wait_ms=0, min_bytes=1,
            max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
            topics=[R.FetchTopic(topic_id=tid, partitions=[R.FetchPartition(
                partition=0, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=last_fetched_epoch,
                log_start_offset=-1, partition_max_bytes=1 << 20)])],
            forgotten_topics_data=[])
    with RawClient(address(c, to)) as raw:
        resp = raw.call(fetch.API, FETCH_VERSION, req)
    assert resp.error_code == 0
    (t,) = resp.responses
    (p,) = t.partitions
    return p


def epoch_end(c: ClusterOps, to: int, replica: int, topic: str, *, current: int, asked: int
              ) -> offset_for_leader_epoch.OffsetForLeaderEpochResponse.EpochEndOffset:
    R = offset_for_leader_epoch.REQUEST
    req = R(replica_id=replica, topics=[R.OffsetForLeaderTopic(topic=topic, partitions=[
        R.OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=asked)])])
    with RawClient(address(c, to)) as raw:
        resp = raw.call(offset_for_leader_epoch.API, OFFSET_FOR_EPOCH_VERSION, req)
    (t,) = resp.topics
    (p,) = t.partitions
    return p


@pytest.fixture(scope="module")
def scenario(cluster: ClusterOps) -> dict[str, object]:
    """A topic (RF 3): 10 records in the first leader's epoch, the leadership moved (5 records in the
    second epoch), moved again: the leader epoch is 2 or more and the log's epochs have known end
    offsets, which every bad request below is about."""
    c = cluster
    topic = f"bad-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})  # kept: a collected client cancels its futures
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(60)
    c.wait_for_isr(topic, 0, [1, 2, 3])
    first = c.partition(topic).leader_epoch
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for n in (10, 5):
        for i in range(n):
            p.produce(topic, value=b"%d" % i, partition=0)
        assert p.flush(60) == 0
        s = c.partition(topic)
        c.move_leader(topic, 0, next(r for r in s.replicas if r != s.leader))
        c.wait_for_isr(topic, 0, [1, 2, 3])
    c.wait_for_high_watermark(topic, 0, 15)
    return {"topic": topic, "topic_id": topic_id(c, topic), "first_epoch": first}


def _state(c: ClusterOps, topic: str) -> tuple[int, int, tuple[int, ...], int]:
    s = c.partition(topic)
    return s.leader, s.leader_epoch, tuple(sorted(s.isr)), c.high_watermark(topic)


def test_follower_fetches_with_bad_epochs_and_places(cluster: ClusterOps, scenario: dict[str, object]) -> None:
    c = cluster
    topic, tid = str(scenario["topic"]), scenario["topic_id"]
    assert isinstance(tid, uuid.UUID)
    before = _state(c, topic)
    leader, epoch = before[0], before[1]
    follower = next(n for n in (1, 2, 3) if n != leader)
    got = {
        "stale epoch": follower_fetch(c, leader, follower, tid, epoch=epoch - 1, offset=0).error_code,
        "future epoch": follower_fetch(c, leader, follower, tid, epoch=epoch + 5, offset=0).error_code,
        "to a follower": follower_fetch(c, follower, next(n for n in (1, 2, 3) if n not in (leader, follower)),
                                        tid, epoch=epoch, offset=0).error_code,
        "unknown topic id": follower_fetch(c, leader, follower, uuid.uuid4(), epoch=epoch, offset=0).error_code,
        "past the log end": follower_fetch(c, leader, follower, tid, epoch=epoch, offset=1000).error_code,
        "from a non-replica": follower_fetch(c, leader, 99, tid, epoch=epoch, offset=0).error_code,
    }
    # Kafka 4.4's answers (the same scenario runs on both kinds; a difference fails one of them)
    assert got == {"stale epoch": 74, "future epoch": 75, "to a follower": 6, "unknown topic id": 100,
                   "past the log end": 1, "from a non-replica": 75}, got
    assert _state(c, topic) == before  # nothing moved


def test_a_follower_whose_last_epoch_diverged_is_told_where(cluster: ClusterOps, scenario: dict[str, object]) -> None:
    c = cluster
    topic, tid = str(scenario["topic"]), scenario["topic_id"]
    assert isinstance(tid, uuid.UUID)
    leader, epoch = c.partition(topic).leader, c.partition(topic).leader_epoch
    follower = next(n for n in (1, 2, 3) if n != leader)
    first = scenario["first_epoch"]
    assert isinstance(first, int) and epoch >= first + 2
    # a follower at offset 14 whose last record is of the first epoch, which ended at 10: diverged
    p = follower_fetch(c, leader, follower, tid, epoch=epoch, offset=14, last_fetched_epoch=first)
    assert (p.error_code, p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, first, 10), p
    # OffsetForLeaderEpoch from the follower: each epoch's end offset (the next epoch's first offset)
    end = epoch_end(c, leader, follower, topic, current=epoch, asked=first)
    assert (end.error_code, end.leader_epoch, end.end_offset) == (0, first, 10)
    end = epoch_end(c, leader, follower, topic, current=epoch, asked=first + 1)
    assert (end.error_code, end.leader_epoch, end.end_offset) == (0, first + 1, 15)
    stale = epoch_end(c, leader, follower, topic, current=epoch - 1, asked=first)
    assert stale.error_code == 74  # FENCED_LEADER_EPOCH
    ahead = epoch_end(c, leader, follower, topic, current=epoch, asked=epoch + 7)
    assert (ahead.error_code, ahead.leader_epoch, ahead.end_offset) == (0, -1, -1)


def test_kafka_cluster_unregister_answers_as_kafka(cluster: ClusterOps, scenario: dict[str, object]) -> None:
    """`kafka-cluster unregister` (UnregisterBroker, which a broker forwards to the controller): a
    stopped broker is unregistered and leaves the cluster's metadata; asked again, and for an id no
    broker has, the controller refuses with Kafka's text; started again, the broker registers anew."""
    c = cluster

    def unregister(node: int) -> tuple[int, str]:
        r = kr.run_tool("kafka-cluster", ["unregister", "--bootstrap-server", address(c, 1), "--id", str(node)],
                        timeout=120)
        return r.returncode, (r.stdout + r.stderr).strip()

    c.stop_broker(3)
    try:
        assert unregister(3) == (0, "Broker 3 is no longer registered.")
        admin = AdminClient({"bootstrap.servers": address(c, 1)})
        brokers = {b.id for b in admin.describe_cluster(request_timeout=30).result(60).nodes}
        assert brokers == {1, 2}
        for node in (3, 99):
            code, out = unregister(node)
            assert code == 1, out
            assert f"Unregister broker request for broker ID {node} failed: Broker ID {node} is not currently " \
                   "registered (org.apache.kafka.clients.admin.KafkaAdminClient)" in out, out
            assert out.endswith(f"Caused by: org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID "
                                f"{node} is not currently registered"), out
    finally:
        c.start_broker(3)
    c.wait_for_isr(str(scenario["topic"]), 0, [1, 2, 3])


def test_kafka_cluster_unregister_controller_answers_as_kafka(cluster: ClusterOps) -> None:
    """`kafka-cluster unregister-controller` (UnregisterController, API 94, Kafka 4.4) on KIP-919's
    controller registrations: `kafka-cluster list-endpoints --bootstrap-controller` (DescribeCluster
    with the controller endpoint type) lists the registered controllers; a second registration
    (ControllerRegistration, API 70, sent to the controller as a controller would) is listed, then
    unregistered through a broker (which forwards it); an id no controller registered is refused
    through a broker and straight on the controller, and the active controller's own id too, each
    with Kafka's text."""
    c = cluster
    ctrl = c.controller  # type: ignore[attr-defined]
    controller = f"{ctrl.host}:{ctrl.port}"

    def tool(*args: str) -> tuple[int, str]:
        r = kr.run_tool("kafka-cluster", list(args), timeout=120)
        return r.returncode, (r.stdout + r.stderr).strip()

    def endpoints() -> list[list[str]]:
        code, out = tool("list-endpoints", "--bootstrap-controller", controller)
        assert code == 0, out
        return [line.split() for line in out.splitlines()]

    header = ["ID", "HOST", "PORT", "RACK", "ENDPOINT_TYPE"]
    assert endpoints() == [header, ["3000", ctrl.host, str(ctrl.port), "null", "controller"]]
    R = controller_registration.REQUEST
    with RawClient(controller) as raw:
        resp = raw.call(controller_registration.API, 0, R(
            controller_id=3001, incarnation_id=uuid.uuid4(), zk_migration_ready=False,
            listeners=[R.Listener(name="CONTROLLER", host=ctrl.host, port=1, security_protocol=0)],
            features=[R.Feature(name="metadata.version", min_supported_version=7, max_supported_version=33)]))
    assert (resp.error_code, resp.error_message) == (0, "")  # Kafka's answer
    assert endpoints() == [header, ["3000", ctrl.host, str(ctrl.port), "null", "controller"],
                           ["3001", ctrl.host, "1", "null", "controller"]]
    assert tool("unregister-controller", "--bootstrap-server", address(c, 1), "--id", "3001") == (
        0, "Controller 3001 is no longer registered.")
    assert endpoints() == [header, ["3000", ctrl.host, str(ctrl.port), "null", "controller"]]
    # each refusal asked once (a Kafka tool run is a JVM start): through a broker or the controller
    broker, on_controller = ["--bootstrap-server", address(c, 1)], ["--bootstrap-controller", controller]
    refusals = [(99, on_controller, "ControllerIdNotRegisteredException", "Controller ID 99 is not currently registered."),
                (3001, broker, "ControllerIdNotRegisteredException", "Controller ID 3001 is not currently registered."),
                (3000, broker, "InvalidRequestException", "Controller cannot unregister itself while it is active.")]
    for node, where, exception, text in refusals:
        code, out = tool("unregister-controller", *where, "--id", str(node))
        assert code == 1, out
        assert f"Unregister controller request for controller ID {node} failed: {text} " \
               "(org.apache.kafka.clients.admin.KafkaAdminClient)" in out, out
        assert out.endswith(f"Caused by: org.apache.kafka.common.errors.{exception}: {text}"), out
