"""ListGroups / DescribeGroups / DeleteGroups / OffsetFetch / OffsetDelete through the admin
clients of confluent-kafka, kafka-python and aiokafka, and kcat's balanced consumer (-G)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest

TOPIC = "ledger"
RECORDS = 20


@pytest.fixture
def groups(kafka_broker_isolated):
    """A topic with records, a live group with one member ("live", Stable) and an Empty group
    with committed offsets ("idle")."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    bs = kafka_broker_isolated.bootstrap
    kafka_broker_isolated.call(lambda br: br.create_topic(TOPIC, 2))
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(RECORDS):
        p.produce(TOPIC, value=f"r{i}".encode(), partition=i % 2)
    assert p.flush(10) == 0

    idle = Consumer({"bootstrap.servers": bs, "group.id": "idle", "enable.auto.commit": False})
    idle.commit(offsets=[TopicPartition(TOPIC, 0, 3), TopicPartition(TOPIC, 1, 5)], asynchronous=False)
    idle.close()

    live = Consumer({"bootstrap.servers": bs, "group.id": "live", "client.id": "live-client",
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"})
    live.subscribe([TOPIC])
    deadline = time.monotonic() + 20
    while len(live.assignment()) < 2:
        assert time.monotonic() < deadline, "the live member got no assignment"
        live.poll(0.1)
    coord = kafka_broker_isolated.broker.group_coordinator
    assert kafka_broker_isolated.call(lambda br: coord.groups["live"].state.value) == "Stable"
    yield bs
    live.close()


def test_confluent_admin(groups, kafka_broker_isolated):
    from confluent_kafka import (
        ConsumerGroupState,
        ConsumerGroupTopicPartitions,
        KafkaException,
        TopicPartition,
    )
    from confluent_kafka.admin import AdminClient

    a = AdminClient({"bootstrap.servers": groups})
    listed = a.list_consumer_groups(request_timeout=10).result()
    states = {g.group_id: g.state for g in listed.valid}
    assert states == {"live": ConsumerGroupState.STABLE, "idle": ConsumerGroupState.EMPTY}
    stable = a.list_consumer_groups(states={ConsumerGroupState.STABLE}, request_timeout=10).result()
    assert [g.group_id for g in stable.valid] == ["live"]

    desc = {g: f.result() for g, f in a.describe_consumer_groups(["live", "idle"], request_timeout=10).items()}
    live = desc["live"]
    assert live.state == ConsumerGroupState.STABLE and live.partition_assignor == "range"
    [m] = live.members
    assert m.client_id == "live-client" and m.host == "/127.0.0.1"
    assert sorted(tp.partition for tp in m.assignment.topic_partitions) == [0, 1]
    assert desc["idle"].state == ConsumerGroupState.EMPTY and desc["idle"].members == []

    req = [ConsumerGroupTopicPartitions("idle", [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])]
    offsets = a.list_consumer_group_offsets(req)["idle"].result()
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == {0: 3, 1: 5}

    futures = a.delete_consumer_groups(["live", "idle"], request_timeout=10)
    with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
        futures["live"].result()
    futures["idle"].result()
    after = a.list_consumer_groups(request_timeout=10).result()
    assert [g.group_id for g in after.valid] == ["live"]
    coord = kafka_broker_isolated.broker.group_coordinator
    assert kafka_broker_isolated.call(lambda br: coord.committed("idle", TOPIC, 0)) is None


def test_kafka_python_admin(groups):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import GroupSubscribedToTopicError, NoError

    a = KafkaAdminClient(bootstrap_servers=groups)
    try:
        listed = {g["group_id"]: g for g in a.list_groups()}
        assert listed["live"]["group_state"] == "Stable" and listed["live"]["protocol_type"] == "consumer"
        assert listed["idle"]["group_state"] == "Empty"
        desc = a.describe_groups(["live", "nope"])
        assert desc["live"]["protocol_data"] == "range" and len(desc["live"]["members"]) == 1
        assert desc["nope"]["group_state"] == "Dead"
        offsets = a.list_group_offsets("idle")["idle"]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 3, 1: 5}
        # OffsetDelete: allowed for the Empty group, refused for a topic the live group consumes.
        assert a.delete_group_offsets("idle", [TopicPartition(TOPIC, 0)]) == {TopicPartition(TOPIC, 0): NoError}
        assert {tp.partition for tp in a.list_group_offsets("idle")["idle"]} == {1}
        refused = a.delete_group_offsets("live", [TopicPartition(TOPIC, 0)])
        assert refused == {TopicPartition(TOPIC, 0): GroupSubscribedToTopicError}
        assert a.delete_groups(["idle", "live"]) == {"idle": "OK", "live": "NonEmptyGroupError"}
        assert [g["group_id"] for g in a.list_groups()] == ["live"]
    finally:
        a.close()


def test_aiokafka_admin(groups):
    from aiokafka.admin import AIOKafkaAdminClient

    async def run():
        a = AIOKafkaAdminClient(bootstrap_servers=groups)
        await a.start()
        try:
            # "idle" only ever committed offsets: a simple group, with no protocol type (as in Kafka).
            assert sorted(await a.list_consumer_groups()) == [("idle", ""), ("live", "consumer")]
            [resp] = await a.describe_consumer_groups(["live"])
            [(error, group_id, state, ptype, protocol, members)] = resp.groups
            assert (error, group_id, state, ptype, protocol, len(members)) == (0, "live", "Stable", "consumer",
                                                                               "range", 1)
            offsets = await a.list_consumer_group_offsets("idle")
            assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 3, 1: 5}
        finally:
            await a.close()

    asyncio.run(asyncio.wait_for(run(), 30))


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install -y kcat)")
def test_kcat_balanced_consumer_reads_everything_and_commits(groups, kafka_broker_isolated):
    out = subprocess.run(["kcat", "-b", groups, "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
                          "-e", "-q", "-f", "%p %o %s\n", TOPIC], capture_output=True, timeout=60, check=True)
    lines = out.stdout.decode().split()
    values = sorted(lines[2::3])
    assert values == sorted(f"r{i}" for i in range(RECORDS))
    coord = kafka_broker_isolated.broker.group_coordinator
    committed = kafka_broker_isolated.call(lambda br: {p: coord.committed("kcat-group", TOPIC, p) for p in (0, 1)})
    assert {p: om.offset for p, om in committed.items() if om} == {0: RECORDS // 2, 1: RECORDS // 2}
