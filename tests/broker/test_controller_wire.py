"""The controller on its listener and the broker side over loopback TCP (minibroker/controller/controller_server.py,
minibroker/metadata): brokers register, are unfenced once caught up with the metadata log they follow,
see a topic the controller creates as leaders and followers (local changes handed to a publisher),
lose leadership when a broker's heartbeats stop, and leave through a controlled shutdown."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller.controller_server import ControllerServer
from minibroker.controller.quorum_controller import ControllerConfig
from minibroker.controller.replication_control import TopicDefaults
from minibroker.metadata.alter_partition_manager import ControllerAlterPartitionManager, LeaderAndIsr
from minibroker.metadata.broker_lifecycle_manager import BrokerLifecycleManager, ListenerInfo
from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.image import LocalReplicaChanges, MetadataDelta, MetadataImage
from minibroker.metadata.metadata_loader import MetadataLoader
from minibroker_protocol.apis import api_versions, create_topics
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.headers import RequestHeader, encode_request_header
from tests.broker.controller_helpers import broker_dir

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
TIMEOUT = 30.0


class Recorder:
    """A publisher keeping what a ReplicaManager would be told."""

    def __init__(self, node_id: int):
        self.node_id = node_id
        self.changes: list[LocalReplicaChanges] = []

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.changes.append(delta.local_changes(self.node_id))


class Broker:
    def __init__(self, node_id: int, port: int):
        self.loader = MetadataLoader(ControllerChannel("127.0.0.1", port, client_id=f"raft-{node_id}"),
                                     node_id=node_id, cluster_id=CLUSTER)
        self.recorder = Recorder(node_id)
        self.loader.add_publisher(self.recorder)
        self.lifecycle = BrokerLifecycleManager(
            ControllerChannel("127.0.0.1", port, client_id=f"broker-{node_id}-heartbeat"), node_id=node_id,
            cluster_id=CLUSTER, listeners=[ListenerInfo("PLAINTEXT", "127.0.0.1", 19092 + node_id)],
            features={"metadata.version": (7, 33)}, metadata_offset=lambda: self.loader.highest_offset,
            heartbeat_interval_ms=100, log_dirs=[broker_dir(node_id)])  # KIP-858: refused without one

    async def start(self) -> None:
        self.loader.start()
        await self.lifecycle.start()

    async def stop(self) -> None:
        await self.lifecycle.stop()
        await self.loader.stop()


async def until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not check():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ControllerServer]:
    s = ControllerServer(tmp_path, ControllerConfig(node_id=3000, cluster_id=CLUSTER, voters=(3000,),
                                                    session_timeout_ms=1500, max_idle_interval_ms=200,
                                                    topic_defaults=TopicDefaults(replication_factor=3)),
                         "127.0.0.1", 0)
    await s.startup()
    yield s
    await s.shutdown()


async def test_api_versions_lists_what_the_controller_serves(server: ControllerServer) -> None:
    channel = ControllerChannel("127.0.0.1", server.port, client_id="probe")
    resp = await channel.send(api_versions.API, api_versions.REQUEST(), version=3)
    await channel.close()
    assert isinstance(resp, api_versions.ApiVersionsResponse)
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == {
        1: (13, 18), 18: (0, 4), 19: (2, 7), 20: (0, 6), 37: (0, 3), 43: (0, 2), 44: (0, 1), 55: (0, 2), 56: (2, 3),
        45: (0, 1), 46: (0, 0), 57: (0, 2), 59: (0, 1), 30: (1, 3), 31: (1, 3), 51: (0, 0), 49: (0, 1),
        58: (0, 0),
        60: (1, 2), 62: (0, 4), 63: (0, 2),
        64: (0, 0), 67: (0, 0), 70: (0, 0), 94: (0, 0),
        73: (0, 0),  # AssignReplicasToDirs (KIP-858)
        38: (1, 3), 39: (1, 2), 40: (1, 2)}  # the delegation-token requests, in an Envelope (Kafka's listeners too)


async def test_brokers_register_follow_the_log_and_fail_over(server: ControllerServer) -> None:
    brokers = {i: Broker(i, server.port) for i in (1, 2, 3)}
    for b in brokers.values():
        await b.start()
    try:
        await asyncio.wait_for(asyncio.gather(*(b.lifecycle.unfenced.wait() for b in brokers.values())), TIMEOUT)
        assert all(b.lifecycle.caught_up.is_set() for b in brokers.values())
        c = server.controller
        req = create_topics.REQUEST
        resp = await c.create_topics(req(topics=[req.CreatableTopic(name="orders", num_partitions=3,
                                                                    replication_factor=3, assignments=[],
                                                                    configs=[])]))
        assert resp.topics[0].error_code == ErrorCode.NONE
        offset = c.image.offset
        for b in brokers.values():
            assert await b.loader.wait_for_offset(offset, TIMEOUT)
            assert b.loader.image.topics == c.image.topics and b.loader.image.brokers.keys() == {1, 2, 3}
        topic = c.image.topic("orders")
        assert topic is not None
        for i, b in brokers.items():
            led = {k for ch in b.recorder.changes for k in ch.leaders}
            followed = {k for ch in b.recorder.changes for k in ch.followers}
            assert led == {("orders", p) for p, reg in topic.partitions.items() if reg.leader == i}
            assert followed == {("orders", p) for p, reg in topic.partitions.items() if reg.leader != i}
        # broker 1's heartbeats stop (its process hangs): after the session it is fenced and its
        # partitions get the next replica of their ISR as leader, which the others see
        await brokers[1].lifecycle.stop()
        await brokers[1].loader.stop()
        await until(lambda: c.image.brokers[1].fenced, "broker 1 to be fenced")
        moved = {p for p, reg in topic.partitions.items() if reg.leader == 1}
        now = c.image.topics[topic.id].partitions
        assert all(now[p].leader != 1 and now[p].leader_epoch == 1 and 1 not in now[p].isr for p in moved)
        await until(lambda: brokers[2].loader.image.topics == c.image.topics, "broker 2 to see the failover")
        # broker 2 shuts down cleanly: it leads nothing when the controller lets it go
        assert await brokers[2].lifecycle.controlled_shutdown(TIMEOUT)
        assert c.image.brokers[2].fenced
        assert all(reg.leader not in (1, 2) for reg in c.image.topics[topic.id].partitions.values())
    finally:
        for i in (2, 3):
            await brokers[i].stop()


async def test_alter_partition_manager_batches_proposals_and_returns_each_answer(server: ControllerServer) -> None:
    brokers = {i: Broker(i, server.port) for i in (1, 2, 3)}
    for b in brokers.values():
        await b.start()
    manager = None
    try:
        await asyncio.wait_for(asyncio.gather(*(b.lifecycle.unfenced.wait() for b in brokers.values())), TIMEOUT)
        c = server.controller
        req = create_topics.REQUEST
        await c.create_topics(req(topics=[req.CreatableTopic(name="isr", num_partitions=2, replication_factor=3,
                                                             assignments=[], configs=[])]))
        topic = c.image.topic("isr")
        assert topic is not None
        leader = topic.partitions[0].leader
        manager = ControllerAlterPartitionManager(
            ControllerChannel("127.0.0.1", server.port, client_id=f"alter-partition-{leader}"), broker_id=leader,
            broker_epoch=lambda: brokers[leader].lifecycle.broker_epoch)
        p0 = topic.partitions[0]
        shrunk = tuple((r, -1) for r in p0.replicas if r == leader or r == p0.replicas[-1])
        proposal = LeaderAndIsr(leader, p0.leader_epoch, shrunk, p0.partition_epoch)
        first = manager.submit(topic.id, 0, proposal)
        again = manager.submit(topic.id, 0, proposal)  # one in flight per partition
        stale = manager.submit(topic.id, 1, LeaderAndIsr(leader, 0, shrunk, 7))
        result = await asyncio.wait_for(first, TIMEOUT)
        assert result.isr == tuple(r for r in p0.replicas if r in dict(shrunk)) and result.partition_epoch == 1
        assert c.image.topics[topic.id].partitions[0].isr == result.isr
        with pytest.raises(KafkaError) as refused:
            await again
        assert refused.value.code == ErrorCode.OPERATION_NOT_ATTEMPTED
        with pytest.raises(KafkaError) as answered:
            await asyncio.wait_for(stale, TIMEOUT)
        # partition 1: either not led by this broker or a wrong partition epoch; Kafka's error either way
        assert answered.value.code in (ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    finally:
        if manager is not None:
            await manager.close()
        for b in brokers.values():
            await b.stop()


async def test_an_unreadable_request_closes_its_connection_only(server: ControllerServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    frame = bytearray()
    encode_request_header(frame, RequestHeader(63, 1, 7, "bad"))  # BrokerHeartbeat v1 ...
    frame += b"\x00\x01"  # ... with a body cut short
    writer.write(struct.pack(">i", len(frame)) + bytes(frame))
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # closed, no answer
    writer.close()
    channel = ControllerChannel("127.0.0.1", server.port, client_id="after")
    resp = await channel.send(api_versions.API, api_versions.REQUEST(), version=3)
    await channel.close()
    assert resp.error_code == 0  # type: ignore[attr-defined]


async def test_a_broker_behind_the_log_start_loads_the_snapshot_then_the_log(tmp_path: Path) -> None:
    s = ControllerServer(tmp_path, ControllerConfig(node_id=3000, cluster_id=CLUSTER, voters=(3000,),
                                                    max_idle_interval_ms=0, snapshot_max_bytes=1, retention_bytes=1,
                                                    segment_bytes=4096), "127.0.0.1", 0)
    await s.startup()
    first, late = Broker(1, s.port), Broker(2, s.port)
    try:
        c = s.controller
        await first.start()
        await asyncio.wait_for(first.lifecycle.unfenced.wait(), TIMEOUT)
        req = create_topics.REQUEST
        for i in range(30):  # several 4 KiB segments
            resp = await c.create_topics(req(topics=[req.CreatableTopic(
                name=f"t{i}", num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
            assert resp.topics[0].error_code == 0
        async with c._lock:
            await c._maybe_snapshot()
        assert c.log.start_offset > 0 and c.log.log.num_segments < 10  # the segments before the snapshot went
        await c.create_topics(req(topics=[req.CreatableTopic(name="after", num_partitions=1, replication_factor=1,
                                                             assignments=[], configs=[])]))
        with pytest.raises(KafkaError):
            c.read(0, 1 << 20)
        await late.start()  # fetches from 0: sent to the snapshot, then the log after it
        await asyncio.wait_for(late.lifecycle.unfenced.wait(), TIMEOUT)
        assert await late.loader.wait_for_offset(c.image.offset, TIMEOUT)
        assert late.loader.image.topics == c.image.topics and len(c.image.topics) == 31
        assert {k for ch in late.recorder.changes for k in ch.followers} == set()  # broker 2 hosts none of them
    finally:
        await first.stop()
        await late.stop()
        await s.shutdown()
