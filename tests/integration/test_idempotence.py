"""Idempotent producers of three clients against retries forced by a dropping proxy: 10 000
records over four partitions, each stored exactly once and in send order.

The proxy (dropping_proxy.py) cuts the connection after the broker has answered some
Produce requests, so the client re-sends batches the broker already wrote; the producer state
recognises them (same producer id, epoch and sequence range) and answers with the original
offsets. What the broker stored is read back from the partition logs, not through a client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import BrokerThread
from tests.integration.dropping_proxy import DroppingProxy
from tests.integration.helpers import TIMEOUT, stored_records
from tests.integration.idempotence_helpers import (
    RECORDS,
    TOPIC,
    check_stored,
    plan,
    proxied_broker,
)


@pytest.fixture
def proxied(tmp_path) -> Iterator[tuple[BrokerThread, DroppingProxy]]:
    with proxied_broker(tmp_path / "data") as pb:
        yield pb


def test_confluent_kafka_idempotent_producer_with_dropped_connections(proxied):
    from confluent_kafka import Producer

    b, proxy = proxied
    sent = plan()
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": proxy.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "batch.num.messages": 200, "retry.backoff.ms": 20, "reconnect.backoff.ms": 20,
                         "message.timeout.ms": 60000})
    for p, k, v in sent:
        while True:
            try:
                producer.produce(TOPIC, value=v, key=k, partition=p,
                                 on_delivery=lambda err, msg: errors.append(err) if err else None)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []
    check_stored(b, proxy, sent)


def test_kafka_python_idempotent_producer_with_dropped_connections(proxied):
    from kafka import KafkaProducer

    b, proxy = proxied
    sent = plan()
    producer = KafkaProducer(bootstrap_servers=proxy.bootstrap, enable_idempotence=True, acks="all",
                             linger_ms=5, batch_size=1024, retry_backoff_ms=20, reconnect_backoff_ms=20,
                             request_timeout_ms=10000, delivery_timeout_ms=60000)
    futures = [producer.send(TOPIC, value=v, key=k, partition=p) for p, k, v in sent]
    producer.flush(60)
    offsets = [f.get(timeout=TIMEOUT) for f in futures]
    producer.close(10)
    by_partition: dict[int, list[int]] = {}
    for md in offsets:
        by_partition.setdefault(md.partition, []).append(md.offset)
    # every record got its own offset, in order: a retried batch was answered with its original offsets
    assert all(offs == list(range(len(offs))) for offs in by_partition.values())
    check_stored(b, proxy, sent)


def test_aiokafka_idempotent_producer_with_dropped_connections(proxied):
    from aiokafka import AIOKafkaProducer

    b, proxy = proxied
    sent = plan()

    async def run() -> list[Any]:
        producer = AIOKafkaProducer(bootstrap_servers=proxy.bootstrap, enable_idempotence=True, linger_ms=5,
                                    retry_backoff_ms=20, request_timeout_ms=10000)
        await producer.start()
        try:
            futures = [await producer.send(TOPIC, value=v, key=k, partition=p) for p, k, v in sent]
            return list(await asyncio.wait_for(asyncio.gather(*futures), 60))
        finally:
            await producer.stop()

    results = asyncio.run(run())
    assert len(results) == RECORDS
    check_stored(b, proxy, sent)


def test_old_epoch_and_sequence_gap_through_the_wire(proxied):
    """What a client sees for a gap and for a fenced epoch (raw requests, no retries)."""
    from minibroker_protocol.apis import init_producer_id, produce
    from minibroker_protocol.errors import ErrorCode
    from minibroker_protocol.records.v2 import Record, build_batch
    from tests.integration.helpers import RawClient

    b, _ = proxied
    R = produce.REQUEST

    def req(seq: int, epoch: int, pid: int) -> Any:
        data = build_batch([Record(value=b"x")], base_timestamp=int(time.time() * 1000), producer_id=pid,
                           producer_epoch=epoch, base_sequence=seq)
        return R(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            R.TopicProduceData(name=TOPIC, partition_data=[R.PartitionProduceData(index=0, records=data)])])

    with RawClient(b.bootstrap) as c:
        init = c.call(init_producer_id.API, 4, init_producer_id.REQUEST(transactional_id=None,
                                                                       transaction_timeout_ms=60000))
        again = c.call(init_producer_id.API, 4, init_producer_id.REQUEST(transactional_id=None,
                                                                        transaction_timeout_ms=60000))
        assert init.error_code == 0 and init.producer_epoch == 0 and again.producer_id > init.producer_id
        pid = init.producer_id

        def send(seq: int, epoch: int) -> Any:
            return c.call(produce.API, 9, req(seq, epoch, pid)).responses[0].partition_responses[0]

        assert (send(0, 1).error_code, send(1, 1).error_code) == (0, 0)
        dup = send(0, 1)
        assert (dup.error_code, dup.base_offset) == (0, 0)  # a retry: the original offset, no error
        assert send(5, 1).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert send(2, 0).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert send(2, 1).error_code == 0
    assert [bytes(r.value) for r in stored_records(b, TOPIC, 0)] == [b"x"] * 3
