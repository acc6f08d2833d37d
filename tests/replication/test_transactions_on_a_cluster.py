"""Transactions on a cluster (issue 29): three BrokerServers on one loop, the test playing the
controller with the metadata published to every broker (cluster_helpers.InProcessController).

- a transaction over partitions led by different brokers: the coordinator writes the markers of
  the partitions it leads and sends WriteTxnMarkers to the other leader; the produce to a
  partition led away from the coordinator is verified with AddPartitionsToTxn between brokers
  (KIP-890); committed and aborted, a read_committed consumer sees exactly the committed records;
- coordinator failover mid-transaction: the leader of the other partition is down when the
  commit is decided, so the transaction stays in PrepareCommit; __transaction_state's leadership
  moves, the new coordinator loads it and finishes the commit once the partition has a leader
  again (its markers retried against the leader the metadata names then).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from .cluster_helpers import InProcessController, start_brokers, wait_until

pytestmark = pytest.mark.timeout(240)

TXN = "__transaction_state"
OFFSETS = "__consumer_offsets"


@pytest.fixture
async def cluster(tmp_path):
    brokers = await start_brokers(tmp_path, 3, {
        "transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": 2, "transaction.state.log.min.isr": 1,
        # the coordinator's periodic work (timed-out transactions, markers left to retry) every second
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
    try:
        yield InProcessController(brokers, metadata=True)
    finally:
        for b in brokers.values():
            await b.stop()


def _bootstrap(cluster: InProcessController, nodes: tuple[int, ...] = (1, 2, 3)) -> str:
    return ",".join(cluster.brokers[n].bootstrap for n in nodes if cluster.brokers[n].server is not None)


def _read_committed(bootstrap: str, topic: str) -> list[bytes]:
    """Every record of topic-0 a read_committed consumer gets, up to the partition's end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[bytes] = []
        for _ in range(300):
            msg = c.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF: up to the LSO
                    return out
                continue
            out.append(msg.value())
        raise AssertionError(f"no end of {topic}-0 reached; got {out}")
    finally:
        c.close()


