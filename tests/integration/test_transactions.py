"""Transactions with confluent-kafka and kafka-python: commit and abort, the last stable offset,
read_committed and read_uncommitted consumers, and the control batches and `.txnindex` left in
the partitions.

What a consumer returns is checked against what the producer committed, and the partitions are
read back from storage to see the markers (one COMMIT or ABORT control batch per partition of
each transaction) and the aborted transactions indexed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from minibroker.testing import BrokerThread
from minibroker_protocol.records.v2 import ControlType
from tests.integration.helpers import TIMEOUT, Deadline, create_topic, unique
from tests.integration.txn_helpers import PARTS, TXN_OVERRIDES, confluent_read_all, lso_and_hw, markers


@pytest.fixture(scope="module")
def kafka_broker_module(tmp_path_factory) -> Iterator[BrokerThread]:
    with BrokerThread(tmp_path_factory.mktemp("txn") / "data", overrides=TXN_OVERRIDES) as broker:
        yield broker


def test_confluent_commit_abort_and_read_committed(kafka_broker_module):
    from confluent_kafka import Producer

    topic = unique("tc")
    create_topic(kafka_broker_module, topic, PARTS)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": unique("tid"),
                  "transaction.timeout.ms": 20000, "linger.ms": 2})
    p.init_transactions(TIMEOUT)

    def txn(tag: str, n: int, commit: bool) -> list[tuple[int, bytes]]:
        p.begin_transaction()
        sent = [(i % PARTS, f"{tag}-{i}".encode()) for i in range(n)]
        for part, value in sent:
            p.produce(topic, value=value, partition=part)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            p.flush(TIMEOUT)  # the aborted records are in the log, not just in the client
            p.abort_transaction(TIMEOUT)
        return sent

    committed = txn("a", 30, True)
    aborted = txn("b", 30, False)
    committed += txn("c", 30, True)

    # an open transaction holds the LSO back at its first offset; the HW moves on
    p.begin_transaction()
    open_part = [(i % PARTS, f"d-{i}".encode()) for i in range(9)]
    for part, value in open_part:
        p.produce(topic, value=value, partition=part)
    p.flush(TIMEOUT)
    for part in range(PARTS):
        lso, hw = lso_and_hw(kafka_broker_module, topic, part)
        assert (lso, hw) == (33, 36), f"partition {part}: LSO {lso}, HW {hw}"  # 3 x (10 + marker), 3 open
    assert sorted(confluent_read_all(kafka_broker_module, topic, "read_committed", len(committed))) == sorted(committed)
    uncommitted = confluent_read_all(kafka_broker_module, topic, "read_uncommitted", len(committed + aborted + open_part))
    assert sorted(uncommitted) == sorted(committed + aborted + open_part)  # never a control record
    p.commit_transaction(TIMEOUT)
    committed += open_part

    got = confluent_read_all(kafka_broker_module, topic, "read_committed", len(committed))
    assert sorted(got) == sorted(committed)
    for part in range(PARTS):  # in send order within each partition
        assert [v for q, v in got if q == part] == [v for q, v in committed if q == part]
        assert markers(kafka_broker_module, topic, part) == [(10, ControlType.COMMIT), (21, ControlType.ABORT),
                                           (32, ControlType.COMMIT), (36, ControlType.COMMIT)]
        assert [(t.first_offset, t.last_offset, t.last_stable_offset) for t in
                kafka_broker_module.call(lambda br, part=part: br.get_log(topic, part).aborted_transactions(0, 100))] == [(11, 21, 22)]
        assert lso_and_hw(kafka_broker_module, topic, part) == (37, 37)


def test_confluent_fenced_by_a_new_instance(kafka_broker_module):
    from confluent_kafka import KafkaException, Producer

    topic = unique("tf")
    create_topic(kafka_broker_module, topic, PARTS)
    tid = unique("tid")
    old = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": tid})
    old.init_transactions(TIMEOUT)
    old.begin_transaction()
    old.produce(topic, value=b"zombie", partition=0)
    old.flush(TIMEOUT)
    new = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": tid})
    new.init_transactions(TIMEOUT)  # aborts the old instance's transaction and fences it
    with pytest.raises(KafkaException) as e:
        old.commit_transaction(TIMEOUT)
    assert e.value.args[0].fatal()
    new.begin_transaction()
    new.produce(topic, value=b"live", partition=0)
    new.commit_transaction(TIMEOUT)
    assert confluent_read_all(kafka_broker_module, topic, "read_committed", 1) == [(0, b"live")]
    assert [t for _, t in markers(kafka_broker_module, topic, 0)] == [ControlType.ABORT, ControlType.COMMIT]


# -- kafka-python --------------------------------------------------------------------------------


def kafka_python_read_all(b: BrokerThread, topic: str, isolation: str, expect: int) -> list[tuple[int, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=b.bootstrap, isolation_level=isolation, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, p) for p in range(PARTS)])
    c.seek_to_beginning()
    got: list[tuple[int, bytes]] = []
    d = Deadline()
    settle = None
    try:
        while d:
            for tp, msgs in c.poll(200).items():
                got += [(tp.partition, m.value) for m in msgs]
            if len(got) >= expect:
                settle = settle or time.monotonic() + 0.5
                if time.monotonic() > settle:
                    break
    finally:
        c.close()
    return got


def test_kafka_python_commit_abort_and_read_committed(kafka_broker_module):
    from kafka import KafkaProducer

    topic = unique("tk")
    create_topic(kafka_broker_module, topic, PARTS)
    p = KafkaProducer(bootstrap_servers=kafka_broker_module.bootstrap, transactional_id=unique("tid"), transaction_timeout_ms=20000)
    p.init_transactions()
    committed: list[tuple[int, bytes]] = []
    aborted: list[tuple[int, bytes]] = []
    for round_, commit in enumerate((True, False, True, False, True)):
        p.begin_transaction()
        sent = [(i % PARTS, f"r{round_}-{i}".encode()) for i in range(12)]
        for part, value in sent:
            p.send(topic, value=value, partition=part)
        if commit:
            p.commit_transaction()
            committed += sent
        else:
            p.flush()
            p.abort_transaction()
            aborted += sent
    p.close()
    got = kafka_python_read_all(kafka_broker_module, topic, "read_committed", len(committed))
    assert sorted(got) == sorted(committed)
    for part in range(PARTS):
        assert [v for q, v in got if q == part] == [v for q, v in committed if q == part]
        kinds = [t for _, t in markers(kafka_broker_module, topic, part)]
        assert kinds == [ControlType.COMMIT, ControlType.ABORT, ControlType.COMMIT, ControlType.ABORT,
                         ControlType.COMMIT]
    assert sorted(kafka_python_read_all(kafka_broker_module, topic, "read_uncommitted", len(committed + aborted))) == \
        sorted(committed + aborted)


def test_kafka_python_and_confluent_read_each_others_transactions(kafka_broker_module):
    """kafka-python writes, a confluent read_committed consumer reads (and the other way)."""
    from confluent_kafka import Producer
    from kafka import KafkaProducer

    topic = unique("tx")
    create_topic(kafka_broker_module, topic, PARTS)
    kp = KafkaProducer(bootstrap_servers=kafka_broker_module.bootstrap, transactional_id=unique("tid"))
    kp.init_transactions()
    kp.begin_transaction()
    kp.send(topic, value=b"kp-committed", partition=1)
    kp.commit_transaction()
    kp.begin_transaction()
    kp.send(topic, value=b"kp-aborted", partition=1)
    kp.flush()
    kp.abort_transaction()
    kp.close()
    cp = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": unique("tid")})
    cp.init_transactions(TIMEOUT)
    cp.begin_transaction()
    cp.produce(topic, value=b"cp-aborted", partition=2)
    cp.flush(TIMEOUT)
    cp.abort_transaction(TIMEOUT)
    cp.begin_transaction()
    cp.produce(topic, value=b"cp-committed", partition=2)
    cp.commit_transaction(TIMEOUT)
    expected = [(1, b"kp-committed"), (2, b"cp-committed")]
    assert sorted(confluent_read_all(kafka_broker_module, topic, "read_committed", 2)) == expected
    assert sorted(kafka_python_read_all(kafka_broker_module, topic, "read_committed", 2)) == expected


def test_transaction_timeout_aborts_and_fences(kafka_broker_module):
    """transaction.timeout.ms: the coordinator aborts on its own, the LSO moves on and the
    producer is fenced."""
    from confluent_kafka import KafkaException, Producer

    topic = unique("tt")
    create_topic(kafka_broker_module, topic, PARTS)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": unique("tid"),
                  "transaction.timeout.ms": 1000})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, value=b"too slow", partition=0)
    p.flush(TIMEOUT)
    assert lso_and_hw(kafka_broker_module, topic, 0) == (0, 1)
    d = Deadline(10)
    while d and markers(kafka_broker_module, topic, 0) == []:
        time.sleep(0.05)
    assert markers(kafka_broker_module, topic, 0) == [(1, ControlType.ABORT)]
    assert lso_and_hw(kafka_broker_module, topic, 0) == (2, 2)
    with pytest.raises(KafkaException):
        p.commit_transaction(TIMEOUT)
    assert confluent_read_all(kafka_broker_module, topic, "read_committed", 0) == []


def test_partition_dump_shows_markers_and_txnindex(kafka_broker_module, tmp_path):
    """The files Kafka's tools read: control batches in the `.log` (minibroker_protocol.records.dump) and
    the 34-byte entries of the `.txnindex`."""
    from confluent_kafka import Producer

    from minibroker_protocol.records.dump import dump

    topic = unique("td")
    create_topic(kafka_broker_module, topic, 1)
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": unique("tid")})
    p.init_transactions(TIMEOUT)
    for commit in (True, False):
        p.begin_transaction()
        for i in range(3):
            p.produce(topic, value=b"v%d" % i, key=b"k", partition=0)
        p.flush(TIMEOUT)
        (p.commit_transaction if commit else p.abort_transaction)(TIMEOUT)
    seg = kafka_broker_module.call(lambda br: br.get_log(topic, 0).active_segment)
    text = "\n".join(dump(seg.log.path.read_bytes(), records=True))
    assert text.count("isControl: true") == 2 and "endTxnMarker: COMMIT" in text and "endTxnMarker: ABORT" in text
    txnindex = seg.txn_index.path.read_bytes()
    assert len(txnindex) == 34
    pid = kafka_broker_module.call(lambda br: next(iter(br.get_log(topic, 0).producer_state.producers)))
    assert txnindex == (b"\0\0" + pid.to_bytes(8, "big") + (4).to_bytes(8, "big") + (7).to_bytes(8, "big")
                        + (8).to_bytes(8, "big"))


def test_describe_and_list_transactions_and_producers(kafka_broker_module):
    from confluent_kafka import Producer

    from minibroker_protocol.apis import describe_producers, describe_transactions, list_transactions
    from tests.integration.helpers import RawClient

    topic = unique("tl")
    create_topic(kafka_broker_module, topic, PARTS)
    tid = unique("tid")
    p = Producer({"bootstrap.servers": kafka_broker_module.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 30000})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, value=b"x", partition=1)
    p.flush(TIMEOUT)
    with RawClient(kafka_broker_module.bootstrap) as c:
        d = c.call(describe_transactions.API, 0, describe_transactions.REQUEST(transactional_ids=[tid, "nope"]))
        mine, missing = d.transaction_states
        assert (mine.error_code, mine.transaction_state, mine.transaction_timeout_ms) == (0, "Ongoing", 30000)
        assert [(t.topic, t.partitions) for t in mine.topics] == [(topic, [1])]
        assert missing.error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND
        listed = c.call(list_transactions.API, 1, list_transactions.REQUEST(
            state_filters=["Ongoing", "Bogus"], producer_id_filters=[mine.producer_id], duration_filter=-1))
        assert listed.unknown_state_filters == ["Bogus"]
        assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [(tid, "Ongoing")]
        R = describe_producers.REQUEST
        dp = c.call(describe_producers.API, 0, R(topics=[R.TopicRequest(name=topic, partition_indexes=[1, 9])]))
        part1, part9 = dp.topics[0].partitions
        assert part9.error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
        (state,) = part1.active_producers
        assert (state.producer_id, state.producer_epoch, state.last_sequence, state.current_txn_start_offset) == (
            mine.producer_id, mine.producer_epoch, 0, 0)
        p.commit_transaction(TIMEOUT)
        d = c.call(describe_transactions.API, 0, describe_transactions.REQUEST(transactional_ids=[tid]))
        assert d.transaction_states[0].transaction_state == "CompleteCommit"
        dp = c.call(describe_producers.API, 0, R(topics=[R.TopicRequest(name=topic, partition_indexes=[1])]))
        assert dp.topics[0].partitions[0].active_producers[0].current_txn_start_offset == -1

