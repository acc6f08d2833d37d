"""The group coordinator on a cluster (issue 29: "a group's coordinator is the leader of its
partition and moves with it"): three BrokerServers on one loop, the test playing the controller
(cluster_helpers.InProcessController with the metadata published to every broker's cache, so
FindCoordinator names the leader of the group's __consumer_offsets partition).

- ReplicaManager.apply_delta tells the coordinators their elections and resignations
  (minibroker.coordinator_elections): the new leader loads the partition from its replica, the old
  one unloads it and answers NOT_COORDINATOR;
- an OffsetCommit is answered once the HW of the group's partition passed it (so the commit a
  client was told about is on the followers: a failover keeps it), and COORDINATOR_NOT_AVAILABLE
  when the partition's ISR is under min.insync.replicas (Kafka's mapping of NOT_ENOUGH_REPLICAS).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minibroker.network.node_connection import NodeConnection
from minibroker_protocol.apis import find_coordinator, offset_commit, offset_fetch
from minibroker_protocol.errors import ErrorCode

from .cluster_helpers import InProcessController, start_brokers, wait_until

pytestmark = pytest.mark.timeout(180)

OFFSETS = "__consumer_offsets"


@pytest.fixture
async def cluster(tmp_path):
    # one __consumer_offsets partition: every group lives in partition 0, whose leader the test moves
    brokers = await start_brokers(tmp_path, 3, {"offsets.topic.num.partitions": 1,
                                                "offsets.topic.replication.factor": 3})
    try:
        yield InProcessController(brokers, metadata=True)
    finally:
        for b in brokers.values():
            await b.stop()


def _bootstrap(cluster: InProcessController) -> str:
    return ",".join(b.bootstrap for b in cluster.brokers.values())


def _connection(cluster: InProcessController, node: int) -> NodeConnection:
    host, port = cluster.brokers[node].bootstrap.rsplit(":", 1)
    return NodeConnection(host, int(port), "coordinator-failover-test")


async def _find(conn: NodeConnection, group: str) -> tuple[int, int]:
    F = find_coordinator.REQUEST
    resp = await conn.request(find_coordinator.API, 4, F(key_type=0, coordinator_keys=[group]))
    c = resp.coordinators[0]
    return c.error_code, c.node_id


async def _offset_fetch(conn: NodeConnection, group: str, topic: str) -> tuple[int, int]:
    """(error, committed offset of topic-0) as OffsetFetch v7 answers it."""
    R = offset_fetch.REQUEST
    resp = await conn.request(offset_fetch.API, 7, R(group_id=group, topics=[
        R.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])], require_stable=False))
    if resp.error_code:
        return resp.error_code, -1
    return resp.topics[0].partitions[0].error_code, resp.topics[0].partitions[0].committed_offset


async def _offset_commit(conn: NodeConnection, group: str, topic: str, offset: int) -> int:
    """A simple (generation -1) OffsetCommit v8 of topic-0: its partition error."""
    R = offset_commit.REQUEST
    resp = await conn.request(offset_commit.API, 8, R(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                                      group_instance_id=None, topics=[R.OffsetCommitRequestTopic(
                                                          name=topic, partitions=[R.OffsetCommitRequestPartition(
                                                              partition_index=0, committed_offset=offset,
                                                              committed_leader_epoch=-1, committed_metadata="")])]))
    return resp.topics[0].partitions[0].error_code


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for v in values:
        p.produce(topic, v, partition=0)
    assert p.flush(60) == 0


def _consume(c: Consumer, count: int) -> list[bytes]:
    out: list[bytes] = []
    for _ in range(600):
        if len(out) >= count:
            break
        msg = c.poll(0.2)
        if msg is None or msg.error():
            continue
        out.append(msg.value())
    return out


async def test_group_coordinator_moves_with_the_leader_of_its_partition(cluster):
    cluster.create_topic("t", 1, [1, 2, 3])
    cluster.create_topic(OFFSETS, 1, [1, 2, 3], {"cleanup.policy": "compact"})
    await asyncio.to_thread(_produce, cluster.brokers[1].bootstrap, "t", [b"v%d" % i for i in range(10)])
    offsets = {n: cluster.partition(n, OFFSETS) for n in (1, 2, 3)}
    conns = {n: _connection(cluster, n) for n in (1, 2, 3)}
    for c in conns.values():
        await c.connect()
    consumer = Consumer({"bootstrap.servers": _bootstrap(cluster), "group.id": "g", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
                         "heartbeat.interval.ms": 500})
    try:
        # every broker names broker 1, the leader of __consumer_offsets-0, as the coordinator
        for c in conns.values():
            assert await _find(c, "g") == (ErrorCode.NONE, 1)
        consumer.subscribe(["t"])
        got = await asyncio.to_thread(_consume, consumer, 5)
        assert got == [b"v%d" % i for i in range(5)]
        await asyncio.to_thread(consumer.commit, asynchronous=False)
        # the commit was answered once replicated: the followers have every record the leader has
        leader_end = offsets[1].log_end_offset
        assert offsets[1].high_watermark == leader_end > 0
        assert all(offsets[n].log_end_offset == leader_end for n in (2, 3))
        # brokers 2 and 3 do not coordinate the group
        assert (await _offset_fetch(conns[2], "g", "t"))[0] == ErrorCode.NOT_COORDINATOR
        assert await _offset_fetch(conns[1], "g", "t") == (ErrorCode.NONE, 5)

        # failover: broker 2 leads __consumer_offsets-0 at epoch 1
        cluster.change(OFFSETS, 0, leader_id=2, isr=(2, 3, 1))
        gc2 = cluster.brokers[2].broker.coordinators.group
        await wait_until(lambda: cluster.brokers[2].broker.coordinators.runtime.is_loaded(OFFSETS, 0),
                         "broker 2 loads __consumer_offsets-0")
        assert "g" in gc2.groups and "g" not in cluster.brokers[1].broker.coordinators.group.groups
        for c in conns.values():
            assert await _find(c, "g") == (ErrorCode.NONE, 2)
        assert (await _offset_fetch(conns[1], "g", "t"))[0] == ErrorCode.NOT_COORDINATOR
        assert await _offset_fetch(conns[2], "g", "t") == (ErrorCode.NONE, 5)  # the commit survived

        # the same consumer goes on: NOT_COORDINATOR, FindCoordinator, rejoin at broker 2, commit there
        got = await asyncio.to_thread(_consume, consumer, 5)
        assert got == [b"v%d" % i for i in range(5, 10)]
        await asyncio.to_thread(consumer.commit, asynchronous=False)
        committed = await asyncio.to_thread(consumer.committed, [TopicPartition("t", 0)], 10)
        assert committed[0].offset == 10
        assert await _offset_fetch(conns[2], "g", "t") == (ErrorCode.NONE, 10)
        assert gc2.groups["g"].members  # the group rebalanced on broker 2 and has its member
    finally:
        await asyncio.to_thread(consumer.close)
        for c in conns.values():
            await c.close()
    # a new member of the group starts from what was committed on broker 2
    fresh = Consumer({"bootstrap.servers": _bootstrap(cluster), "group.id": "g", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
    try:
        await asyncio.to_thread(_produce, cluster.brokers[1].bootstrap, "t", [b"after"])
        fresh.subscribe(["t"])
        assert await asyncio.to_thread(_consume, fresh, 1) == [b"after"]
    finally:
        await asyncio.to_thread(fresh.close)


async def test_offset_commit_waits_for_replication_and_maps_not_enough_replicas(cluster):
    cluster.create_topic("t", 1, [1, 2, 3])
    cluster.create_topic(OFFSETS, 1, [1, 2, 3], {"cleanup.policy": "compact", "min.insync.replicas": 2})
    leader = cluster.partition(1, OFFSETS)
    conn = _connection(cluster, 1)
    await conn.connect()
    rm3 = cluster.brokers[3].broker.replica_manager
    try:
        assert await _offset_commit(conn, "simple", "t", 1) == ErrorCode.NONE
        assert cluster.partition(3, OFFSETS).log_end_offset == leader.log_end_offset
        # follower 3 stops fetching: the commit is appended, and answered only once it is replicated
        assert rm3.fetcher_manager is not None
        await rm3.fetcher_manager.pause()
        pending: asyncio.Future[Any] = asyncio.ensure_future(_offset_commit(conn, "simple", "t", 2))
        end_before = leader.log_end_offset
        await wait_until(lambda: leader.log_end_offset > end_before, "the commit is appended")
        await asyncio.sleep(0.5)
        assert not pending.done() and leader.high_watermark < leader.log_end_offset
        rm3.fetcher_manager.resume()
        assert await asyncio.wait_for(pending, 30) == ErrorCode.NONE
        assert leader.high_watermark == leader.log_end_offset
        # the ISR under min.insync.replicas: refused before the append, as Kafka maps NOT_ENOUGH_REPLICAS
        cluster.change(OFFSETS, 0, isr=(1,))
        end_before = leader.log_end_offset
        assert await _offset_commit(conn, "simple", "t", 3) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert leader.log_end_offset == end_before
        assert await _offset_fetch(conn, "simple", "t") == (ErrorCode.NONE, 2)
    finally:
        await conn.close()
