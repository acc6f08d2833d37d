"""Real clients riding through faults (issue 32), each asserting what its users care about:

- confluent-kafka's idempotent producer through NOT_LEADER_OR_FOLLOWER and REQUEST_TIMED_OUT, and
  through a Produce answer that never comes: every record stored once, in order;
- a classic consumer group (confluent-kafka) through REBALANCE_IN_PROGRESS on its heartbeat: it
  rejoins (a new generation), no record is skipped, the committed offset is the end;
- a KIP-848 consumer (confluent-kafka, group.protocol=consumer) fenced by FENCED_MEMBER_EPOCH on its
  ConsumerGroupHeartbeat: it joins again, no record is skipped, the committed offset is the end;
- a consumer whose fetch gets OFFSET_OUT_OF_RANGE: auto.offset.reset is applied;
- kafka-python and aiokafka through their connection closed in the middle of fetching: every
  record once, in order;
- a producer through a full disk: KAFKA_STORAGE_ERROR is retried, nothing is lost;
- AsyncBroker's faults, and one registry serving two brokers (a fault's node picks one).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka import KafkaConsumer

from minibroker.faults import FaultError
from tests.integration.helpers import TIMEOUT, Deadline, confluent_consume


def _topic(b, partitions: int = 1) -> str:
    return b.create_topic(f"faults-c-{uuid.uuid4().hex[:8]}", partitions)


def test_idempotent_producer_through_not_leader_and_request_timed_out(faults_broker):
    b = faults_broker
    t = _topic(b, 3)
    with b.faults.inject("Produce", error="NOT_LEADER_OR_FOLLOWER", count=3) as not_leader, \
            b.faults.inject("Produce", error="REQUEST_TIMED_OUT", topic=t, partition=1, count=2, after=1) as timed_out:
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                      "retry.backoff.ms": 20, "max.in.flight.requests.per.connection": 5})
        for i in range(600):
            p.produce(t, value=str(i).encode(), partition=i % 3)
            if i % 100 == 99:
                assert p.flush(TIMEOUT) == 0  # several Produce requests, for the faults to fire on
        assert (not_leader.fired, timed_out.fired) == (3, 2)
    for partition in range(3):
        assert [int(v) for v in b.values(t, partition)] == list(range(partition, 600, 3))


def _consume_committing(c: Consumer, b, group: str, t: str, n: int) -> list[int]:
    """Poll, committing each record as it is processed (at least once), until the group's committed
    offset is `n`; the values in delivery order (a record delivered while the member was losing its
    partitions is delivered again after it rejoined)."""
    got: list[int] = []
    deadline = Deadline()
    while deadline and b.committed(group, t) != n:
        m = c.poll(0.1)
        if m is None or m.error() is not None:
            continue
        got.append(int(m.value()))
        try:
            c.commit(message=m, asynchronous=False)
        except KafkaException:
            pass  # the member is rejoining: the record comes again
    assert deadline, f"committed {b.committed(group, t)} of {n}"
    return got


def test_classic_group_through_rebalance_in_progress(faults_broker):
    b = faults_broker
    t = _topic(b)
    group = f"g-{uuid.uuid4().hex[:8]}"
    for i in range(10):
        b.add_record(t, str(i))
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "heartbeat.interval.ms": 100, "session.timeout.ms": 6000})
    try:
        c.subscribe([t])
        got = _consume_committing(c, b, group, t, 10)
        generation = b.wait_for_group(group, "Stable", members=1).generation
        with b.faults.inject("Heartbeat", error="REBALANCE_IN_PROGRESS", group_id=group) as f:
            f.wait_fired(1)
            for i in range(10, 20):
                b.add_record(t, str(i))
            # the consumer rejoins from its poll loop (librdkafka serves the revocation there)
            got += _consume_committing(c, b, group, t, 20)
        deadline = Deadline()
        while deadline and b.group(group).generation <= generation:
            c.poll(0.1)
        assert b.wait_for_group(group, "Stable", members=1).generation > generation
    finally:
        c.close()
    assert sorted(set(got)) == list(range(20))  # nothing skipped
    assert got[:10] == list(range(10))
    assert b.committed(group, t) == 20


def test_offset_out_of_range_applies_auto_offset_reset(faults_broker):
    b = faults_broker
    t = _topic(b)
    group = f"g-{uuid.uuid4().hex[:8]}"
    for i in range(10):
        b.add_record(t, str(i))
    committer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(t, 0, 5)], asynchronous=False)
    committer.close()
    assert b.committed(group, t) == 5
    with b.faults.inject("Fetch", error="OFFSET_OUT_OF_RANGE", topic=t) as f:
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        try:
            c.subscribe([t])
            first = confluent_consume(c, 1)[0]
        finally:
            c.close()
        assert f.fired == 1
    # the committed position (5) was refused as out of range: the consumer reset to the earliest
    assert first.offset() == 0


def test_kafka_python_through_a_connection_closed_mid_fetch(faults_broker):
    b = faults_broker
    t = _topic(b)
    for i in range(40):
        b.add_record(t, f"record-{i:03d}")
    with b.faults.inject("Fetch", action="close", topic=t, nth=3) as f:
        c = KafkaConsumer(t, bootstrap_servers=b.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                          max_partition_fetch_bytes=300, consumer_timeout_ms=int(TIMEOUT * 1000))
        try:
            got = []
            deadline = Deadline()
            while len(got) < 40 and deadline:
                got += [m.value.decode() for m in c.poll(timeout_ms=500, max_records=100).get(
                    next(iter(c.assignment()), None), [])]
        finally:
            c.close()
        assert f.fired == 1
    assert got == [f"record-{i:03d}" for i in range(40)]


def test_aiokafka_through_a_connection_closed_mid_fetch(faults_broker):
    b = faults_broker
    t = _topic(b)
    for i in range(40):
        b.add_record(t, f"record-{i:03d}")

    async def consume() -> list[str]:
        c = AIOKafkaConsumer(t, bootstrap_servers=b.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, max_partition_fetch_bytes=300)
        await c.start()
        try:
            got: list[str] = []
            async with asyncio.timeout(TIMEOUT):
                while len(got) < 40:
                    for records in (await c.getmany(timeout_ms=500)).values():
                        got += [r.value.decode() for r in records]
            return got
        finally:
            await c.stop()

    with b.faults.inject("Fetch", action="close", topic=t, nth=3) as f:
        got = asyncio.run(consume())
        assert f.fired == 1
    assert got == [f"record-{i:03d}" for i in range(40)]


def test_producer_through_a_full_disk_loses_nothing(faults_broker):
    b = faults_broker
    t = _topic(b)
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "retry.backoff.ms": 20})
    p.produce(t, value=b"0")
    assert p.flush(TIMEOUT) == 0
    full = b.faults.disk_full(topic=t)
    for i in range(1, 50):
        p.produce(t, value=str(i).encode())
    p.poll(0)
    full.wait_fired(1)  # the appends are refused with KAFKA_STORAGE_ERROR, which the producer retries
    assert b.end_offsets(t) == {0: 1}
    full.remove()
    assert p.flush(TIMEOUT) == 0
    assert [int(v) for v in b.values(t)] == list(range(50))


async def test_async_broker_faults_and_waits():
    from aiokafka import AIOKafkaProducer

    from minibroker.testing import AsyncBroker
    from tests.helpers import TEST_OVERRIDES

    async with AsyncBroker(overrides=TEST_OVERRIDES) as b:
        t = b.create_topic("t")
        async with b.faults.inject("Produce", error="NOT_LEADER_OR_FOLLOWER") as f:
            producer = AIOKafkaProducer(bootstrap_servers=b.bootstrap, retry_backoff_ms=20)
            await producer.start()
            try:
                await producer.send_and_wait(t, b"x")
            finally:
                await producer.stop()
            assert (await f.wait_fired(1)).fired == 1
        assert await b.wait_for_high_watermark(t, 0, 1) == 1
        assert b.faults.all() == []


async def test_one_registry_serves_two_brokers_and_node_picks_one():
    """The shape the cluster (issue 29) plugs into: one registry attached to several brokers."""
    from aiokafka import AIOKafkaProducer

    from minibroker.testing import AsyncBroker
    from tests.helpers import TEST_OVERRIDES

    async with AsyncBroker(overrides={**TEST_OVERRIDES, "node.id": 1}) as a, \
            AsyncBroker(overrides={**TEST_OVERRIDES, "node.id": 2}) as b:
        shared = a.broker.faults
        shared.attach(b.broker.apis, b.broker)
        b.broker.faults = shared
        on_two = a.faults.inject("Produce", error="NOT_LEADER_OR_FOLLOWER", node=2, count=2)
        for broker, fired in ((a, 0), (b, 2)):
            broker.create_topic("t")
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, retry_backoff_ms=20)
            await producer.start()
            try:
                await producer.send_and_wait("t", b"x")  # retried past the errors on node 2
            finally:
                await producer.stop()
            assert on_two.fired == fired
            assert broker.values("t") == [b"x"]
        on_two.remove()
        with pytest.raises(FaultError):
            a.faults.inject(kind="broker.pause", node=3)


def test_kip848_consumer_through_a_fenced_member_epoch(faults_broker):
    b = faults_broker
    t = _topic(b)
    group = f"g848-{uuid.uuid4().hex[:8]}"
    for i in range(10):
        b.add_record(t, str(i))
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([t])
        got = _consume_committing(c, b, group, t, 10)
        with b.faults.inject("ConsumerGroupHeartbeat", error="FENCED_MEMBER_EPOCH", group_id=group) as f:
            f.wait_fired(1)  # the member is fenced: it gives up its partitions and joins again, epoch 0
            for i in range(10, 20):
                b.add_record(t, str(i))
            got += _consume_committing(c, b, group, t, 20)
    finally:
        c.close()
    assert sorted(set(got)) == list(range(20))  # nothing skipped
    assert got[:10] == list(range(10))
    assert b.committed(group, t) == 20



def test_idempotent_producer_through_a_dropped_answer(faults_broker):
    """The broker never answers one Produce (a lost response): librdkafka times the request out,
    drops the connection, retries on a new one; the records are stored once, in order."""
    b = faults_broker
    t = _topic(b)
    with b.faults.inject("Produce", action="drop", topic=t) as dropped:
        p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                      "request.timeout.ms": 1000, "socket.timeout.ms": 1000, "retry.backoff.ms": 20})
        for i in range(100):
            p.produce(t, value=str(i).encode())
        assert p.flush(TIMEOUT) == 0
        assert dropped.fired == 1
    assert [int(v) for v in b.values(t)] == list(range(100))
