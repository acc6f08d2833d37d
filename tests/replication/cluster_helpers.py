"""Several BrokerServers on one event loop, replicating through the metadata the way a KRaft
controller drives them — without a controller: the test plays it.

`InProcessController` is a test seam, not a feature: it holds the partitions' registrations,
hands every broker the same changes through `ReplicaManager.apply_delta` (Kafka:
BrokerMetadataPublisher -> ReplicaManager.applyDelta), and implements the leaders'
`AlterPartitionManager` by checking the proposal's leader epoch and partition epoch, bumping the
partition epoch and applying the change to every broker, as the controller's AlterPartition does
through the metadata log. The real one (the controller helper's) speaks AlterPartition on the wire.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from minibroker.metadata_cache import ClusterBroker, PartitionImage, TopicImage
from minibroker.partition import Partition
from minibroker.replica import BrokerEndpoint, LeaderAndIsr
from minibroker.testing import AsyncBroker
from minibroker_protocol.errors import ErrorCode, KafkaError


class InProcessController:
    def __init__(self, brokers: dict[int, AsyncBroker], *, metadata: bool = False) -> None:
        """`metadata`: the registrations go to every broker's MetadataCache too, with the brokers'
        endpoints (as the KRaft BrokerMetadataPublisher does), so Metadata and FindCoordinator
        answer the real leaders."""
        self.brokers = brokers
        self.metadata = metadata
        self.topics: dict[str, TopicImage] = {}
        self.broker_epochs = {n: 100 + n for n in brokers}
        self.alter_requests: list[tuple[str, int, LeaderAndIsr]] = []
        self.fenced: set[int] = set()

    def endpoints(self) -> dict[int, BrokerEndpoint]:
        out = {}
        for n, b in self.brokers.items():
            if b.server is None:
                continue  # stopped: not registered (Kafka: fenced after missed heartbeats)
            host, port = b.bootstrap.rsplit(":", 1)
            out[n] = BrokerEndpoint(n, host, int(port), broker_epoch=self.broker_epochs[n], fenced=n in self.fenced)
        return out

    def create_topic(self, name: str, partitions: int, replicas: Sequence[int], config: dict[str, Any] | None = None,
                     *, leader: int | None = None, isr: Sequence[int] | None = None) -> TopicImage:
        """The topic on every broker (same id, same config), then its registration applied."""
        topic_id = uuid.uuid4()
        for b in self.brokers.values():
            b.broker.topics.create(name, partitions, config, topic_id=topic_id)
        first = next(iter(self.brokers.values())).broker
        image = first.topics.image(first.topics[name])
        lead = replicas[0] if leader is None else leader
        parts = {p: PartitionImage(p, lead, 0, tuple(replicas), tuple(replicas if isr is None else isr))
                 for p in range(partitions)}
        return self.publish(dataclasses.replace(image, partitions=parts))

    def publish(self, image: TopicImage) -> TopicImage:
        self.topics[image.name] = image
        endpoints = self.endpoints()
        for b in self.brokers.values():
            if b.server is None:
                continue  # a stopped broker catches up when started again
            rm = b.broker.replica_manager
            rm.alter_partition_manager = self
            if self.metadata:
                cache = b.broker.metadata_cache
                listener = b.broker.config.listener_name
                cache.brokers = {n: ClusterBroker(n, {listener: (e.host, e.port)}, fenced=e.fenced)
                                 for n, e in endpoints.items()}
                cache.publish_topic(image)
            rm.apply_delta([image], endpoints)
        return image

    def change(self, topic: str, partition: int, **fields: Any) -> PartitionImage:
        """A registration change (new leader, ISR...): the partition epoch goes up, and the
        leader epoch too when the leader changes (Kafka: PartitionChangeBuilder)."""
        image = self.topics[topic]
        cur = image.partitions[partition]
        new = dataclasses.replace(cur, partition_epoch=cur.partition_epoch + 1, **fields)
        if new.leader_id != cur.leader_id and "leader_epoch" not in fields:
            new = dataclasses.replace(new, leader_epoch=cur.leader_epoch + 1)
        self.publish(dataclasses.replace(image, partitions={**image.partitions, partition: new}))
        return new

    async def submit(self, topic_id: uuid.UUID, partition: int, proposal: LeaderAndIsr) -> LeaderAndIsr:
        """AlterPartition, as the controller checks and commits it (ReplicationControlManager)."""
        await asyncio.sleep(0)  # an answer comes later, as over the wire
        image = next(t for t in self.topics.values() if t.topic_id == topic_id)
        cur = image.partitions[partition]
        self.alter_requests.append((image.name, partition, proposal))
        if proposal.leader != cur.leader_id or proposal.leader_epoch != cur.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
        if proposal.partition_epoch != cur.partition_epoch:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION)
        new = self.change(image.name, partition, isr=proposal.isr)
        return LeaderAndIsr(new.leader_id, new.leader_epoch, proposal.isr_with_epochs, new.partition_epoch)

    def partition(self, node: int, topic: str, p: int = 0) -> Partition:
        part = self.brokers[node].broker.replica_manager.get_partition(topic, p)
        assert part is not None
        return part


async def start_brokers(tmp_path: Path, n: int, overrides: dict[str, Any] | None = None) -> dict[int, AsyncBroker]:
    brokers = {}
    for i in range(1, n + 1):
        b = AsyncBroker(tmp_path / f"broker-{i}", overrides={"node.id": i, **(overrides or {})})
        await b.start()
        brokers[i] = b
    return brokers


async def wait_until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.01)


def log_bytes(part: Partition) -> bytes:
    return b"".join(s.log.read(0, s.size) for s in part.log.segments)
