"""Partition reassignment at our controller (minibroker/controller/reassignment.py,
reassignment_replicas.py; Kafka's ReplicationControlManager / PartitionChangeBuilder, KIP-455):
the records a move writes (target + removing replicas, adding/removing lists), its completion by
the leader's AlterPartition (replicas = target, ISR without the removed, a new leader and a
leader epoch bump when the leader leaves), a removal completing at once, cancellation, and Kafka's
errors. Requests go through the wire codec at the versions Kafka's admin client sends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller.quorum_controller import QuorumController
from minibroker.metadata.partition_registration import NO_LEADER_CHANGE, PartitionRegistration
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import alter_partition_reassignments as apr
from minibroker_protocol.apis import create_topics
from minibroker_protocol.apis import list_partition_reassignments as lpr
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, read_metadata_batches
from tests.broker.controller_helpers import Clock, alter, config, heartbeat, replayed, three_brokers, wire


@pytest.fixture
async def controller(tmp_path: Path) -> AsyncIterator[QuorumController]:
    c = QuorumController(tmp_path, config(), clock=Clock())
    await c.start()
    yield c
    await c.shutdown()


async def create_assigned(c: QuorumController, name: str, *replicas: list[int]) -> uuid.UUID:
    req = create_topics.REQUEST
    topic = req.CreatableTopic(name=name, num_partitions=-1, replication_factor=-1, configs=[], assignments=[
        req.CreatableReplicaAssignment(partition_index=i, broker_ids=r) for i, r in enumerate(replicas)])
    (out,) = (await c.create_topics(wire(req, 7, req(topics=[topic])))).topics
    assert out.error_code == 0, out
    return out.topic_id


async def reassign(c: QuorumController, name: str, replicas: list[int] | None, partition: int = 0, *,
                   allow_rf_change: bool = True) -> apr.AlterPartitionReassignmentsResponse.ReassignablePartitionResponse:
    req = apr.REQUEST
    msg = req(timeout_ms=30000, allow_replication_factor_change=allow_rf_change, topics=[req.ReassignableTopic(
        name=name, partitions=[req.ReassignablePartition(partition_index=partition, replicas=replicas)])])
    resp = await c.alter_partition_reassignments(wire(req, 1, msg))
    (topic,) = resp.responses
    (part,) = topic.partitions
    return part


def reg(c: QuorumController, name: str, partition: int = 0) -> PartitionRegistration:
    topic = c.image.topic(name)
    assert topic is not None
    return topic.partitions[partition]


def last_change(c: QuorumController) -> mr.PartitionChangeRecord:
    """The last PartitionChangeRecord of the committed log, as an observer reads it."""
    found = None
    for b in read_metadata_batches(c.read(0, 1 << 24).region.read_all()):  # type: ignore[union-attr]
        for r in b.records:
            if isinstance(r, ApiMessageAndVersion) and isinstance(r.message, mr.PartitionChangeRecord):
                found = r.message
    assert found is not None
    return found


async def test_a_move_adds_then_completes_when_the_new_replica_joins_the_isr(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    tid = await create_assigned(controller, "mv", [1, 2])
    assert (await reassign(controller, "mv", [2, 3])).error_code == 0
    r = reg(controller, "mv")
    # Kafka's stage 1: the target then the replicas leaving; the ISR and the leader stay
    assert (r.replicas, r.adding_replicas, r.removing_replicas, r.isr) == ((2, 3, 1), (3,), (1,), (1, 2))
    assert (r.leader, r.leader_epoch, r.partition_epoch) == (1, 0, 1)
    rec = last_change(controller)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas, rec.isr, rec.leader) == (
        [2, 3, 1], [3], [1], None, NO_LEADER_CHANGE)
    listed = controller.list_partition_reassignments(lpr.REQUEST(timeout_ms=1000, topics=None))
    (t,) = listed.topics
    assert (t.name, [(p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
                     for p in t.partitions]) == ("mv", [(0, [2, 3, 1], [3], [1])])
    # the leader's ISR with the new replica completes it; leader 1 was removed: 2 leads, a new epoch
    resp = await controller.alter_partition(alter(1, epochs[1], tid, 0, 1, [1, 2, 3]), 3)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NEW_LEADER_ELECTED
    r = reg(controller, "mv")
    assert (r.replicas, r.adding_replicas, r.removing_replicas, r.isr) == ((2, 3), (), (), (2, 3))
    assert (r.leader, r.leader_epoch, r.partition_epoch) == (2, 1, 2)
    rec = last_change(controller)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas, rec.isr, rec.leader) == ([2, 3], [], [], [2, 3], 2)
    assert controller.list_partition_reassignments(lpr.REQUEST(timeout_ms=1000, topics=None)).topics == []
    assert replayed(controller).topics == controller.image.topics


async def test_growing_the_replication_factor_keeps_the_leader_and_its_epoch(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    tid = await create_assigned(controller, "grow", [1, 2])
    assert (await reassign(controller, "grow", [1, 2, 3])).error_code == 0
    r = reg(controller, "grow")
    assert (r.replicas, r.adding_replicas, r.removing_replicas) == ((1, 2, 3), (3,), ())
    # an ISR change without every new replica does not complete it
    shrink = await controller.alter_partition(alter(1, epochs[1], tid, 0, 1, [1]), 3)
    assert shrink.topics[0].partitions[0].error_code == 0 and reg(controller, "grow").adding_replicas == (3,)
    grown = await controller.alter_partition(alter(1, epochs[1], tid, 0, 2, [1, 2, 3]), 3)
    (out,) = grown.topics[0].partitions
    assert (out.error_code, out.leader_id, out.leader_epoch, out.isr, out.partition_epoch) == (0, 1, 0, [1, 2, 3], 3)
    r = reg(controller, "grow")
    assert (r.replicas, r.adding_replicas, r.removing_replicas, r.isr, r.leader_epoch) == ((1, 2, 3), (), (), (1, 2, 3), 0)


async def test_shrinking_completes_at_once_with_a_leader_epoch_bump(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create_assigned(controller, "shrink", [1, 2, 3], [3, 1, 2])
    assert (await reassign(controller, "shrink", [1, 2])).error_code == 0
    r = reg(controller, "shrink")
    assert (r.replicas, r.adding_replicas, r.removing_replicas, r.isr, r.leader, r.leader_epoch) == (
        (1, 2), (), (), (1, 2), 1, 1)
    rec = last_change(controller)
    assert (rec.replicas, rec.isr, rec.leader, rec.adding_replicas, rec.removing_replicas) == (
        [1, 2], [1, 2], 1, None, None)
    # the leader removed: the first target replica in the ISR leads; the ISR keeps its order. The
    # record is the one Kafka 4.4's controller wrote for this move (kafka-dump-log on its log)
    await create_assigned(controller, "shrink2", [1, 2, 3])
    assert (await reassign(controller, "shrink2", [3, 2])).error_code == 0
    r = reg(controller, "shrink2")
    assert (r.replicas, r.isr, r.leader, r.leader_epoch) == ((3, 2), (2, 3), 3, 1)
    rec = last_change(controller)
    assert (rec.isr, rec.leader, rec.replicas, rec.adding_replicas, rec.removing_replicas) == (
        [2, 3], 3, [3, 2], None, None)


async def test_a_reorder_completes_at_once_and_keeps_the_leader(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create_assigned(controller, "order", [1, 2, 3])
    assert (await reassign(controller, "order", [3, 1, 2])).error_code == 0
    r = reg(controller, "order")
    assert (r.replicas, r.isr, r.leader, r.leader_epoch, r.adding_replicas) == ((3, 1, 2), (1, 2, 3), 1, 0, ())
    rec = last_change(controller)
    assert (rec.replicas, rec.isr, rec.leader) == ([3, 1, 2], None, NO_LEADER_CHANGE)
    assert (await reassign(controller, "order", [3, 1, 2])).error_code == 0  # the same again: no record
    assert reg(controller, "order").partition_epoch == 1


async def test_cancelling_reverts_to_the_original_replicas(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create_assigned(controller, "cancel", [1, 2])
    assert (await reassign(controller, "cancel", [2, 3])).error_code == 0
    assert (await reassign(controller, "cancel", None)).error_code == 0
    r = reg(controller, "cancel")
    # the replicas without the added ones, in the order of the move (Kafka's
    # PartitionReassignmentRevert: [2, 3, 1] - [3]); broker 3 leaves: the leader epoch moves
    assert (r.replicas, r.adding_replicas, r.removing_replicas, r.isr, r.leader, r.leader_epoch) == (
        (2, 1), (), (), (1, 2), 1, 1)
    again = await reassign(controller, "cancel", None)
    assert (again.error_code, again.error_message) == (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                                      "No partition reassignment is in progress.")


async def test_a_fenced_leaving_leader_hands_over_and_the_new_leader_completes(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    tid = await create_assigned(controller, "fence", [1, 2])
    assert (await reassign(controller, "fence", [2, 3])).error_code == 0
    # broker 1 (leader, leaving) is fenced: 2 leads with ISR [2]; 3 is not in the ISR yet: still moving
    await heartbeat(controller, 1, epochs[1], want_fence=True)
    r = reg(controller, "fence")
    assert (r.leader, r.leader_epoch, r.isr, r.adding_replicas, r.removing_replicas) == (2, 1, (2,), (3,), (1,))
    resp = await controller.alter_partition(alter(2, epochs[2], tid, 1, r.partition_epoch, [2, 3]), 3)
    (out,) = resp.topics[0].partitions
    # completed; 2 stays leader but 1 left the replicas: a new leader epoch all the same
    assert (out.error_code, out.leader_id, out.leader_epoch, out.isr) == (0, 2, 2, [2, 3])
    r = reg(controller, "fence")
    assert (r.replicas, r.isr, r.adding_replicas, r.removing_replicas) == ((2, 3), (2, 3), (), ())


async def test_kafkas_errors(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create_assigned(controller, "err", [1, 2])

    async def error(name: str, replicas: list[int] | None, partition: int = 0, allow: bool = True) -> tuple[int, str | None]:
        out = await reassign(controller, name, replicas, partition, allow_rf_change=allow)
        return out.error_code, out.error_message

    assert await error("err", [2, 2]) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                          "The manual partition assignment includes the broker 2 more than once.")
    assert await error("err", [1, 9]) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                          "The manual partition assignment includes broker 9, but no such broker is "
                                          "registered.")
    assert await error("err", []) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                      "The manual partition assignment includes an empty replica list.")
    assert await error("nope", [1]) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")
    assert await error("err", [1], 5) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition err:5.")
    assert await error("err", [1, 2, 3], allow=False) == (ErrorCode.INVALID_REPLICATION_FACTOR,
                                                          "The replication factor is changed from 2 to 3")
    assert await error("err", [3, 1], allow=False) == (0, None)
    # during a reassignment the factor compared is the one the partition is headed for
    assert reg(controller, "err").replicas == (3, 1, 2)
    assert await error("err", [1, 2, 3], allow=False) == (ErrorCode.INVALID_REPLICATION_FACTOR,
                                                          "The replication factor is changed from 2 to 3")
    assert reg(controller, "err").adding_replicas == (3,)


async def test_a_manual_assignment_at_creation_is_checked_as_kafka_checks_it(controller: QuorumController) -> None:
    """CreateTopics with assignments goes through the same checks (Kafka:
    validateManualPartitionAssignment), with one replication factor for the whole topic."""
    await three_brokers(controller)
    req = create_topics.REQUEST

    async def error(*replicas: list[int]) -> tuple[int, str | None]:
        topic = req.CreatableTopic(name="m", num_partitions=-1, replication_factor=-1, configs=[], assignments=[
            req.CreatableReplicaAssignment(partition_index=i, broker_ids=r) for i, r in enumerate(replicas)])
        (out,) = (await controller.create_topics(wire(req, 7, req(topics=[topic])))).topics
        return out.error_code, out.error_message

    assert await error([1, 2], [1, 2, 3]) == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes a partition with 3 replica(s), "
        "but this is not consistent with previous partitions, which have 2 replica(s).")
    assert await error([1, 1]) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                   "The manual partition assignment includes the broker 1 more than once.")
    assert await error([]) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "The manual partition assignment includes an empty replica list.")
    assert controller.image.topic("m") is None
