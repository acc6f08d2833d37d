"""Exactly-once read-process-write (KIP-98/KIP-447): a consumer group member reads, a
transactional producer writes the results and commits the consumed offsets in the same
transaction (send_offsets_to_transaction: AddOffsetsToTxn + TxnOffsetCommit). The first
instance dies in the middle of a transaction; the second (same group, same transactional id)
fences it, its transaction is aborted with the offsets it carried, and it resumes from the last
committed offsets. A read_committed consumer of the output then sees every input exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing import BrokerThread
from tests.integration.helpers import TIMEOUT, Deadline, create_topic, unique
from tests.integration.txn_helpers import TXN_OVERRIDES, confluent_read_all

PARTS = 2
PER_PARTITION = 120


@pytest.fixture
def kafka_broker_module(tmp_path) -> Iterator[BrokerThread]:
    with BrokerThread(tmp_path / "data", overrides=TXN_OVERRIDES) as broker:
        yield broker


def fill_input(b: BrokerThread, topic: str) -> list[tuple[int, bytes]]:
    from confluent_kafka import Producer

    create_topic(b, topic, PARTS)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    sent = [(i % PARTS, f"in-{i:04d}".encode()) for i in range(PARTS * PER_PARTITION)]
    for part, value in sent:
        p.produce(topic, value=value, partition=part)
    assert p.flush(TIMEOUT) == 0
    return sent


def read_output(b: BrokerThread, topic: str, expect: int) -> list[tuple[int, bytes]]:
    return confluent_read_all(b, topic, "read_committed", expect)


def confluent_processor(b: BrokerThread, src: str, dst: str, group: str, tid: str, *,
                        die_in_txn: int | None = None) -> int:
    """Process src -> dst in transactions of up to 25 records; with `die_in_txn` stop in the
    middle of that transaction (outputs and offsets sent, no commit) as a crash would."""
    from confluent_kafka import Consumer, Producer

    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 60000})
    producer.init_transactions(TIMEOUT)
    consumer.subscribe([src])
    txns = 0
    d = Deadline(60)
    try:
        while d:
            msgs = [m for m in consumer.consume(num_messages=25, timeout=0.3) if not m.error()]
            if not msgs:
                assignment = consumer.assignment()
                if len(assignment) == PARTS and all(
                        tp.offset == PER_PARTITION for tp in consumer.position(assignment)):
                    return txns
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(dst, value=b"out:" + m.value(), partition=m.partition())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), TIMEOUT)
            txns += 1
            if txns == die_in_txn:
                producer.flush(TIMEOUT)
                return txns  # no commit: the instance is gone
            producer.commit_transaction(TIMEOUT)
        raise AssertionError("the processor did not reach the end of its input")
    finally:
        consumer.close()


def test_confluent_read_process_write_is_exactly_once_across_a_restart(kafka_broker_module):
    src, dst, group, tid = unique("in"), unique("out"), unique("g"), unique("tid")
    sent = fill_input(kafka_broker_module, src)
    create_topic(kafka_broker_module, dst, PARTS)
    assert confluent_processor(kafka_broker_module, src, dst, group, tid, die_in_txn=4) == 4
    confluent_processor(kafka_broker_module, src, dst, group, tid)
    out = read_output(kafka_broker_module, dst, len(sent))
    assert sorted(out) == sorted((p, b"out:" + v) for p, v in sent)
    for part in range(PARTS):  # in input order, each once
        assert [v for q, v in out if q == part] == [b"out:" + v for q, v in sent if q == part]
    committed = kafka_broker_module.call(lambda br: [br.group_coordinator.committed(group, src, p).offset for p in range(PARTS)])
    assert committed == [PER_PARTITION] * PARTS


def kafka_python_processor(b: BrokerThread, src: str, dst: str, group: str, tid: str, *,
                           die_in_txn: int | None = None) -> int:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(src, bootstrap_servers=b.bootstrap, group_id=group, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=25)
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, transactional_id=tid)
    producer.init_transactions()
    txns = 0
    d = Deadline(60)
    try:
        while d:
            batches = consumer.poll(300)
            msgs = [m for ms in batches.values() for m in ms]
            if not msgs:
                assignment = consumer.assignment()
                if len(assignment) == PARTS and all(consumer.position(tp) == PER_PARTITION for tp in assignment):
                    return txns
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.send(dst, value=b"out:" + m.value, partition=m.partition)
            offsets = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in consumer.assignment()}
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            txns += 1
            if txns == die_in_txn:
                producer.flush()
                producer.close(0)  # gone without commit or abort
                return txns
            producer.commit_transaction()
        raise AssertionError("the processor did not reach the end of its input")
    finally:
        consumer.close(autocommit=False)


def test_kafka_python_read_process_write_is_exactly_once_across_a_restart(kafka_broker_module):
    src, dst, group, tid = unique("in"), unique("out"), unique("g"), unique("tid")
    sent = fill_input(kafka_broker_module, src)
    create_topic(kafka_broker_module, dst, PARTS)
    assert kafka_python_processor(kafka_broker_module, src, dst, group, tid, die_in_txn=3) == 3
    kafka_python_processor(kafka_broker_module, src, dst, group, tid)
    out = read_output(kafka_broker_module, dst, len(sent))
    assert sorted(out) == sorted((p, b"out:" + v) for p, v in sent)
    for part in range(PARTS):
        assert [v for q, v in out if q == part] == [b"out:" + v for q, v in sent if q == part]
