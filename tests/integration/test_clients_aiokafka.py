"""aiokafka against the broker: every record shape, all codecs, 8 partitions, fetch from the middle
of a batch, offsets by time, oversize records."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

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


async def started_producer(b, **conf) -> AIOKafkaProducer:
    p = AIOKafkaProducer(bootstrap_servers=b.bootstrap, **{"linger_ms": 5, "enable_idempotence": False,
                                                           "request_timeout_ms": int(TIMEOUT * 1000), **conf})
    await asyncio.wait_for(p.start(), TIMEOUT)
    return p


async def started_consumer(b, **conf) -> AIOKafkaConsumer:
    c = AIOKafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, group_id=None,
                         fetch_max_wait_ms=100, **conf)
    await asyncio.wait_for(c.start(), TIMEOUT)
    return c


async def consume(c: AIOKafkaConsumer, n: int) -> list:
    got: list = []
    d = Deadline()
    while len(got) < n and d:
        for recs in (await c.getmany(timeout_ms=200)).values():
            got.extend(recs)
    assert len(got) == n, f"consumed {len(got)} of {n}"
    return got


async def produce_all(p: AIOKafkaProducer, topic: str, items: list[tuple[int, Rec]]) -> list[tuple[int, int]]:
    futs = [await p.send(topic, key=r.key, value=r.value, headers=list(r.headers), partition=part,
                         timestamp_ms=r.timestamp) for part, r in items]
    metas = await asyncio.wait_for(asyncio.gather(*futs), TIMEOUT)
    return [(m.partition, m.offset) for m in metas]


def received(cr) -> Rec:
    assert cr.timestamp_type == 0  # CreateTime
    return Rec(cr.key, cr.value, tuple(cr.headers), cr.timestamp)


@pytest.mark.parametrize("codec", CODECS)
async def test_every_record_shape_on_8_partitions(kafka_broker_module, codec):
    topic = unique(f"aio-{codec}")
    create_topic(kafka_broker_module, topic, PARTITIONS)
    items = [(q, r) for q in range(PARTITIONS) for r in sample_records(q)]
    p = await started_producer(kafka_broker_module, compression_type=None if codec == "none" else codec)
    try:
        delivered = await produce_all(p, topic, items)
    finally:
        await p.stop()
    per_partition = len(sample_records(0))
    assert sorted(delivered) == [(q, o) for q in range(PARTITIONS) for o in range(per_partition)]

    c = await started_consumer(kafka_broker_module)
    try:
        tps = [TopicPartition(topic, q) for q in range(PARTITIONS)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        msgs = await consume(c, len(items))
    finally:
        await c.stop()
    for q in range(PARTITIONS):
        mine = [m for m in msgs if m.partition == q]
        assert [m.offset for m in mine] == list(range(per_partition))
        assert [received(m) for m in mine] == sample_records(q)
        assert [as_stored(r) for r in stored_records(kafka_broker_module, topic, q)] == sample_records(q)
        assert {bt.compression for bt in stored_batches(kafka_broker_module, topic, q)} == {CODEC_IDS[codec]}


async def test_consume_from_the_middle_of_a_batch(kafka_broker_module):
    topic = unique("aio-middle")
    create_topic(kafka_broker_module, topic, 1)
    p = await started_producer(kafka_broker_module, linger_ms=500, compression_type="snappy")
    try:
        await produce_all(p, topic, [(0, Rec(b"k%d" % i, b"v%d" % i, (), 5_000 + i)) for i in range(10)])
    finally:
        await p.stop()
    assert [(bt.base_offset, bt.records_count) for bt in stored_batches(kafka_broker_module, topic)] == [(0, 10)]

    c = await started_consumer(kafka_broker_module)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 5)
        msgs = await consume(c, 5)
        assert await c.getmany(timeout_ms=300) == {}
    finally:
        await c.stop()
    assert [(m.offset, m.key, m.value, m.timestamp) for m in msgs] == [
        (i, b"k%d" % i, b"v%d" % i, 5_000 + i) for i in range(5, 10)]


async def test_offsets_for_times(kafka_broker_module):
    topic = unique("aio-times")
    create_topic(kafka_broker_module, topic, 1)
    p = await started_producer(kafka_broker_module)
    try:
        await produce_all(p, topic, [(0, Rec(b"k", b"t%d" % ts, (), ts)) for ts in (1000, 2000, 3000)])
    finally:
        await p.stop()
    c = await started_consumer(kafka_broker_module)
    try:
        tp = TopicPartition(topic, 0)
        assert await c.beginning_offsets([tp]) == {tp: 0}
        assert await c.end_offsets([tp]) == {tp: 3}
        for ts, want in [(0, (0, 1000)), (1001, (1, 2000)), (3000, (2, 3000)), (3001, None)]:
            found = (await c.offsets_for_times({tp: ts}))[tp]
            assert (found if found is None else (found.offset, found.timestamp)) == want, ts
    finally:
        await c.stop()


async def test_record_above_topic_max_message_bytes(kafka_broker_module):
    topic = unique("aio-small")
    create_topic(kafka_broker_module, topic, 1, {"max.message.bytes": "1024"})
    p = await started_producer(kafka_broker_module)
    try:
        fut = await p.send(topic, value=b"x" * 4096)
        with pytest.raises(MessageSizeTooLargeError):
            await asyncio.wait_for(fut, TIMEOUT)
        meta = await asyncio.wait_for(await p.send(topic, value=b"y" * 100), TIMEOUT)
        assert meta.offset == 0
    finally:
        await p.stop()
    assert offsets(kafka_broker_module, topic) == (0, 1)
