"""Replication between brokers on one loop (issue 29, seed 001: leader and followers, the ISR, the
high watermark lagging the log end offset, acks=all with min.insync.replicas).

Three (or two) BrokerServers; the test plays the controller (tests/replication/cluster_helpers.py:
the registrations go to every broker through ReplicaManager.apply_delta, AlterPartition is applied
in-process). Real clients (confluent-kafka, kafka-python, in threads: they block) produce to the
leader and consume from it; the followers fetch with Kafka's replica Fetch over 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, TopicPartition

from minibroker.network.node_connection import NodeConnection
from minibroker_protocol.apis import fetch, list_offsets, offset_for_leader_epoch
from minibroker_protocol.apis import produce as produce_api
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.records.v2 import Record, build_batch

from .cluster_helpers import InProcessController, log_bytes, start_brokers, wait_until

pytestmark = pytest.mark.timeout(120)


def produce(bootstrap: str, topic: str, values: list[bytes], **conf: Any) -> list[Any]:
    """Produce `values` to partition 0 and wait for every delivery report: the errors (None = ok)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **conf})
    reports: list[Any] = []
    for v in values:
        p.produce(topic, v, partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(60)
    return reports


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000,
                      auto_offset_reset="earliest")
    try:
        c.assign([TopicPartition(topic, 0)])
        out = []
        for msg in c:
            out.append(msg.value)
            if len(out) >= count:
                break
        return out
    finally:
        c.close()


@pytest.fixture
async def cluster(tmp_path):
    brokers = await start_brokers(tmp_path, 3)
    try:
        yield InProcessController(brokers)
    finally:
        for b in brokers.values():
            await b.stop()


@pytest.fixture
async def cluster_fast_isr(tmp_path):
    """replica.lag.time.max.ms = 2 s: a paused follower leaves the ISR within a few seconds, while
    a fetching one (a long poll is 500 ms) stays in it on a loaded machine."""
    brokers = await start_brokers(tmp_path, 3, {"replica.lag.time.max.ms": 2000})
    try:
        yield InProcessController(brokers)
    finally:
        for b in brokers.values():
            await b.stop()


async def test_acks_all_replicates_to_every_follower_byte_for_byte(cluster):
    cluster.create_topic("r", 1, [1, 2, 3])
    leader = cluster.partition(1, "r")
    values = [b"value-%d" % i for i in range(200)]
    reports = await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "r", values, acks="all")
    assert reports == [None] * 200
    # acks=all answered: the HW passed every record, so every ISR member has them
    assert leader.high_watermark == leader.log_end_offset == 200
    for n in (2, 3):
        f = cluster.partition(n, "r")
        assert f.log_end_offset == 200
        assert log_bytes(f) == log_bytes(leader)
        assert (f.log.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    await wait_until(lambda: all(cluster.partition(n, "r").high_watermark == 200 for n in (2, 3)),
                     "the followers learn the HW")
    got = await asyncio.to_thread(consume_all, cluster.brokers[1].bootstrap, "r", 200)
    assert got == values
    assert leader.isr == (1, 2, 3) and cluster.alter_requests == []


async def test_hw_lags_leo_while_a_follower_is_paused_and_catches_up_when_resumed(cluster):
    cluster.create_topic("lag", 1, [1, 2, 3])
    leader = cluster.partition(1, "lag")
    rm3 = cluster.brokers[3].broker.replica_manager
    assert rm3.fetcher_manager is not None
    await rm3.fetcher_manager.pause()
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "lag", [b"a"] * 10, acks=1) == [None] * 10
    await wait_until(lambda: cluster.partition(2, "lag").log_end_offset == 10, "follower 2 has the records")
    # the leader wrote 10, follower 2 has them, follower 3 has none: the HW waits for the ISR's slowest
    assert (leader.log_end_offset, leader.high_watermark) == (10, 0)
    # an acks=all produce waits in the purgatory meanwhile
    done = threading.Event()

    def acks_all() -> list[Any]:
        try:
            return produce(cluster.brokers[1].bootstrap, "lag", [b"b"], acks="all")
        finally:
            done.set()

    pending = asyncio.ensure_future(asyncio.to_thread(acks_all))
    await wait_until(lambda: leader.log_end_offset == 11, "the acks=all batch is appended")
    assert not done.is_set() and leader.high_watermark == 0
    # a consumer sees nothing past the HW
    c = Consumer({"bootstrap.servers": cluster.brokers[1].bootstrap, "group.id": "g", "enable.auto.commit": False})
    try:
        lo_hi = await asyncio.to_thread(c.get_watermark_offsets, _tp("lag"), 10)
    finally:
        c.close()
    assert lo_hi == (0, 0)
    rm3.fetcher_manager.resume()
    assert await pending == [None]
    assert leader.high_watermark == leader.log_end_offset == 11
    assert log_bytes(cluster.partition(3, "lag")) == log_bytes(leader)


