"""The single-voter controller (minibroker/controller): registration, heartbeats, fencing, controlled
shutdown, topic creation with placement and election, AlterPartition's checks, producer id blocks,
restart from the log and from a snapshot. Requests and answers go through the wire codec at the
versions Kafka 4.4 brokers send, so what is tested is what a broker would exchange."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker.controller.quorum_controller import QuorumController
from minibroker.controller.replication_control import TopicDefaults
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker.metadata.partition_registration import LeaderRecoveryState
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.apis import (
    allocate_producer_ids,
    alter_partition,
    broker_registration,
    create_partitions,
    create_topics,
    delete_topics,
    elect_leaders,
    incremental_alter_configs,
    unregister_broker,
    update_features,
)
from minibroker_protocol.errors import ErrorCode
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, read_metadata_batches
from tests.broker.controller_helpers import (
    CLUSTER,
    Clock,
    alter,
    config,
    create,
    heartbeat,
    register,
    replayed,
    three_brokers,
    wire,
)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def controller(tmp_path: Path, clock: Clock) -> AsyncIterator[QuorumController]:
    c = QuorumController(tmp_path, config(topic_defaults=TopicDefaults(num_partitions=3, replication_factor=3)),
                         clock=clock)
    await c.start()
    yield c
    await c.shutdown()












async def test_a_new_log_starts_with_a_leader_change_and_the_bootstrap_features(controller: QuorumController) -> None:
    assert controller.log.epoch == 1
    assert controller.image.features["metadata.version"] == 33
    assert controller.image.features["transaction.version"] == 2
    batches = list(read_metadata_batches(controller.read(0, 1 << 20).region.read_all()))  # type: ignore[union-attr]
    assert batches[0].is_control and not batches[1].is_control


async def test_registration_gives_the_record_offset_as_epoch_and_unfences_a_caught_up_broker(
        controller: QuorumController) -> None:
    end = controller.log.end_offset
    epoch = await register(controller, 1)
    assert epoch == end and controller.image.brokers[1].fenced
    lagging = await heartbeat(controller, 1, epoch, offset=epoch - 1)
    assert lagging.is_fenced and not lagging.is_caught_up
    assert (await heartbeat(controller, 1, epoch, want_fence=True)).is_fenced
    ok = await heartbeat(controller, 1, epoch)
    assert not ok.is_fenced and ok.is_caught_up and not controller.image.brokers[1].fenced
    assert (await heartbeat(controller, 1, epoch - 1)).error_code == ErrorCode.STALE_BROKER_EPOCH
    assert (await heartbeat(controller, 9, 0)).error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    bad = broker_registration.REQUEST(broker_id=2, cluster_id="other", incarnation_id=uuid.uuid4(), listeners=[],
                                      features=[], rack=None)
    assert (await controller.register_broker(bad)).error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    # another process claiming the id of a live broker is refused until the session expires
    dup = broker_registration.REQUEST(broker_id=1, cluster_id=CLUSTER, incarnation_id=uuid.uuid4(), listeners=[],
                                      features=[], rack=None)
    assert (await controller.register_broker(dup)).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION


async def test_topics_are_striped_with_the_preferred_replica_leading(controller: QuorumController) -> None:
    await three_brokers(controller)
    resp = await create(controller, "orders", 6, 3, {"min.insync.replicas": "2"})
    (result,) = resp.topics
    assert result.error_code == 0 and result.num_partitions == 6 and result.replication_factor == 3
    topic = controller.image.topic("orders")
    assert topic is not None and topic.id == result.topic_id
    leaders = [p.leader for _, p in sorted(topic.partitions.items())]
    for p in topic.partitions.values():
        assert sorted(p.replicas) == [1, 2, 3] and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]  # leadership spread evenly
    assert controller.image.configs[(2, "orders")] == {"min.insync.replicas": "2"}
    again = (await create(controller, "orders")).topics[0]
    assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    too_many = (await create(controller, "big", 1, 4)).topics[0]
    assert too_many.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert too_many.error_message == ("Unable to replicate the partition 4 time(s): The target replication factor of "
                                      "4 cannot be reached because only 3 broker(s) are registered.")
    assert (await create(controller, "bad/name")).topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    defaults = (await create(controller, "dflt")).topics[0]
    assert (defaults.num_partitions, defaults.replication_factor) == (3, 3)
    assert replayed(controller).topics == controller.image.topics




async def test_alter_partition_accepts_the_leaders_change_and_refuses_the_rest(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    tid = (await create(controller, "t", 1, 3)).topics[0].topic_id
    topic = controller.image.topic("t")
    assert topic is not None
    p0 = topic.partitions[0]
    leader, follower = p0.leader, p0.replicas[1]
    shrunk = [r for r in p0.replicas if r != follower]
    resp = await controller.alter_partition(alter(leader, epochs[leader], tid, 0, 0, shrunk), 3)
    (out,) = resp.topics[0].partitions
    assert out.error_code == 0 and out.isr == shrunk and (out.leader_id, out.leader_epoch, out.partition_epoch) == (
        leader, 0, 1)

    async def error(req: alter_partition.AlterPartitionRequest) -> int:
        r = await controller.alter_partition(req, 3)
        return r.error_code or r.topics[0].partitions[0].error_code

    assert await error(alter(leader, epochs[leader], tid, 0, 0, list(p0.replicas))) == ErrorCode.INVALID_UPDATE_VERSION
    assert await error(alter(follower, epochs[follower], tid, 0, 1, list(p0.replicas))) == \
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert await error(alter(leader, epochs[leader] - 1, tid, 0, 1, list(p0.replicas))) == ErrorCode.STALE_BROKER_EPOCH
    assert await error(alter(leader, epochs[leader], uuid.uuid4(), 0, 1, shrunk)) == ErrorCode.UNKNOWN_TOPIC_ID
    await heartbeat(controller, follower, epochs[follower], want_fence=True)  # the follower is fenced now
    assert await error(alter(leader, epochs[leader], tid, 0, 1, list(p0.replicas))) == ErrorCode.INELIGIBLE_REPLICA


async def test_an_expired_session_fences_and_moves_leadership_in_replica_order(
        controller: QuorumController, clock: Clock) -> None:
    epochs = await three_brokers(controller)
    await create(controller, "t", 1, 3)
    topic = controller.image.topic("t")
    assert topic is not None
    before = topic.partitions[0]
    old_leader = before.leader
    clock.now += 5000
    for b in epochs:
        if b != old_leader:
            await heartbeat(controller, b, epochs[b])
    clock.now += 5000  # 10 s since the leader's last heartbeat > broker.session.timeout.ms (9 s)
    assert set(await controller.fence_expired_brokers()) <= {old_leader}  # the periodic task may have been first
    after = controller.image.topics[topic.id].partitions[0]
    assert controller.image.brokers[old_leader].fenced
    assert after.leader == before.replicas[1] and old_leader not in after.isr
    assert (after.leader_epoch, after.partition_epoch) == (1, 1)
    # back: caught up, unfenced, but the ISR takes it back only through the leader's AlterPartition
    assert not (await heartbeat(controller, old_leader, epochs[old_leader])).is_fenced
    assert controller.image.topics[topic.id].partitions[0] == after


async def test_no_leader_without_an_isr_member_unless_unclean_election(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    for name, unclean in (("clean", "false"), ("unclean", "true")):
        resp = await controller.create_topics(wire(create_topics.REQUEST, 7, create_topics.REQUEST(topics=[
            create_topics.REQUEST.CreatableTopic(
                name=name, num_partitions=-1, replication_factor=-1, configs=[
                    create_topics.REQUEST.CreatableTopicConfig(name="unclean.leader.election.enable", value=unclean)],
                assignments=[create_topics.REQUEST.CreatableReplicaAssignment(partition_index=0,
                                                                               broker_ids=[1, 2])])])))
        assert resp.topics[0].error_code == 0
        tid = resp.topics[0].topic_id
        r = await controller.alter_partition(alter(1, epochs[1], tid, 0, 0, [1]), 3)
        assert r.topics[0].partitions[0].isr == [1]
    await heartbeat(controller, 1, epochs[1], want_fence=True)
    clean = controller.image.topic("clean").partitions[0]  # type: ignore[union-attr]
    # ELR on (KIP-966, Kafka 4.4's default): the last ISR member leaves the ISR for the ELR and
    # is remembered as the last known leader (min.insync.replicas is 1 here)
    assert (clean.leader, clean.isr, clean.elr, clean.last_known_elr) == (-1, (), (1,), (1,))
    unclean = controller.image.topic("unclean").partitions[0]  # type: ignore[union-attr]
    assert (unclean.leader, unclean.isr, unclean.leader_recovery_state) == (2, (2,), LeaderRecoveryState.RECOVERING)
    # broker 1 back: it leads "clean" again, elected from the ELR, and is the ISR alone
    assert not (await heartbeat(controller, 1, epochs[1])).is_fenced
    clean = controller.image.topic("clean").partitions[0]  # type: ignore[union-attr]
    assert (clean.leader, clean.isr, clean.elr, clean.last_known_elr) == (1, (1,), (), ())


async def test_controlled_shutdown_moves_leadership_then_lets_the_broker_go(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    await create(controller, "t", 3, 2)
    led = controller.replication.leaderships(controller.image, 1)
    assert led > 0
    first = await heartbeat(controller, 1, epochs[1], offset=0, want_shut_down=True)
    assert not first.should_shut_down and controller.image.brokers[1].in_controlled_shutdown
    assert controller.replication.leaderships(controller.image, 1) == 0
    assert all(1 not in p.isr or p.isr == (1,) for t in controller.image.topics.values() for p in t.partitions.values())
    not_seen = await heartbeat(controller, 1, epochs[1], offset=0, want_shut_down=True)
    assert not not_seen.should_shut_down  # it has not replayed its own shutdown yet
    done = await heartbeat(controller, 1, epochs[1], want_shut_down=True)
    assert done.should_shut_down and controller.image.brokers[1].fenced


async def test_unregistering_removes_the_broker(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create(controller, "t", 3, 3)
    resp = await controller.unregister_broker(unregister_broker.REQUEST(broker_id=2))
    assert resp.error_code == 0 and 2 not in controller.image.brokers
    assert all(2 not in p.isr and p.leader != 2 for p in controller.image.topic("t").partitions.values())  # type: ignore[union-attr]
    again = await controller.unregister_broker(unregister_broker.REQUEST(broker_id=2))
    assert again.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED


async def test_producer_id_blocks_never_repeat_across_a_restart(tmp_path: Path, clock: Clock) -> None:
    c = QuorumController(tmp_path, config(), clock=clock)
    await c.start()
    epoch = await register(c, 1)
    req = allocate_producer_ids.REQUEST(broker_id=1, broker_epoch=epoch)
    blocks = [(r.producer_id_start, r.producer_id_len) for r in [await c.allocate_producer_ids(req) for _ in range(2)]]
    assert blocks == [(0, 1000), (1000, 1000)]
    stale = await c.allocate_producer_ids(allocate_producer_ids.REQUEST(broker_id=1, broker_epoch=epoch - 1))
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    image = c.image
    await c.shutdown()
    again = QuorumController(tmp_path, config(), clock=clock)
    await again.start()
    try:
        assert again.log.epoch == 2
        assert (again.image.brokers, again.image.features) == (image.brokers, image.features)
        assert (await again.allocate_producer_ids(req)).producer_id_start == 2000
    finally:
        await again.shutdown()


async def test_a_restart_loads_the_snapshot_and_the_log_after_it(tmp_path: Path, clock: Clock) -> None:
    c = QuorumController(tmp_path, config(snapshot_max_bytes=1), clock=clock)
    await c.start()
    await three_brokers(c)
    await create(c, "t", 4, 2)
    async with c._lock:
        await c._maybe_snapshot()
    snap = c.log.latest_snapshot()
    assert snap is not None and snap.id.end_offset == c.image.offset + 1
    await create(c, "after", 1, 1)  # in the log only
    image = c.image
    await c.shutdown()
    again = QuorumController(tmp_path, config(), clock=clock)
    await again.start()
    try:
        assert again.image.topics == image.topics and again.image.brokers == image.brokers
        assert again.image.next_producer_id == image.next_producer_id
        # an observer starting now still reads the whole log from 0 (no segment went with the snapshot)
        assert replayed(again).topics == image.topics
    finally:
        await again.shutdown()


async def test_an_observer_replaying_the_log_sees_what_the_controller_sees(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create(controller, "t", 3, 2)
    seen = replayed(controller)
    assert (seen.topics, seen.brokers, seen.features) == (
        controller.image.topics, controller.image.brokers, controller.image.features)
    delta = MetadataDelta(MetadataImage())
    for b in read_metadata_batches(controller.read(0, 1 << 24).region.read_all()):  # type: ignore[union-attr]
        for r in b.records:
            if isinstance(r, ApiMessageAndVersion) and isinstance(r.message, mr.TopicRecord | mr.PartitionRecord):
                delta.replay(r)
    local = delta.local_changes(1)
    topic = controller.image.topic("t")
    assert topic is not None
    assert set(local.leaders) == {("t", p) for p, reg in topic.partitions.items() if reg.leader == 1}
    assert set(local.followers) == {("t", p) for p, reg in topic.partitions.items()
                                    if 1 in reg.replicas and reg.leader != 1}


async def test_delete_topics_by_name_and_by_id(controller: QuorumController) -> None:
    await three_brokers(controller)
    tid = (await create(controller, "gone", 2, 3, {"retention.ms": "5"})).topics[0].topic_id
    await create(controller, "also", 1, 1)
    req = delete_topics.REQUEST
    resp = await controller.delete_topics(wire(req, 6, req(topics=[
        req.DeleteTopicState(name=None, topic_id=tid), req.DeleteTopicState(name=None, topic_id=uuid.uuid4())],
        timeout_ms=1000)), 6)
    assert [(r.name, r.error_code) for r in resp.responses] == [("gone", 0), (None, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert controller.image.topic("gone") is None and (2, "gone") not in controller.image.configs
    old = await controller.delete_topics(wire(req, 5, req(topic_names=["also", "nope"], timeout_ms=1000)), 5)
    assert [(r.name, r.error_code) for r in old.responses] == [("also", 0), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert replayed(controller).topics == {}


async def test_create_partitions_continues_the_stripe(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create(controller, "t", 2, 2)
    req = create_partitions.REQUEST
    resp = await controller.create_partitions(wire(req, 3, req(topics=[
        req.CreatePartitionsTopic(name="t", count=5, assignments=None),
        req.CreatePartitionsTopic(name="t2", count=5, assignments=None)], timeout_ms=1000, validate_only=False)))
    assert [(r.name, r.error_code) for r in resp.results] == [("t", 0), ("t2", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    topic = controller.image.topic("t")
    assert topic is not None and sorted(topic.partitions) == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 2 and p.leader == p.replicas[0] for p in topic.partitions.values())
    fewer = await controller.create_partitions(req(topics=[req.CreatePartitionsTopic(name="t", count=3,
                                                                                     assignments=None)]))
    assert fewer.results[0].error_code == ErrorCode.INVALID_PARTITIONS
    assert fewer.results[0].error_message == "Topic currently has 5 partitions, which is higher than the requested 3."
    manual = await controller.create_partitions(req(topics=[req.CreatePartitionsTopic(
        name="t", count=6, assignments=[req.CreatePartitionsAssignment(broker_ids=[3, 1])])]))
    assert manual.results[0].error_code == 0 and controller.image.topic("t").partitions[5].replicas == (3, 1)  # type: ignore[union-attr]


async def test_preferred_leader_election_moves_leadership_back(controller: QuorumController) -> None:
    epochs = await three_brokers(controller)
    await create(controller, "t", 1, 3)
    topic = controller.image.topic("t")
    assert topic is not None
    preferred = topic.partitions[0].replicas[0]
    req = elect_leaders.REQUEST
    ask = wire(req, 2, req(election_type=0, topic_partitions=[req.TopicPartitions(topic="t", partitions=[0, 9])]))
    first = await controller.elect_leaders(ask, 2)
    codes = [(r.partition_id, r.error_code) for r in first.replica_election_results[0].partition_result]
    assert codes == [(0, ErrorCode.ELECTION_NOT_NEEDED), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    await heartbeat(controller, preferred, epochs[preferred], want_fence=True)  # leadership moves away
    assert controller.image.topics[topic.id].partitions[0].leader != preferred
    unavailable = await controller.elect_leaders(ask, 2)
    assert unavailable.replica_election_results[0].partition_result[0].error_code == \
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    await heartbeat(controller, preferred, epochs[preferred])  # back, but out of the ISR until the leader adds it
    reg = controller.image.topics[topic.id].partitions[0]
    isr = [r for r in reg.replicas if r in reg.isr or r == preferred]
    r = await controller.alter_partition(alter(reg.leader, epochs[reg.leader], topic.id, reg.leader_epoch,
                                               reg.partition_epoch, isr), 3)
    assert r.topics[0].partitions[0].error_code == 0
    done = await controller.elect_leaders(wire(req, 2, req(election_type=0, topic_partitions=None)), 2)
    assert done.replica_election_results[0].partition_result[0].error_code == 0
    after = controller.image.topics[topic.id].partitions[0]
    assert after.leader == preferred and after.leader_epoch == reg.leader_epoch + 1


async def test_incremental_alter_configs_writes_config_records(controller: QuorumController) -> None:
    await three_brokers(controller)
    await create(controller, "t", 1, 1, {"cleanup.policy": "delete"})
    req = incremental_alter_configs.REQUEST
    op = req.AlterableConfig

    def topic(*configs: incremental_alter_configs.IncrementalAlterConfigsRequest.AlterableConfig,
              name: str = "t") -> incremental_alter_configs.IncrementalAlterConfigsRequest.AlterConfigsResource:
        return req.AlterConfigsResource(resource_type=2, resource_name=name, configs=list(configs))

    resp = await controller.incremental_alter_configs(wire(req, 1, req(validate_only=False, resources=[
        topic(op(name="retention.ms", config_operation=0, value="1000"),
              op(name="cleanup.policy", config_operation=2, value="compact")),
        topic(op(name="no.such.key", config_operation=0, value="1")),
        topic(op(name="retention.ms", config_operation=0, value="1"), name="missing"),
        req.AlterConfigsResource(resource_type=4, resource_name="", configs=[
            op(name="log.retention.ms", config_operation=0, value="5000")])])))
    assert [(r.resource_name, r.error_code) for r in resp.responses] == [
        ("t", 0), ("t", ErrorCode.INVALID_CONFIG), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("", 0)]
    assert controller.image.configs[(2, "t")] == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
    # min.insync.replicas: recorded at the cluster level when the log began (ELR on, as Kafka 4.4)
    assert controller.image.configs[(4, "")] == {"log.retention.ms": "5000", "min.insync.replicas": "1"}
    assert not controller.replication.unclean(controller.image, "t")
    await controller.incremental_alter_configs(req(validate_only=False, resources=[req.AlterConfigsResource(
        resource_type=4, resource_name="", configs=[op(name="unclean.leader.election.enable", config_operation=0,
                                                      value="true")])]))
    assert controller.replication.unclean(controller.image, "t")  # the cluster default applies to every topic
    await controller.incremental_alter_configs(req(validate_only=False, resources=[
        topic(op(name="retention.ms", config_operation=1, value=None),
              op(name="cleanup.policy", config_operation=3, value="delete"))]))
    assert controller.image.configs[(2, "t")] == {"cleanup.policy": "compact"}
    assert replayed(controller).configs == controller.image.configs


async def test_update_features_changes_levels_with_kafkas_rules(controller: QuorumController) -> None:
    req = update_features.REQUEST
    key = req.FeatureUpdateKey

    async def update(*keys: update_features.UpdateFeaturesRequest.FeatureUpdateKey,
                     version: int = 2) -> update_features.UpdateFeaturesResponse:
        return await controller.update_features(wire(req, version, req(feature_updates=list(keys))), version)

    refused = await update(key(feature="transaction.version", max_version_level=1, upgrade_type=1))
    assert refused.error_code == ErrorCode.INVALID_UPDATE_VERSION and controller.image.features["transaction.version"] == 2
    assert (await update(key(feature="transaction.version", max_version_level=1, upgrade_type=2))).error_code == 0
    assert controller.image.features["transaction.version"] == 1
    too_high = await update(key(feature="group.version", max_version_level=9, upgrade_type=1), version=1)
    assert too_high.error_code == 0 and too_high.results[0].error_code == ErrorCode.INVALID_UPDATE_VERSION
    mv = await update(key(feature="metadata.version", max_version_level=20, upgrade_type=2))
    assert mv.error_code == ErrorCode.INVALID_UPDATE_VERSION and controller.image.features["metadata.version"] == 33
    assert replayed(controller).features == controller.image.features
