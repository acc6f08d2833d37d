"""kafka-python against the broker: every record shape, all codecs, 8 partitions, fetch from the
middle of a batch, offsets by time, oversize records.

Producers are created with enable_idempotence=False: kafka-python 3.x turns idempotence on by
default against a modern broker and then needs InitProducerId, which is issue 6. The idempotent
path gets its own tests there.
"""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import MessageSizeTooLargeError

from tests.integration.helpers import (
    CODEC_IDS,
    CODECS,
    PARTITIONS,
    TIMEOUT,
    Deadline,
    Rec,
    as_stored,
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


def producer(b, **conf) -> KafkaProducer:
    # enable_idempotence=False until InitProducerId exists (issue 6), see the module docstring.
    conf = {"linger_ms": 5, "request_timeout_ms": int(TIMEOUT * 1000), **conf}
    return KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=False, **conf)


def consumer(b, **conf) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, group_id=None,
                         fetch_max_wait_ms=100, request_timeout_ms=int(TIMEOUT * 1000) + 1000, **conf)


def consume(c: KafkaConsumer, n: int) -> list:
    got: list = []
    d = Deadline()
    while len(got) < n and d:
        for recs in c.poll(timeout_ms=200).values():
            got.extend(recs)
    assert len(got) == n, f"consumed {len(got)} of {n}"
    return got


def received(cr) -> Rec:
    assert cr.timestamp_type == 0  # CreateTime
    return Rec(cr.key, cr.value, tuple(cr.headers), cr.timestamp)


def produce_all(p: KafkaProducer, topic: str, items: list[tuple[int, Rec]]) -> list[tuple[int, int]]:
    futures = [p.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=part,
                      timestamp_ms=r.timestamp) for part, r in items]
    p.flush(TIMEOUT)
    metas = [f.get(TIMEOUT) for f in futures]
    return [(m.partition, m.offset) for m in metas]


@pytest.mark.parametrize("codec", CODECS)
def test_every_record_shape_on_8_partitions(kafka_broker_module, codec):
    topic = unique(f"kp-{codec}")
    create_topic(kafka_broker_module, topic, PARTITIONS)
    items = [(p, r) for p in range(PARTITIONS) for r in sample_records(p, null_header_value=False)]
    p = producer(kafka_broker_module, compression_type=None if codec == "none" else codec)
    try:
        delivered = produce_all(p, topic, items)
    finally:
        p.close(TIMEOUT)
    per_partition = len(sample_records(0))
    assert sorted(delivered) == [(q, o) for q in range(PARTITIONS) for o in range(per_partition)]

    c = consumer(kafka_broker_module)
    try:
        tps = [TopicPartition(topic, q) for q in range(PARTITIONS)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        msgs = consume(c, len(items))
    finally:
        c.close()
    for q in range(PARTITIONS):
        mine = [m for m in msgs if m.partition == q]
        assert [m.offset for m in mine] == list(range(per_partition))
        assert [received(m) for m in mine] == sample_records(q, null_header_value=False)
        assert [as_stored(r) for r in stored_records(kafka_broker_module, topic, q)] == sample_records(q, null_header_value=False)
        # kafka-python sends a batch uncompressed when compressing does not make it smaller, so
        # only the batch with the large repetitive value is sure to carry the codec.
        codecs = [bt.compression for bt in stored_batches(kafka_broker_module, topic, q)]
        assert set(codecs) <= {0, CODEC_IDS[codec]} and CODEC_IDS[codec] in codecs, codecs


def test_consume_from_the_middle_of_a_batch(kafka_broker_module):
    topic = unique("kp-middle")
    create_topic(kafka_broker_module, topic, 1)
    p = producer(kafka_broker_module, linger_ms=500, compression_type="gzip")
    try:
        produce_all(p, topic, [(0, Rec(b"k%d" % i, b"v%d" % i, (), 5_000 + i)) for i in range(10)])
    finally:
        p.close(TIMEOUT)
    assert [(bt.base_offset, bt.records_count) for bt in stored_batches(kafka_broker_module, topic)] == [(0, 10)]

    c = consumer(kafka_broker_module)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 5)
        msgs = consume(c, 5)
        assert c.poll(timeout_ms=300) == {}
    finally:
        c.close()
    assert [(m.offset, m.key, m.value, m.timestamp) for m in msgs] == [
        (i, b"k%d" % i, b"v%d" % i, 5_000 + i) for i in range(5, 10)]


def test_offsets_for_times(kafka_broker_module):
    topic = unique("kp-times")
    create_topic(kafka_broker_module, topic, 1)
    p = producer(kafka_broker_module)
    try:
        produce_all(p, topic, [(0, Rec(b"k", b"t%d" % ts, (), ts)) for ts in (1000, 2000, 3000)])
    finally:
        p.close(TIMEOUT)
    c = consumer(kafka_broker_module)
    try:
        tp = TopicPartition(topic, 0)
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 3}
        for ts, want in [(0, (0, 1000)), (1000, (0, 1000)), (1001, (1, 2000)), (2000, (1, 2000)),
                         (3000, (2, 3000)), (3001, None)]:
            found = c.offsets_for_times({tp: ts})[tp]
            assert (found if found is None else (found.offset, found.timestamp)) == want, ts
    finally:
        c.close()


def test_record_above_topic_max_message_bytes(kafka_broker_module):
    topic = unique("kp-small")
    create_topic(kafka_broker_module, topic, 1, {"max.message.bytes": "1024"})
    p = producer(kafka_broker_module, retries=0)
    try:
        fut = p.send(topic, value=b"x" * 4096)
        with pytest.raises(MessageSizeTooLargeError):
            fut.get(TIMEOUT)
        assert p.send(topic, value=b"y" * 100).get(TIMEOUT).offset == 0
    finally:
        p.close(TIMEOUT)
    assert offsets(kafka_broker_module, topic) == (0, 1)


def test_record_above_the_broker_default_of_1_mb(kafka_broker_module):
    topic = unique("kp-1mb")
    create_topic(kafka_broker_module, topic, 1)
    # Raise the client's own cap (max_request_size) so the broker's 1048588 is what refuses.
    p = producer(kafka_broker_module, retries=0, max_request_size=4_000_000)
    try:
        fut = p.send(topic, value=b"\x01" * 1_200_000)
        with pytest.raises(MessageSizeTooLargeError):
            fut.get(TIMEOUT)
    finally:
        p.close(TIMEOUT)
    assert offsets(kafka_broker_module, topic) == (0, 0)
