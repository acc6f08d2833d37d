"""KIP-858 on our controller (minibroker.controller.directory_assignment), as Kafka 4.4's
ReplicationControlManager / ClusterControlManager do it: the directories a new partition records,
AssignReplicasToDirs with Kafka's error of each case, the OfflineLogDirs of a heartbeat moving
leadership and the ISR off the failed directory, and the registrations Kafka refuses."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller.quorum_controller import QuorumController
from minibroker.controller.replication_control import TopicDefaults
from minibroker.metadata.partition_registration import UNASSIGNED
from minibroker_protocol.apis import assign_replicas_to_dirs, broker_heartbeat, broker_registration
from minibroker_protocol.errors import ErrorCode
from tests.broker.controller_helpers import (
    CLUSTER,
    Clock,
    broker_dir,
    config,
    create,
    heartbeat,
    register,
    replayed,
    wire,
)

A, B = uuid.UUID("11111111-1111-4111-8111-111111111111"), uuid.UUID("22222222-2222-4222-8222-222222222222")
REQ = assign_replicas_to_dirs.REQUEST


@pytest.fixture
async def controller(tmp_path: Path) -> AsyncIterator[QuorumController]:
    c = QuorumController(tmp_path, config(topic_defaults=TopicDefaults(num_partitions=2, replication_factor=3)),
                         clock=Clock())
    await c.start()
    yield c
    await c.shutdown()


async def _cluster(c: QuorumController) -> dict[int, int]:
    """Broker 1 with two directories (A, B), brokers 2 and 3 with one each; all unfenced."""
    epochs = {1: await register(c, 1, log_dirs=[A, B]), 2: await register(c, 2), 3: await register(c, 3)}
    for b, e in epochs.items():
        assert not (await heartbeat(c, b, e)).is_fenced
    return epochs


def assign(broker: int, epoch: int, directory: uuid.UUID, topic_id: uuid.UUID, *partitions: int
           ) -> assign_replicas_to_dirs.AssignReplicasToDirsRequest:
    return wire(REQ, 0, REQ(broker_id=broker, broker_epoch=epoch, directories=[REQ.DirectoryData(
        id=directory, topics=[REQ.TopicData(topic_id=topic_id, partitions=[
            REQ.PartitionData(partition_index=p) for p in partitions])])]))


def errors(resp: assign_replicas_to_dirs.AssignReplicasToDirsResponse) -> dict[tuple[uuid.UUID, int], int]:
    return {(t.topic_id, p.partition_index): p.error_code for d in resp.directories for t in d.topics
            for p in t.partitions}


async def test_new_partitions_record_each_brokers_default_directory(controller: QuorumController) -> None:
    await _cluster(controller)
    assert (await create(controller, "t")).topics[0].error_code == 0
    t = controller.image.topic("t")
    assert t is not None
    for reg in t.partitions.values():
        # ClusterControlManager.defaultDir: several directories -> UNASSIGNED, one -> that one
        dirs = dict(zip(reg.replicas, reg.directories, strict=True))
        assert dirs == {1: UNASSIGNED, 2: broker_dir(2), 3: broker_dir(3)}
    assert replayed(controller).topic("t") == t  # as the brokers read it from the log


async def test_assign_replicas_to_dirs_records_the_directory_and_answers_kafkas_errors(
        controller: QuorumController) -> None:
    epochs = await _cluster(controller)
    await create(controller, "t")
    await register(controller, 4, log_dirs=[uuid.uuid4()])
    t = controller.image.topic("t")
    assert t is not None
    resp = await controller.assign_replicas_to_dirs(assign(1, epochs[1], B, t.id, 0, 1, 7))
    assert resp.error_code == 0
    assert errors(resp) == {(t.id, 0): 0, (t.id, 1): 0, (t.id, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    t = controller.image.topic("t")
    assert t is not None
    for reg in t.partitions.values():
        assert dict(zip(reg.replicas, reg.directories, strict=True))[1] == B
        assert reg.leader_epoch == 0  # a directory alone moves no leadership
    unknown = uuid.uuid4()
    assert errors(await controller.assign_replicas_to_dirs(assign(1, epochs[1], A, unknown, 0))) == {
        (unknown, 0): ErrorCode.UNKNOWN_TOPIC_ID}
    b4 = controller.image.brokers[4]
    assert errors(await controller.assign_replicas_to_dirs(assign(4, b4.epoch, b4.log_dirs[0], t.id, 0))) == {
        (t.id, 0): ErrorCode.NOT_LEADER_OR_FOLLOWER}  # not a replica of it
    stale = await controller.assign_replicas_to_dirs(assign(1, epochs[1] - 1, A, t.id, 0))
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH and stale.directories == []


async def test_a_replica_assigned_to_an_unregistered_directory_loses_its_leadership(
        controller: QuorumController) -> None:
    epochs = await _cluster(controller)
    await create(controller, "t", partitions=1)
    t = controller.image.topic("t")
    assert t is not None
    before = t.partitions[0]
    leader = before.leader
    # Kafka: a directory the registration does not list is offline ("offline-dir-assignment")
    resp = await controller.assign_replicas_to_dirs(assign(leader, epochs[leader], uuid.uuid4(), t.id, 0))
    assert errors(resp) == {(t.id, 0): 0}
    after = controller.image.topic("t").partitions[0]  # type: ignore[union-attr]
    assert after.leader not in (leader, -1) and leader not in after.isr


async def test_an_offline_directory_in_a_heartbeat_moves_leadership_and_the_isr(controller: QuorumController) -> None:
    epochs = await _cluster(controller)
    await create(controller, "t", partitions=4)
    t = controller.image.topic("t")
    assert t is not None
    # broker 1 placed partitions 0, 1 in A and 2, 3 in B
    await controller.assign_replicas_to_dirs(assign(1, epochs[1], A, t.id, 0, 1))
    await controller.assign_replicas_to_dirs(assign(1, epochs[1], B, t.id, 2, 3))
    led_by_1 = {p for p, reg in controller.image.topic("t").partitions.items() if reg.leader == 1}  # type: ignore[union-attr]
    assert led_by_1
    offset = controller.image.offset
    msg = broker_heartbeat.REQUEST(broker_id=1, broker_epoch=epochs[1], current_metadata_offset=offset,
                                   offline_log_dirs=[A])
    assert (await controller.broker_heartbeat(wire(broker_heartbeat.REQUEST, 1, msg))).error_code == 0
    image = controller.image
    parts = image.topic("t").partitions  # type: ignore[union-attr]
    for p in (0, 1):  # in the failed directory: out of the ISR, no longer leading
        assert 1 not in parts[p].isr and parts[p].leader not in (1, -1), parts[p]
    for p in (2, 3):  # in the healthy one: untouched
        assert 1 in parts[p].isr and (parts[p].leader == 1) == (p in led_by_1)
    assert image.brokers[1].log_dirs == (B,) and not image.brokers[1].fenced
    # named again in the next heartbeats: nothing more is written (only newly offline directories count)
    end = controller.log.end_offset
    assert (await controller.broker_heartbeat(wire(broker_heartbeat.REQUEST, 1, msg))).error_code == 0
    assert controller.log.end_offset == end
    # the replica in the offline directory is not elected, even as the last one standing
    for b in (2, 3):
        await heartbeat(controller, b, epochs[b], want_fence=True)
    parts = controller.image.topic("t").partitions  # type: ignore[union-attr]
    assert parts[0].leader == -1 and parts[2].leader == 1
    assert replayed(controller).brokers[1].log_dirs == (B,)


@pytest.mark.parametrize(("dirs", "message"), [
    ([], "No directories specified in request"),
    ([uuid.UUID(int=1)], "Reserved directory ID in request"),
    ([A, A], "Duplicate directory ID in request"),
    ([broker_dir(2)], "Broker 2 is already registered with directory"),
])
async def test_registrations_kafka_refuses(controller: QuorumController, dirs: list[uuid.UUID], message: str,
                                           caplog: pytest.LogCaptureFixture) -> None:
    await register(controller, 2)
    req = broker_registration.REQUEST
    msg = req(broker_id=5, cluster_id=CLUSTER, incarnation_id=uuid.uuid4(), rack=None, log_dirs=dirs,
              listeners=[req.Listener(name="PLAINTEXT", host="127.0.0.1", port=9099, security_protocol=0)],
              features=[req.Feature(name="metadata.version", min_supported_version=7, max_supported_version=33)])
    with caplog.at_level("INFO", logger="minibroker.controller"):
        resp = await controller.register_broker(wire(req, 4, msg))
    assert resp.error_code == ErrorCode.INVALID_REGISTRATION
    assert message in caplog.text
