"""What the controller's tests share: a clock, a config, brokers registered and heartbeating, topics
created, AlterPartition requests, the image a replay of the log gives, all through the wire codec."""

from __future__ import annotations

import uuid
from typing import TypeVar

from minibroker.controller.quorum_controller import ControllerConfig, QuorumController
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker_protocol import codec
from minibroker_protocol.apis import (
    alter_partition,
    broker_heartbeat,
    broker_registration,
    create_topics,
)
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, read_metadata_batches
from minibroker_protocol.schema import Message, Schema

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
M = TypeVar("M", bound=Message)


def wire(schema: Schema[M], version: int, msg: M) -> M:
    """The message as the other side reads it."""
    return codec.decode(schema, version, codec.encode(schema, version, msg).to_bytes())


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def config(**kw: object) -> ControllerConfig:
    base: dict[str, object] = {"node_id": 3000, "cluster_id": CLUSTER, "voters": (3000,), "max_idle_interval_ms": 0}
    base.update(kw)
    return ControllerConfig(**base)  # type: ignore[arg-type]


def broker_dir(broker_id: int) -> uuid.UUID:
    """The directory id of a broker's one log dir (meta.properties keeps it across restarts)."""
    return uuid.uuid5(uuid.NAMESPACE_OID, f"minibroker-test-dir-{broker_id}")


async def register(c: QuorumController, broker_id: int, *, incarnation: uuid.UUID | None = None,
                   log_dirs: list[uuid.UUID] | None = None) -> int:
    req = broker_registration.REQUEST
    msg = req(broker_id=broker_id, cluster_id=CLUSTER, incarnation_id=incarnation or uuid.uuid4(),
              listeners=[req.Listener(name="PLAINTEXT", host="127.0.0.1", port=9092 + broker_id, security_protocol=0)],
              features=[req.Feature(name="metadata.version", min_supported_version=7, max_supported_version=33)],
              rack=None, log_dirs=[broker_dir(broker_id)] if log_dirs is None else log_dirs)  # KIP-858
    resp = await c.register_broker(wire(req, 4, msg))
    assert resp.error_code == 0
    return resp.broker_epoch


async def heartbeat(c: QuorumController, broker_id: int, epoch: int, *, offset: int | None = None,
                    want_fence: bool = False, want_shut_down: bool = False) -> broker_heartbeat.BrokerHeartbeatResponse:
    msg = broker_heartbeat.REQUEST(broker_id=broker_id, broker_epoch=epoch, want_fence=want_fence,
                                   want_shut_down=want_shut_down,
                                   current_metadata_offset=c.log.high_watermark - 1 if offset is None else offset)
    return await c.broker_heartbeat(wire(broker_heartbeat.REQUEST, 1, msg))


async def three_brokers(c: QuorumController) -> dict[int, int]:
    epochs = {b: await register(c, b) for b in (1, 2, 3)}
    for b, e in epochs.items():
        assert not (await heartbeat(c, b, e)).is_fenced
    return epochs


async def create(c: QuorumController, name: str, partitions: int = -1, rf: int = -1,
                 configs: dict[str, str] | None = None) -> create_topics.CreateTopicsResponse:
    req = create_topics.REQUEST
    topic = req.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
                               configs=[req.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])
    return await c.create_topics(wire(req, 7, req(topics=[topic])))


def replayed(c: QuorumController) -> MetadataImage:
    """The image an observer builds from the committed log alone."""
    delta = MetadataDelta(MetadataImage())
    for b in read_metadata_batches(c.read(0, 1 << 24).region.read_all()):  # type: ignore[union-attr]
        for r in b.records:
            if isinstance(r, ApiMessageAndVersion):
                delta.replay(r)
    return delta.apply(c.log.high_watermark - 1, c.log.epoch)


def alter(broker: int, epoch: int, topic_id: uuid.UUID, leader_epoch: int, partition_epoch: int,
          isr: list[int]) -> alter_partition.AlterPartitionRequest:
    req = alter_partition.REQUEST
    part = req.PartitionData(partition_index=0, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                             new_isr_with_epochs=[req.BrokerState(broker_id=b, broker_epoch=-1) for b in isr])
    return wire(req, 3, req(broker_id=broker, broker_epoch=epoch, topics=[req.TopicData(topic_id=topic_id,
                                                                                         partitions=[part])]))