def _tp(topic: str) -> Any:
    from confluent_kafka import TopicPartition as CTopicPartition  # lazy: one test's type

    return CTopicPartition(topic, 0)


async def test_isr_shrinks_after_replica_lag_time_and_expands_when_caught_up(cluster_fast_isr):
    cluster = cluster_fast_isr
    cluster.create_topic("isr", 1, [1, 2, 3], {"min.insync.replicas": 2})
    leader = cluster.partition(1, "isr")
    assert leader.replica_lag_time_max_ms == 2000
    rm3 = cluster.brokers[3].broker.replica_manager
    assert rm3.fetcher_manager is not None
    await rm3.fetcher_manager.pause()
    # writes go on with one follower behind: once it is out of the ISR, acks=all needs 1 and 2 only
    reports = await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "isr", [b"x"] * 5, acks="all")
    assert reports == [None] * 5
    await wait_until(lambda: leader.isr == (1, 2), "the ISR drops the paused follower")
    assert cluster.topics["isr"].partitions[0].isr == (1, 2)
    assert cluster.partition(3, "isr").isr == (1, 2)  # every broker applied the committed change
    assert leader.partition_epoch == cluster.topics["isr"].partitions[0].partition_epoch >= 1
    rm3.fetcher_manager.resume()
    await wait_until(lambda: leader.isr == (1, 2, 3), "the follower rejoins the ISR")
    assert cluster.partition(3, "isr").log_end_offset == 5
    assert leader.high_watermark == 5


async def test_not_enough_replicas_before_and_after_the_append(cluster):
    # one replica, min.insync.replicas=2: refused before the append
    cluster.create_topic("min", 1, [1], {"min.insync.replicas": 2})
    leader = cluster.partition(1, "min")
    reports = await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "min", [b"v"], acks="all",
                                      **{"message.send.max.retries": 0})
    assert [r.code() for r in reports] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert leader.log_end_offset == 0
    # acks=1 is not bound by min.insync.replicas
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "min", [b"v"], acks=1) == [None]
    assert leader.high_watermark == 1  # the leader alone in the ISR: HW = LEO
    # ISR {1, 2}; follower 2 stops and the ISR shrinks under a waiting acks=all produce
    cluster.create_topic("after", 1, [1, 2], {"min.insync.replicas": 2})
    leader = cluster.partition(1, "after")
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "after", [b"v"], acks="all") == [None]
    rm2 = cluster.brokers[2].broker.replica_manager
    assert rm2.fetcher_manager is not None
    await rm2.fetcher_manager.pause()
    pending = asyncio.ensure_future(asyncio.to_thread(
        produce, cluster.brokers[1].bootstrap, "after", [b"w"], acks="all", **{"message.send.max.retries": 0}))
    await wait_until(lambda: leader.log_end_offset == 2, "the acks=all batch is appended")
    assert leader.high_watermark == 1
    # a reassignment takes broker 2 out: the leader is the only replica, the HW its LEO now
    cluster.change("after", 0, replicas=(1,), isr=(1,))
    assert [r.code() for r in await pending] == [KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND]
    assert leader.high_watermark == 2


async def test_acks_all_times_out_when_the_isr_does_not_catch_up(cluster):
    cluster.create_topic("slow", 1, [1, 2])
    rm2 = cluster.brokers[2].broker.replica_manager
    assert rm2.fetcher_manager is not None
    await rm2.fetcher_manager.pause()
    reports = await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "slow", [b"v"], acks="all",
                                      **{"request.timeout.ms": 1000, "message.timeout.ms": 1500,
                                         "message.send.max.retries": 0})
    assert reports[0] is not None and reports[0].code() in (KafkaError.REQUEST_TIMED_OUT, KafkaError._MSG_TIMED_OUT,
                                                           KafkaError._TIMED_OUT)
    rm2.fetcher_manager.resume()


