"""Produce and Fetch on the wire: long-poll timing, acks=0, fetch from the middle of a batch,
errors a client must see. Requests are built with minibroker_protocol.codec on a raw socket where a client
library would hide what is being tested; real clients produce from the other side."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minibroker_protocol.apis import api_versions, fetch, produce
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import decode_batches
from tests.integration.helpers import (
    TIMEOUT,
    RawClient,
    as_stored,
    confluent_consume,
    create_topic,
    module_broker,
    offsets,
    records_batch,
    stored_records,
    unique,
    wait_until,
)

FETCH_V = 12  # the last version that names topics (13+ use ids)
PRODUCE_V = 9


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def fetch_request(topic: str, offset: int, *, max_wait_ms: int, min_bytes: int = 1) -> object:
    R = fetch.REQUEST
    return R(max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20, isolation_level=0, session_id=0,
             session_epoch=-1, topics=[R.FetchTopic(topic=topic, partitions=[
                 R.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])],
             forgotten_topics_data=[], rack_id="")


def produce_request(topic: str, records: bytes, acks: int, partition: int = 0) -> object:
    R = produce.REQUEST
    return R(transactional_id=None, acks=acks, timeout_ms=5_000, topic_data=[R.TopicProduceData(
        name=topic, partition_data=[R.PartitionProduceData(index=partition, records=records)])])


def the_partition(resp) -> object:
    [t] = resp.responses
    [p] = t.partitions
    return p


def produce_later(bootstrap: str, topic: str, delay: float, produced_at: list[float]) -> threading.Thread:
    """Produce one record from confluent-kafka after `delay` seconds, noting when it was acked."""

    def run() -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        p.list_topics(topic, timeout=TIMEOUT)  # connect before the clock matters
        time.sleep(delay)
        p.produce(topic, value=b"wake up", on_delivery=lambda err, msg: produced_at.append(time.monotonic()))
        p.flush(TIMEOUT)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def test_long_poll_returns_soon_after_a_produce_from_another_client(kafka_broker_module):
    topic = unique("lp-wake")
    create_topic(kafka_broker_module, topic)
    produced_at: list[float] = []
    with RawClient(kafka_broker_module.bootstrap) as raw:
        th = produce_later(kafka_broker_module.bootstrap, topic, 0.5, produced_at)
        t0 = time.monotonic()
        resp = raw.call(fetch.API, FETCH_V, fetch_request(topic, 0, max_wait_ms=2_000))
        answered = time.monotonic()
        th.join(TIMEOUT)
    part = the_partition(resp)
    assert part.error_code == 0
    [batch] = decode_batches(bytes(part.records))
    assert [r.value for r in batch.records] == [b"wake up"]
    assert produced_at, "the producer never got its ack"
    # It waited for the produce (not answered empty at once) and woke well before max_wait.
    assert answered - t0 >= 0.4
    assert answered - t0 < 1.5, f"fetch took {answered - t0:.2f}s, max_wait is 2s"
    assert answered - produced_at[0] < 0.5


def test_long_poll_waits_max_wait_when_nothing_comes(kafka_broker_module):
    topic = unique("lp-idle")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        t0 = time.monotonic()
        resp = raw.call(fetch.API, FETCH_V, fetch_request(topic, 0, max_wait_ms=2_000))
        elapsed = time.monotonic() - t0
    part = the_partition(resp)
    assert (part.error_code, part.high_watermark, bytes(part.records)) == (0, 0, b"")
    assert 1.9 <= elapsed < 3.0, elapsed


def test_fetch_with_min_bytes_0_answers_at_once(kafka_broker_module):
    topic = unique("lp-zero")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        t0 = time.monotonic()
        raw.call(fetch.API, FETCH_V, fetch_request(topic, 0, max_wait_ms=2_000, min_bytes=0))
        assert time.monotonic() - t0 < 0.5


def test_consumer_long_poll_latency_end_to_end(kafka_broker_module):
    """A consumer sitting in a 2 s long poll sees a record within a fraction of that."""
    topic = unique("lp-e2e")
    create_topic(kafka_broker_module, topic)
    c = Consumer({"bootstrap.servers": kafka_broker_module.bootstrap, "group.id": unique("g"), "fetch.wait.max.ms": 2_000,
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        assert c.poll(0.5) is None  # the consumer is now parked in a fetch
        produced_at: list[float] = []
        th = produce_later(kafka_broker_module.bootstrap, topic, 0.0, produced_at)
        [msg] = confluent_consume(c, 1)
        seen = time.monotonic()
        th.join(TIMEOUT)
    finally:
        c.close()
    assert msg.value() == b"wake up"
    assert seen - produced_at[0] < 1.0


def test_fetch_from_the_middle_of_a_batch_returns_the_whole_batch(kafka_broker_module):
    """Kafka sends the batch holding the fetch offset whole; clients drop what precedes it."""
    topic = unique("mid-raw")
    create_topic(kafka_broker_module, topic)
    values = [b"r%d" % i for i in range(10)]
    with RawClient(kafka_broker_module.bootstrap) as raw:
        resp = raw.call(produce.API, PRODUCE_V, produce_request(topic, records_batch(values), acks=1))
        assert the_partition_produce(resp).error_code == 0
        part = the_partition(raw.call(fetch.API, FETCH_V, fetch_request(topic, 5, max_wait_ms=0)))
    [batch] = decode_batches(bytes(part.records))
    assert (batch.base_offset, batch.records_count, part.high_watermark) == (0, 10, 10)
    assert [(r.offset, r.value) for r in batch.records if r.offset >= 5] == list(zip(range(5, 10), values[5:], strict=True))


def the_partition_produce(resp) -> object:
    [t] = resp.responses
    [p] = t.partition_responses
    return p


def test_acks_0_gets_no_response(kafka_broker_module):
    topic = unique("acks0")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        produce_cid = raw.send(produce.API, PRODUCE_V, produce_request(topic, records_batch([b"fire", b"forget"]),
                                                                        acks=0))
        versions_cid = raw.send(api_versions.API, 3, api_versions.REQUEST(client_software_name="it-raw",
                                                                          client_software_version="1"))
        cid, body = raw.recv(api_versions.API, 3)
    assert cid == versions_cid != produce_cid
    assert body.error_code == 0
    wait_until(lambda: offsets(kafka_broker_module, topic) == (0, 2), what="the acks=0 records to be stored")
    assert [r.value for r in stored_records(kafka_broker_module, topic)] == [b"fire", b"forget"]


def test_acks_0_error_closes_the_connection(kafka_broker_module):
    """The client cannot see an error it gets no answer for, so Kafka closes the connection."""
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.send(produce.API, PRODUCE_V, produce_request(unique("no-such-topic"), records_batch([b"x"]), acks=0))
        assert raw.closed_by_peer()


@pytest.mark.parametrize("acks", [1, -1])
def test_produce_to_unknown_topic_or_partition(kafka_broker_module, acks):
    topic = unique("known")
    create_topic(kafka_broker_module, topic, 2)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        for name, partition in [(unique("unknown"), 0), (topic, 2)]:
            resp = raw.call(produce.API, PRODUCE_V, produce_request(name, records_batch([b"x"]), acks, partition))
            p = the_partition_produce(resp)
            assert (p.error_code, p.base_offset) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)


def test_produce_response_offsets_and_log_start(kafka_broker_module):
    topic = unique("offs")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        got = []
        for n in (3, 1, 4):
            resp = raw.call(produce.API, PRODUCE_V, produce_request(topic, records_batch([b"v"] * n), acks=-1))
            p = the_partition_produce(resp)
            got.append((p.error_code, p.base_offset, p.log_start_offset, p.log_append_time_ms))
    assert got == [(0, 0, 0, -1), (0, 3, 0, -1), (0, 4, 0, -1)]
    assert [as_stored(r).value for r in stored_records(kafka_broker_module, topic)] == [b"v"] * 8
    assert [r.offset for r in stored_records(kafka_broker_module, topic)] == list(range(8))


def test_fetch_out_of_range(kafka_broker_module):
    topic = unique("oor")
    create_topic(kafka_broker_module, topic)
    with RawClient(kafka_broker_module.bootstrap) as raw:
        raw.call(produce.API, PRODUCE_V, produce_request(topic, records_batch([b"a", b"b"]), acks=1))
        part = the_partition(raw.call(fetch.API, FETCH_V, fetch_request(topic, 3, max_wait_ms=0)))
    # As Kafka's ReplicaManager.createLogReadResult: a failed read reports unknown offsets.
    assert (part.error_code, part.high_watermark, part.last_stable_offset, part.log_start_offset) == (
        ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1)
    assert bytes(part.records) == b""
