"""confluent-kafka (librdkafka) against the broker: produce and consume every record shape, all
codecs, 8 partitions, fetch from the middle of a batch, offsets by time, oversize records."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.integration.helpers import (
    CODEC_IDS,
    CODECS,
    PARTITIONS,
    TIMEOUT,
    Rec,
    as_stored,
    confluent_consume,
    create_topic,
    module_broker,
    offsets,
    sample_records,
    stored_batches,
    stored_records,
    unique,
)


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory):
    with module_broker(tmp_path_factory) as b:
        yield b


def producer(b, **conf) -> Producer:
    return Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, **conf})


def consumer(b, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique("g"), "enable.auto.commit": False,
                     "fetch.wait.max.ms": 100, **conf})


def produce_all(p: Producer, topic: str, items: list[tuple[int, Rec]]) -> list[tuple[int, int]]:
    """Produce and wait for every delivery report; returns (partition, offset) in order."""
    reports: list = []

    def on_delivery(err, msg):
        reports.append((err, msg))

    for partition, r in items:
        p.produce(topic, key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp or 0,
                  partition=partition, on_delivery=on_delivery)
    assert p.flush(TIMEOUT) == 0, "messages still in the producer queue"
    assert len(reports) == len(items)
    errors = [err for err, _ in reports if err is not None]
    assert not errors, errors
    return [(m.partition(), m.offset()) for _, m in reports]


def received(msg) -> Rec:
    kind, ts = msg.timestamp()
    assert kind == 1  # TIMESTAMP_CREATE_TIME
    return Rec(msg.key(), msg.value(), tuple(msg.headers() or ()), ts)


@pytest.mark.parametrize("codec", CODECS)
def test_every_record_shape_on_8_partitions(kafka_broker_module, codec):
    topic = unique(f"cf-{codec}")
    create_topic(kafka_broker_module, topic, PARTITIONS)
    items = [(p, r) for p in range(PARTITIONS) for r in sample_records(p)]
    delivered = produce_all(producer(kafka_broker_module, **{"compression.type": codec}), topic, items)
    per_partition = len(sample_records(0))
    assert sorted(delivered) == [(p, o) for p in range(PARTITIONS) for o in range(per_partition)]

    c = consumer(kafka_broker_module)
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        msgs = confluent_consume(c, len(items))
    finally:
        c.close()
    for p in range(PARTITIONS):
        mine = [m for m in msgs if m.partition() == p]
        assert [m.offset() for m in mine] == list(range(per_partition))
        assert [received(m) for m in mine] == sample_records(p)
        # What the broker stored is what was sent, in the codec the producer chose.
        assert [as_stored(r) for r in stored_records(kafka_broker_module, topic, p)] == sample_records(p)
        assert {bt.compression for bt in stored_batches(kafka_broker_module, topic, p)} == {CODEC_IDS[codec]}


def test_consume_from_the_middle_of_a_batch(kafka_broker_module):
    topic = unique("cf-middle")
    create_topic(kafka_broker_module, topic, 1)
    items = [(0, Rec(b"k%d" % i, b"v%d" % i, (), 5_000 + i)) for i in range(10)]
    # One batch, one request: linger long enough that flush() sends all ten together.
    produce_all(producer(kafka_broker_module, **{"linger.ms": 200, "compression.type": "lz4"}), topic, items)
    batches = stored_batches(kafka_broker_module, topic)
    assert [(bt.base_offset, bt.records_count) for bt in batches] == [(0, 10)]

    c = consumer(kafka_broker_module)
    try:
        c.assign([TopicPartition(topic, 0, 5)])
        msgs = confluent_consume(c, 5)
        assert c.poll(0.3) is None  # nothing after offset 9
    finally:
        c.close()
    assert [(m.offset(), m.key(), m.value(), m.timestamp()[1]) for m in msgs] == [
        (i, b"k%d" % i, b"v%d" % i, 5_000 + i) for i in range(5, 10)]


def test_offsets_for_times_and_list_offsets(kafka_broker_module):
    topic = unique("cf-times")
    create_topic(kafka_broker_module, topic, 1)
    produce_all(producer(kafka_broker_module), topic, [(0, Rec(b"k", b"t%d" % ts, (), ts)) for ts in (1000, 2000, 3000)])

    c = consumer(kafka_broker_module)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT) == (0, 3)
        for ts, want in [(0, 0), (1000, 0), (1001, 1), (2000, 1), (2999, 2), (3000, 2), (3001, -1)]:
            [tp] = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=TIMEOUT)
            assert tp.error is None
            assert tp.offset == want, (ts, tp)
    finally:
        c.close()

    admin = AdminClient({"bootstrap.servers": kafka_broker_module.bootstrap})
    tp = TopicPartition(topic, 0)
    for spec, want in [(OffsetSpec.earliest(), (0, None)), (OffsetSpec.latest(), (3, None)),
                       (OffsetSpec.max_timestamp(), (2, 3000)), (OffsetSpec.for_timestamp(1500), (1, 2000))]:
        info = admin.list_offsets({tp: spec}, request_timeout=TIMEOUT)[tp].result(TIMEOUT)
        assert info.offset == want[0], (spec, info)
        if want[1] is not None:
            assert info.timestamp == want[1]


def deliver_one(p: Producer, topic: str, value: bytes):
    reports: list = []
    p.produce(topic, value=value, on_delivery=lambda err, msg: reports.append(err))
    p.flush(TIMEOUT)
    assert len(reports) == 1, "no delivery report: the producer hung"
    return reports[0]


def test_record_above_topic_max_message_bytes(kafka_broker_module):
    topic = unique("cf-small")
    create_topic(kafka_broker_module, topic, 1, {"max.message.bytes": "1024"})
    p = producer(kafka_broker_module, **{"message.send.max.retries": 0})
    err = deliver_one(p, topic, b"x" * 4096)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err
    assert offsets(kafka_broker_module, topic) == (0, 0)
    assert deliver_one(p, topic, b"y" * 100) is None  # the connection still works
    assert offsets(kafka_broker_module, topic) == (0, 1)


def test_record_above_the_broker_default_of_1_mb(kafka_broker_module):
    topic = unique("cf-1mb")
    create_topic(kafka_broker_module, topic, 1)
    # Raise the client's own limit so the broker is the one refusing (default max.message.bytes 1048588).
    p = producer(kafka_broker_module, **{"message.max.bytes": 4_000_000, "message.send.max.retries": 0})
    err = deliver_one(p, topic, b"\x01" * 1_200_000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err
    assert offsets(kafka_broker_module, topic) == (0, 0)


@pytest.mark.parametrize("reset, want", [("earliest", [b"a", b"b", b"c"]), ("latest", [b"after"])])
def test_offset_out_of_range_resets(kafka_broker_module, reset, want):
    topic = unique(f"cf-oor-{reset}")
    create_topic(kafka_broker_module, topic, 1)
    p = producer(kafka_broker_module)
    produce_all(p, topic, [(0, Rec(None, v, (), 1000)) for v in (b"a", b"b", b"c")])
    c = consumer(kafka_broker_module, **{"auto.offset.reset": reset})
    try:
        c.assign([TopicPartition(topic, 0, 100)])  # past the end: OFFSET_OUT_OF_RANGE, then a reset
        if reset == "latest":
            # Nothing is re-read; the reset (a ListOffsets after the first fetch) takes milliseconds,
            # and the consumer's position is not visible until it has consumed something.
            assert c.poll(1.0) is None
            produce_all(p, topic, [(0, Rec(None, b"after", (), 2000))])
        msgs = confluent_consume(c, len(want))
    finally:
        c.close()
    assert [m.value() for m in msgs] == want