async def test_divergent_log_is_truncated_as_kip_101(cluster):
    """An old leader comes back with records the new leader never had: its fetch's
    LastFetchedEpoch gets a DivergingEpoch, it truncates to the new leader's epoch boundary and
    copies the new leader's log, byte for byte."""
    cluster.create_topic("div", 1, [1, 2], isr=[1, 2])
    p1 = cluster.partition(1, "div")
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "div", [b"c"] * 10, acks="all") == [None] * 10
    rm2 = cluster.brokers[2].broker.replica_manager
    assert rm2.fetcher_manager is not None
    await rm2.fetcher_manager.pause()
    # broker 1 writes 5 records broker 2 never gets (acks=1: not committed)
    assert await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "div", [b"lost"] * 5, acks=1) == [None] * 5
    assert (p1.log_end_offset, cluster.partition(2, "div").log_end_offset) == (15, 10)
    # failover: broker 2 leads epoch 1 (the controller elects from the ISR), broker 1 follows
    cluster.change("div", 0, leader_id=2, isr=(2,))
    p2 = cluster.partition(2, "div")
    assert p2.is_leader and p2.leader_epoch == 1 and not p1.is_leader
    assert await asyncio.to_thread(produce, cluster.brokers[2].bootstrap, "div", [b"new"] * 3, acks="all") == [None] * 3
    await wait_until(lambda: p1.log_end_offset == 13 and p1.log.latest_epoch == 1, "broker 1 truncates and catches up")
    assert log_bytes(p1) == log_bytes(p2)
    assert (p1.log.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 10\n"
    assert (p2.log.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 10\n"
    # the ISR takes broker 1 back through AlterPartition, and the old leader is fenced from producing
    await wait_until(lambda: p2.isr == (2, 1), "broker 1 rejoins the ISR")
    reports = await asyncio.to_thread(produce, cluster.brokers[1].bootstrap, "div", [b"v"], acks="all",
                                      **{"message.send.max.retries": 0})
    # librdkafka is told the new leader in the NOT_LEADER_OR_FOLLOWER answer (KIP-951) and goes there
    assert reports == [None]
    assert p2.log_end_offset == 14
    got = await asyncio.to_thread(consume_all, cluster.brokers[2].bootstrap, "div", 14)
    assert got == [b"c"] * 10 + [b"new"] * 3 + [b"v"]


async def test_fetch_and_produce_answers_about_leadership_on_the_wire(cluster):
    """What a client is told by a follower and by a leader of another epoch: NOT_LEADER_OR_FOLLOWER
    with CurrentLeader and NodeEndpoints (KIP-951), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
    (KIP-320), a DivergingEpoch for a log that went another way."""
    image = cluster.create_topic("w", 1, [1, 2])
    tid = image.topic_id
    cluster.change("w", 0, leader_id=2, isr=(2, 1))  # broker 2 leads epoch 1
    host1, port1 = cluster.brokers[1].bootstrap.rsplit(":", 1)
    host2, port2 = cluster.brokers[2].bootstrap.rsplit(":", 1)
    follower = NodeConnection(host1, int(port1), "wire-test")
    leader = NodeConnection(host2, int(port2), "wire-test")
    await follower.connect()
    await leader.connect()
    try:
        F = fetch.REQUEST

        def fetch_req(epoch: int, last_fetched: int = -1, offset: int = 0) -> fetch.FetchRequest:
            return F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                     session_epoch=-1, topics=[F.FetchTopic(topic_id=tid, partitions=[F.FetchPartition(
                         partition=0, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=last_fetched,
                         log_start_offset=-1, partition_max_bytes=1 << 20)])])

        resp = await follower.request(fetch.API, 17, fetch_req(-1))
        pd = resp.responses[0].partitions[0]
        assert pd.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (pd.current_leader.leader_id, pd.current_leader.leader_epoch) == (2, 1)
        assert [(e.node_id, e.host, e.port) for e in resp.node_endpoints] == [(2, host2, int(port2))]
        for epoch, code in ((0, ErrorCode.FENCED_LEADER_EPOCH), (2, ErrorCode.UNKNOWN_LEADER_EPOCH), (1, 0)):
            resp = await leader.request(fetch.API, 17, fetch_req(epoch))
            assert resp.responses[0].partitions[0].error_code == code, epoch
        # a fetcher whose last batch is of epoch 0 at offset 5: the leader's epoch 0 ended at 0
        resp = await leader.request(fetch.API, 17, fetch_req(1, last_fetched=0, offset=5))
        pd = resp.responses[0].partitions[0]
        assert pd.error_code == 0 and (pd.diverging_epoch.epoch, pd.diverging_epoch.end_offset) == (0, 0)
        P = produce_api.REQUEST
        batch = build_batch([Record(offset_delta=0, timestamp_delta=0, value=b"x")], base_timestamp=1)
        resp = await follower.request(produce_api.API, 11, P(acks=-1, timeout_ms=1000, topic_data=[
            P.TopicProduceData(name="w", partition_data=[P.PartitionProduceData(index=0, records=batch)])]))
        pr = resp.responses[0].partition_responses[0]
        assert pr.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (pr.current_leader.leader_id, pr.current_leader.leader_epoch) == (2, 1)
        assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(2, int(port2))]
        # ListOffsets: the leader answers at its epoch, a follower sends the client away
        L = list_offsets.REQUEST

        def list_req(epoch: int) -> list_offsets.ListOffsetsRequest:
            return L(replica_id=-1, isolation_level=0, topics=[L.ListOffsetsTopic(name="w", partitions=[
                L.ListOffsetsPartition(partition_index=0, current_leader_epoch=epoch, timestamp=-1)])])

        for conn, epoch, code in ((follower, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER), (leader, 0, ErrorCode.FENCED_LEADER_EPOCH),
                                  (leader, 1, 0)):
            resp = await conn.request(list_offsets.API, 9, list_req(epoch))
            assert resp.topics[0].partitions[0].error_code == code, (epoch, code)
        # OffsetForLeaderEpoch as a follower asks it
        OLE = offset_for_leader_epoch.REQUEST
        resp = await leader.request(offset_for_leader_epoch.API, 4, OLE(replica_id=1, topics=[OLE.OffsetForLeaderTopic(
            topic="w", partitions=[OLE.OffsetForLeaderPartition(partition=0, current_leader_epoch=1, leader_epoch=0)])]))
        r = resp.topics[0].partitions[0]
        assert (r.error_code, r.leader_epoch, r.end_offset) == (0, 0, 0)
    finally:
        await follower.close()
        await leader.close()


