"""A broker restart in the middle of a transaction completes it or aborts it, never half of it.

- kill -9 while a transaction is open: after the restart the producer goes on and commits; the
  records from before and after the crash and the offsets it sent all become visible together.
- kill -9 and the producer never returns: the reloaded coordinator aborts the transaction when
  its timeout passes; none of its records is ever visible to read_committed.
- a crash between the decision (PrepareCommit written) and the markers: the restarted
  coordinator writes the COMMIT markers to every partition before anything else.
"""

from __future__ import annotations

import time
from typing import Any

from minibroker_protocol.records.v2 import ControlType
from tests.integration.helpers import TIMEOUT, Deadline, unique
from tests.integration.txn_helpers import TXN_OVERRIDES, markers

PARTS = 3


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, PARTS, 1)]).values():
        fut.result(TIMEOUT)


def read_committed(bootstrap: str, topic: str, expect: int) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("r"), "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
    got: list[tuple[int, bytes]] = []
    d = Deadline()
    settle = None
    try:
        while d:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got.append((msg.partition(), msg.value()))
            if len(got) >= expect:
                settle = settle or time.monotonic() + 1.0
                if time.monotonic() > settle:
                    break
    finally:
        c.close()
    return got


def produce(p: Any, topic: str, tag: str, n: int) -> list[tuple[int, bytes]]:
    sent = [(i % PARTS, f"{tag}-{i}".encode()) for i in range(n)]
    for part, value in sent:
        p.produce(topic, value=value, partition=part)
    assert p.flush(TIMEOUT) == 0
    return sent


def test_kill9_mid_transaction_then_the_producer_commits(kafka_broker_process):
    from confluent_kafka import Consumer, Producer, TopicPartition

    bp = kafka_broker_process(overrides=TXN_OVERRIDES)
    bp.start()
    topic, group = unique("rk"), unique("g")
    create_topic(bp.bootstrap, topic)
    p = Producer({"bootstrap.servers": bp.bootstrap, "transactional.id": unique("tid"),
                  "transaction.timeout.ms": 60000, "reconnect.backoff.ms": 50})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    sent = produce(p, topic, "before", 30)
    meta = Consumer({"bootstrap.servers": bp.bootstrap, "group.id": group}).consumer_group_metadata()
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 42)], meta, TIMEOUT)
    bp.kill()
    bp.start()
    assert read_committed(bp.bootstrap, topic, 0) == []  # still open: nothing is stable
    sent += produce(p, topic, "after", 30)
    p.commit_transaction(TIMEOUT)
    got = read_committed(bp.bootstrap, topic, len(sent))
    assert sorted(got) == sorted(sent)
    c = Consumer({"bootstrap.servers": bp.bootstrap, "group.id": group})
    assert c.committed([TopicPartition(topic, 0)], TIMEOUT)[0].offset == 42  # held across the crash
    c.close()
    bp.stop()


def test_kill9_and_the_producer_never_returns_then_the_transaction_times_out(kafka_broker_process):
    from confluent_kafka import Producer

    bp = kafka_broker_process(overrides=TXN_OVERRIDES)
    bp.start()
    topic = unique("rt")
    create_topic(bp.bootstrap, topic)
    p = Producer({"bootstrap.servers": bp.bootstrap, "transactional.id": unique("tid"),
                  "transaction.timeout.ms": 3000})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    produce(p, topic, "lost", 30)
    del p
    bp.kill()
    bp.start()
    other = Producer({"bootstrap.servers": bp.bootstrap, "transactional.id": unique("tid")})
    other.init_transactions(TIMEOUT)
    other.begin_transaction()
    kept = produce(other, topic, "kept", 6)
    other.commit_transaction(TIMEOUT)
    # the dead producer's transaction holds the LSO until the coordinator aborts it on timeout
    got = read_committed(bp.bootstrap, topic, len(kept))
    assert sorted(got) == sorted(kept)
    assert "Completed rollback of ongoing transaction" in bp.log_text()
    bp.stop()


def test_a_decided_commit_without_markers_is_completed_at_startup(tmp_path):
    from confluent_kafka import Producer

    from minibroker.coordinator.txn.transaction_metadata import TransactionState
    from minibroker.testing import BrokerThread
    from tests.integration.helpers import create_topic as create_in_process
    data = tmp_path / "data"
    topic, tid = unique("rd"), unique("tid")
    with BrokerThread(data, overrides=TXN_OVERRIDES) as b:
        create_in_process(b, topic, PARTS)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid})
        p.init_transactions(TIMEOUT)
        p.begin_transaction()
        sent = produce(p, topic, "decided", 12)

        def decide_without_markers(broker: Any) -> str:
            coord = broker.txn_coordinator
            md = coord.txns[tid]
            assert coord._append(md, md.prepare_abort_or_commit(TransactionState.PREPARE_COMMIT, coord.now_ms())) == 0
            return md.state.display_name

        assert b.call(decide_without_markers) == "PrepareCommit"
        assert all(markers(b, topic, part) == [] for part in range(PARTS))
    with BrokerThread(data, overrides=TXN_OVERRIDES) as b:
        assert all([t for _, t in markers(b, topic, part)] == [ControlType.COMMIT] for part in range(PARTS))
        assert b.call(lambda br: br.txn_coordinator.txns[tid].state.display_name) == "CompleteCommit"
        assert sorted(read_committed(b.bootstrap, topic, len(sent))) == sorted(sent)
