"""Eligible Leader Replicas (KIP-966) on our controller, request by request: a leader's ISR shrink
below min.insync.replicas fills the ELR and an ISR back at min ISR clears it (AlterPartition);
a broker registering without its last epoch (an unclean shutdown) leaves the ELR; with ISR and ELR
empty the last known leader is elected, RECOVERING (minibroker/controller/eligible_leader_replicas.py;
the cluster scenario against Kafka 4.4 is tests/reference/test_kafka_cluster_reference.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller.quorum_controller import QuorumController
from minibroker.controller.replication_control import TopicDefaults
from minibroker.metadata.partition_registration import LeaderRecoveryState, PartitionRegistration
from minibroker_protocol.apis import create_topics, elect_leaders, update_features
from minibroker_protocol.apis import incremental_alter_configs as iac
from tests.broker.controller_helpers import (
    Clock,
    alter,
    config,
    heartbeat,
    register,
    replayed,
    three_brokers,
    wire,
)


@pytest.fixture
async def controller(tmp_path: Path) -> AsyncIterator[QuorumController]:
    c = QuorumController(tmp_path, config(topic_defaults=TopicDefaults(num_partitions=1, replication_factor=3)),
                         clock=Clock())
    await c.start()
    yield c
    await c.shutdown()


async def _topic(c: QuorumController) -> tuple[uuid.UUID, PartitionRegistration]:
    req = create_topics.REQUEST
    topic = req.CreatableTopic(name="t", num_partitions=-1, replication_factor=-1, configs=[
        req.CreatableTopicConfig(name="min.insync.replicas", value="2")], assignments=[
        req.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2, 3])])
    resp = await c.create_topics(wire(req, 7, req(topics=[topic])))
    assert resp.topics[0].error_code == 0
    return resp.topics[0].topic_id, _reg(c)


def _reg(c: QuorumController) -> PartitionRegistration:
    return c.image.topic("t").partitions[0]  # type: ignore[union-attr]


async def test_a_shrink_below_min_isr_keeps_the_replicas_that_leave_eligible(controller: QuorumController) -> None:
    c = controller
    epochs = await three_brokers(c)
    tid, reg = await _topic(c)
    assert c.image.features["eligible.leader.replicas.version"] == 1
    r = await c.alter_partition(alter(1, epochs[1], tid, reg.leader_epoch, reg.partition_epoch, [1, 2]), 3)
    assert r.topics[0].partitions[0].error_code == 0
    assert (_reg(c).isr, _reg(c).elr) == ((1, 2), ())  # at min ISR: nobody is kept
    reg = _reg(c)
    r = await c.alter_partition(alter(1, epochs[1], tid, reg.leader_epoch, reg.partition_epoch, [1]), 3)
    assert r.topics[0].partitions[0].error_code == 0
    assert (_reg(c).isr, _reg(c).elr, _reg(c).last_known_elr) == ((1,), (2,), ())
    reg = _reg(c)
    r = await c.alter_partition(alter(1, epochs[1], tid, reg.leader_epoch, reg.partition_epoch, [1, 3]), 3)
    assert r.topics[0].partitions[0].error_code == 0
    assert (_reg(c).isr, _reg(c).elr) == ((1, 3), ())  # back at min ISR: the ELR is cleared
    assert replayed(c).topic("t").partitions[0] == _reg(c)  # type: ignore[union-attr]


async def test_unclean_shutdowns_empty_the_elr_and_the_last_known_leader_leads(controller: QuorumController) -> None:
    c = controller
    epochs = await three_brokers(c)
    tid, reg = await _topic(c)
    for b in (3, 2):  # followers fenced one by one: 2 stays eligible, 3 left at min ISR
        await heartbeat(c, b, epochs[b], want_fence=True)
    assert (_reg(c).leader, _reg(c).isr, _reg(c).elr) == (1, (1,), (2,))
    await heartbeat(c, 1, epochs[1], want_fence=True)  # the leader too: ISR empty, 1 remembered
    assert (_reg(c).leader, _reg(c).isr, _reg(c).elr, _reg(c).last_known_elr) == (-1, (), (1, 2), (1,))
    # 2 registers again without its previous epoch (killed -9): out of the ELR; no leader
    e2 = await register(c, 2)
    assert not (await heartbeat(c, 2, e2)).is_fenced
    assert (_reg(c).leader, _reg(c).isr, _reg(c).elr, _reg(c).last_known_elr) == (-1, (), (1,), (1,))
    # 1 likewise: ISR and ELR empty, the last known leader is elected (unclean: RECOVERING)
    await register(c, 1)
    reg = _reg(c)
    assert (reg.leader, reg.isr, reg.elr, reg.last_known_elr) == (1, (1,), (), ())
    assert reg.leader_recovery_state == LeaderRecoveryState.RECOVERING


async def test_min_insync_replicas_changes_clear_the_elr_and_stay_at_cluster_or_topic_level(
        controller: QuorumController) -> None:
    """Kafka 4.4's ConfigurationControlManager with ELR on: a change of a topic's
    min.insync.replicas clears that topic's ELR, a cluster-level one every topic's (even to the same
    value); a broker-level value and removing the cluster-level one are refused (INVALID_CONFIG)."""
    c = controller
    epochs = await three_brokers(c)
    tid, reg = await _topic(c)
    for b in (3, 2):
        await heartbeat(c, b, epochs[b], want_fence=True)
    assert (_reg(c).isr, _reg(c).elr) == ((1,), (2,))
    req = iac.REQUEST

    async def alter_config(resource_type: int, name: str, op: int, value: str | None) -> tuple[int, str | None]:
        resp = await c.incremental_alter_configs(wire(req, 1, req(validate_only=False, resources=[
            req.AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=[
                req.AlterableConfig(name="min.insync.replicas", config_operation=op, value=value)])])))
        return resp.responses[0].error_code, resp.responses[0].error_message

    assert await alter_config(4, "1", 0, "2") == (
        40, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    assert await alter_config(4, "", 1, None) == (
        40, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    assert _reg(c).elr == (2,)  # refused: nothing changed
    assert await alter_config(2, "t", 0, "2") == (0, None)  # the same value: cleared all the same
    assert (_reg(c).isr, _reg(c).elr, _reg(c).last_known_elr) == ((1,), (), ())
    await heartbeat(c, 1, epochs[1], want_fence=True)  # the leader fenced: ISR empty, ELR {1}
    assert (_reg(c).isr, _reg(c).elr) == ((), (1,))
    assert await alter_config(4, "", 0, "2") == (0, None)  # the cluster level: every topic's
    assert (_reg(c).elr, _reg(c).last_known_elr) == ((), ())
    assert replayed(c).topic("t").partitions[0] == _reg(c)  # type: ignore[union-attr]


async def _elr_level(c: QuorumController, level: int) -> int:
    req = update_features.REQUEST
    resp = await c.update_features(wire(req, 1, req(feature_updates=[req.FeatureUpdateKey(
        feature="eligible.leader.replicas.version", max_version_level=level, upgrade_type=2 if level == 0 else 1)])), 1)
    return resp.error_code or resp.results[0].error_code


async def test_elr_switched_off_clears_every_elr(controller: QuorumController) -> None:
    """`kafka-features downgrade --feature eligible.leader.replicas.version=0` writes a
    ClearElrRecord for every topic."""
    c = controller
    epochs = await three_brokers(c)
    await _topic(c)
    for b in (3, 2):
        await heartbeat(c, b, epochs[b], want_fence=True)
    assert _reg(c).elr == (2,)
    assert await _elr_level(c, 0) == 0
    assert c.image.features.get("eligible.leader.replicas.version", 0) == 0 and _reg(c).elr == ()
    assert replayed(c).topic("t").partitions[0] == _reg(c)  # type: ignore[union-attr]


async def test_elr_switched_on_keeps_min_isr_at_the_cluster_level(controller: QuorumController) -> None:
    """Switched on (no broker registered yet, so no broker's supported levels stand in the way):
    the cluster-level min.insync.replicas is recorded if it is missing and broker-level ones are
    removed (Kafka: maybeGenerateElrSafetyRecords)."""
    c = controller
    assert await _elr_level(c, 0) == 0
    ok = await c.incremental_alter_configs(iac.REQUEST(validate_only=False, resources=[
        iac.REQUEST.AlterConfigsResource(resource_type=4, resource_name=name, configs=[
            iac.REQUEST.AlterableConfig(name="min.insync.replicas", config_operation=op, value=value)])
        for name, op, value in (("1", 0, "2"), ("", 1, None))]))
    assert [r.error_code for r in ok.responses] == [0, 0]  # ELR off: both allowed
    assert "min.insync.replicas" not in c.image.configs.get((4, ""), {})
    assert c.image.configs[(4, "1")]["min.insync.replicas"] == "2"
    assert await _elr_level(c, 1) == 0
    assert c.image.configs[(4, "")]["min.insync.replicas"] == "1"
    assert "min.insync.replicas" not in c.image.configs.get((4, "1"), {})
    assert replayed(c).configs == c.image.configs


async def test_an_unclean_election_follows_elrs_order_and_clears_it(controller: QuorumController) -> None:
    """ElectLeaders UNCLEAN (kafka-leader-election --election-type unclean) with ELR on: nobody of
    the ISR or the ELR is live, so a live replica outside them leads (unclean: RECOVERING) and the
    ELR and LastKnownElr are cleared (Kafka: PartitionChangeBuilder.electAnyLeader)."""
    c = controller
    epochs = await three_brokers(c)
    await _topic(c)
    for b in (3, 2, 1):
        await heartbeat(c, b, epochs[b], want_fence=True)
    assert (_reg(c).leader, _reg(c).isr, _reg(c).elr, _reg(c).last_known_elr) == (-1, (), (1, 2), (1,))
    e3 = await register(c, 3)  # 3 was out of the ISR before all this: live, not eligible
    assert not (await heartbeat(c, 3, e3)).is_fenced
    assert _reg(c).leader == -1
    req = elect_leaders.REQUEST
    resp = await c.elect_leaders(wire(req, 2, req(election_type=1, topic_partitions=[
        req.TopicPartitions(topic="t", partitions=[0])])), 2)
    assert resp.replica_election_results[0].partition_result[0].error_code == 0
    reg = _reg(c)
    assert (reg.leader, reg.isr, reg.elr, reg.last_known_elr) == (3, (3,), (), ())
    assert reg.leader_recovery_state == LeaderRecoveryState.RECOVERING
    assert replayed(c).topic("t").partitions[0] == reg  # type: ignore[union-attr]