async def test_offset_for_leader_epoch_answers_the_follower(cluster):
    cluster.create_topic("ole", 1, [1, 2])
    p1 = cluster.partition(1, "ole")
    assert p1.last_offset_for_leader_epoch(0, 0) == (ErrorCode.NONE, 0, 0)
    assert p1.last_offset_for_leader_epoch(-1, 0)[0] == ErrorCode.NONE
    p2 = cluster.partition(2, "ole")
    assert p2.last_offset_for_leader_epoch(0, 0)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert p1.last_offset_for_leader_epoch(1, 0)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH


async def test_issue_scenario_one_paused_writes_go_on_two_paused_not_enough_replicas_resumed_isr_back(
        cluster_fast_isr):
    """Issue 29's first reference scenario, with kafka-python's producer: RF 3, min.insync.replicas
    2; one follower paused: writes go on; both paused: NOT_ENOUGH_REPLICAS; resumed: the ISR is
    whole again and the logs are the same bytes."""
    from kafka import KafkaProducer  # lazy: this test's client
    from kafka.errors import NotEnoughReplicasAfterAppendError, NotEnoughReplicasError

    cluster = cluster_fast_isr
    cluster.create_topic("scen", 1, [1, 2, 3], {"min.insync.replicas": 2})
    leader = cluster.partition(1, "scen")

    def send(values: list[bytes]) -> list[Any]:
        p = KafkaProducer(bootstrap_servers=cluster.brokers[1].bootstrap, acks="all", retries=0,
                          request_timeout_ms=20_000)
        try:
            out: list[Any] = []
            for v in values:
                try:
                    out.append(p.send("scen", v, partition=0).get(timeout=30).offset)
                except (NotEnoughReplicasError, NotEnoughReplicasAfterAppendError) as e:
                    out.append(e)
            return out
        finally:
            p.close()

    fm = {n: cluster.brokers[n].broker.replica_manager.fetcher_manager for n in (2, 3)}
    assert all(f is not None for f in fm.values())
    await fm[3].pause()  # type: ignore[union-attr]
    got = await asyncio.to_thread(send, [b"one-paused-%d" % i for i in range(3)])
    assert got == [0, 1, 2], (got, [(r.isr, r.partition_epoch) for _, _, r in cluster.alter_requests])
    await wait_until(lambda: leader.isr == (1, 2), "the ISR drops follower 3")
    await fm[2].pause()  # type: ignore[union-attr]
    # follower 2 has all of the log, so it is in sync until there is more (Kafka:
    # isFollowerOutOfSync): the next write is appended, waits, and once the ISR shrank to the
    # leader it is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND; the one after is refused at once
    got = await asyncio.to_thread(send, [b"two-paused", b"refused"])
    assert isinstance(got[0], NotEnoughReplicasAfterAppendError), got
    assert isinstance(got[1], NotEnoughReplicasError), got
    assert leader.isr == (1,) and leader.log_end_offset == 4
    fm[2].resume()  # type: ignore[union-attr]
    fm[3].resume()  # type: ignore[union-attr]
    await wait_until(lambda: sorted(leader.isr) == [1, 2, 3], "the ISR is whole again")
    got = await asyncio.to_thread(send, [b"resumed"])
    assert got == [4], (got, [(r.isr, r.partition_epoch) for _, _, r in cluster.alter_requests])
    await wait_until(lambda: all(cluster.partition(n, "scen").log_end_offset == 5 for n in (2, 3)), "caught up")
    assert log_bytes(cluster.partition(2, "scen")) == log_bytes(leader) == log_bytes(cluster.partition(3, "scen"))