def _transactions(bootstrap: str, script: list[tuple[str, list[tuple[str, bytes]]]]) -> Producer:
    """Run transactions: each (commit|abort, [(topic, value)]) on partition 0; the producer is
    returned open (its transactional id stays alive)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx", "linger.ms": 0,
                  "transaction.timeout.ms": 60_000})
    p.init_transactions(60)
    for outcome, records in script:
        p.begin_transaction()
        for topic, value in records:
            p.produce(topic, value, partition=0)
        assert p.flush(60) == 0
        if outcome == "commit":
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    return p


async def test_transaction_over_partitions_led_by_different_brokers(cluster):
    cluster.create_topic(TXN, 1, [1, 2, 3], {"cleanup.policy": "compact"})
    cluster.create_topic(OFFSETS, 1, [1, 2, 3], {"cleanup.policy": "compact"})
    cluster.create_topic("a", 1, [1, 2, 3])  # led by broker 1, the transaction coordinator
    cluster.create_topic("b", 1, [2, 3, 1])  # led by broker 2
    script = [("commit", [("a", b"a1"), ("b", b"b1")]),
              ("abort", [("a", b"a-aborted"), ("b", b"b-aborted")]),
              ("commit", [("b", b"b2"), ("a", b"a2")])]
    p: Any = await asyncio.to_thread(_transactions, _bootstrap(cluster), script)
    try:
        tc = cluster.brokers[1].broker.coordinators.txn
        await wait_until(lambda: tc.txns["tx"].state.display_name == "CompleteCommit",
                         "the second commit is complete")
        assert await asyncio.to_thread(_read_committed, _bootstrap(cluster), "a") == [b"a1", b"a2"]
        assert await asyncio.to_thread(_read_committed, _bootstrap(cluster), "b") == [b"b1", b"b2"]
        # broker 2 wrote b's markers (asked with WriteTxnMarkers): 3 data batches and 3 markers each
        for topic in ("a", "b"):
            part = cluster.partition(2 if topic == "b" else 1, topic)
            assert part.log_end_offset == 6 and part.high_watermark == 6
        # broker 2's and 3's transaction coordinators do not know the transactional id
        assert "tx" not in cluster.brokers[2].broker.coordinators.txn.txns
    finally:
        await asyncio.to_thread(p.flush, 10)


async def test_coordinator_failover_finishes_a_prepared_commit(cluster):
    # __transaction_state on brokers 1 and 2; "a" led by 1, "b" led by 3 (followed by 2)
    cluster.create_topic(TXN, 1, [1, 2], {"cleanup.policy": "compact"})
    cluster.create_topic(OFFSETS, 1, [1, 2], {"cleanup.policy": "compact"})
    cluster.create_topic("a", 1, [1, 2])
    cluster.create_topic("b", 1, [3, 2])
    p = Producer({"bootstrap.servers": _bootstrap(cluster), "transactional.id": "tx", "linger.ms": 0,
                  "transaction.timeout.ms": 60_000, "acks": "all"})
    try:
        await asyncio.to_thread(p.init_transactions, 60)
        await asyncio.to_thread(p.begin_transaction)
        reports: list[Any] = []
        for topic, value in (("a", b"a1"), ("b", b"b1")):
            p.produce(topic, value, partition=0, on_delivery=lambda err, msg: reports.append(err))
        assert await asyncio.to_thread(p.flush, 60) == 0
        assert reports == [None, None]
        await wait_until(lambda: cluster.partition(2, "b").log_end_offset == 1, "broker 2 has b's record")
        # broker 3, the leader of b, goes away: its marker cannot be written
        await cluster.brokers[3].stop()
        cluster.publish(cluster.topics["b"])  # its endpoint leaves the metadata
        await asyncio.to_thread(p.commit_transaction, 60)  # answered once PrepareCommit is replicated
        tc1 = cluster.brokers[1].broker.coordinators.txn
        assert tc1.txns["tx"].state.display_name == "PrepareCommit"
        await wait_until(lambda: cluster.partition(1, "a").log_end_offset == 2, "a's marker is written")
        await asyncio.sleep(1)
        assert tc1.txns["tx"].state.display_name == "PrepareCommit"  # b's marker is not
        # failover of the transaction coordinator: broker 2 leads __transaction_state
        cluster.change(TXN, 0, leader_id=2, isr=(2, 1))
        tc2 = cluster.brokers[2].broker.coordinators.txn
        await wait_until(lambda: "tx" in tc2.txns, "broker 2 loads the transactional id")
        assert "tx" not in tc1.txns
        # b gets a leader again (broker 2, from the ISR): the new coordinator's markers reach it
        cluster.change("b", 0, leader_id=2, isr=(2,), replicas=(2,))
        await wait_until(lambda: tc2.txns["tx"].state.display_name == "CompleteCommit",
                         "the new coordinator completes the commit", timeout=60)
        assert await asyncio.to_thread(_read_committed, _bootstrap(cluster, (1, 2)), "a") == [b"a1"]
        assert await asyncio.to_thread(_read_committed, _bootstrap(cluster, (1, 2)), "b") == [b"b1"]
        # the producer goes on with the new coordinator
        await asyncio.to_thread(p.begin_transaction)
        p.produce("b", b"b2", partition=0)
        assert await asyncio.to_thread(p.flush, 60) == 0
        await asyncio.to_thread(p.commit_transaction, 60)
        await wait_until(lambda: tc2.txns["tx"].state.display_name == "CompleteCommit", "the next commit")
        assert await asyncio.to_thread(_read_committed, _bootstrap(cluster, (1, 2)), "b") == [b"b1", b"b2"]
    finally:
        await asyncio.to_thread(p.flush, 10)
