"""The controller's periodic elections (minibroker/controller/leader_balance.py) on a QuorumController
with a controlled clock: preferred-leader rebalancing every leader.imbalance.check.interval.seconds
(auto.leader.rebalance.enable), unclean elections every unclean.leader.election.interval.ms for
topics that allow them. The same scenarios against Kafka's cluster: tests/reference/test_kafka_cluster_reference.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from minibroker.controller.leader_balance import balance_partition_leaders
from minibroker.controller.quorum_controller import QuorumController
from minibroker.controller.replication_control import TopicDefaults
from minibroker_protocol.apis import incremental_alter_configs
from tests.broker.controller_helpers import Clock, alter, config, create, heartbeat, three_brokers, wire

INTERVAL_MS = 60_000


async def until(what: Callable[[], bool], timeout: float = 10.0) -> None:
    """The controller's periodic task runs on real time (its tick), its decisions on the fake clock."""
    async with asyncio.timeout(timeout):
        while not what():
            await asyncio.sleep(0.02)


async def started(tmp_path: Path, clock: Clock, interval_ms: int | None) -> QuorumController:
    c = QuorumController(tmp_path, config(topic_defaults=TopicDefaults(num_partitions=1, replication_factor=3),
                                          leader_imbalance_check_interval_ms=interval_ms,
                                          unclean_leader_election_interval_ms=INTERVAL_MS,
                                          session_timeout_ms=100 * INTERVAL_MS),  # no fencing as the clock moves
                         clock=clock)
    await c.start()
    return c


@pytest.fixture
async def balanced(tmp_path: Path) -> AsyncIterator[tuple[QuorumController, Clock]]:
    clock = Clock()
    c = await started(tmp_path, clock, INTERVAL_MS)
    yield c, clock
    await c.shutdown()


async def _preferred_back_in_the_isr(c: QuorumController) -> tuple[int, int]:
    """A topic whose preferred replica was fenced and is back in the ISR: (preferred, leader now)."""
    epochs = await three_brokers(c)
    await create(c, "t", 1, 3)
    topic = c.image.topic("t")
    assert topic is not None
    preferred = topic.partitions[0].replicas[0]
    await heartbeat(c, preferred, epochs[preferred], want_fence=True)
    await heartbeat(c, preferred, epochs[preferred])
    reg = c.image.topics[topic.id].partitions[0]
    assert reg.leader != preferred and preferred not in reg.isr
    r = await c.alter_partition(alter(reg.leader, epochs[reg.leader], topic.id, reg.leader_epoch,
                                      reg.partition_epoch, [*reg.isr, preferred]), 3)
    assert r.topics[0].partitions[0].error_code == 0
    return preferred, reg.leader


def leader(c: QuorumController) -> int:
    topic = c.image.topic("t")
    assert topic is not None
    return topic.partitions[0].leader


async def test_the_preferred_replica_leads_again_after_the_interval(balanced: tuple[QuorumController, Clock]) -> None:
    c, clock = balanced
    preferred, other = await _preferred_back_in_the_isr(c)
    await asyncio.sleep(1.2)  # two ticks (0.5 s): the interval has not passed on the controller's clock
    assert leader(c) == other
    epoch = c.image.topic("t").partitions[0].leader_epoch  # type: ignore[union-attr]
    clock.now += INTERVAL_MS
    await until(lambda: leader(c) == preferred)
    assert c.image.topic("t").partitions[0].leader_epoch == epoch + 1  # type: ignore[union-attr]


async def test_no_rebalancing_when_disabled(tmp_path: Path) -> None:
    clock = Clock()
    c = await started(tmp_path, clock, None)  # auto.leader.rebalance.enable=false
    try:
        _, other = await _preferred_back_in_the_isr(c)
        clock.now += 10 * INTERVAL_MS
        await asyncio.sleep(1.2)
        assert leader(c) == other
    finally:
        await c.shutdown()


def test_a_pass_is_bounded_and_skips_what_cannot_lead(tmp_path: Path) -> None:
    async def run() -> None:
        clock = Clock()
        c = await started(tmp_path, clock, None)
        try:
            await _preferred_back_in_the_isr(c)
            records, more = balance_partition_leaders(c.image, lambda b: True, limit=0)
            assert (records, more) == ([], True)
            records, more = balance_partition_leaders(c.image, lambda b: False)  # the preferred one fenced
            assert (records, more) == ([], False)
            records, more = balance_partition_leaders(c.image, lambda b: True)
            assert len(records) == 1 and not more
        finally:
            await c.shutdown()
    asyncio.run(run())


async def test_unclean_election_waits_for_the_periodic_pass(balanced: tuple[QuorumController, Clock]) -> None:
    c, clock = balanced
    epochs = await three_brokers(c)
    await create(c, "t", 1, 3)
    topic = c.image.topic("t")
    assert topic is not None
    reg = topic.partitions[0]
    r = await c.alter_partition(alter(reg.leader, epochs[reg.leader], topic.id, reg.leader_epoch,
                                      reg.partition_epoch, [reg.leader]), 3)
    assert r.topics[0].partitions[0].error_code == 0
    await heartbeat(c, reg.leader, epochs[reg.leader], want_fence=True)
    assert leader(c) == -1  # the ISR's last member fenced: no leader
    req = incremental_alter_configs.REQUEST
    resp = await c.incremental_alter_configs(wire(req, 1, req(validate_only=False, resources=[
        req.AlterConfigsResource(resource_type=2, resource_name="t", configs=[req.AlterableConfig(
            name="unclean.leader.election.enable", config_operation=0, value="true")])])))
    assert resp.responses[0].error_code == 0
    await asyncio.sleep(1.2)
    assert leader(c) == -1  # as Kafka 4.4: the config change itself elects nothing
    clock.now += INTERVAL_MS
    await until(lambda: leader(c) not in (-1, reg.leader))
    assert c.image.topic("t").partitions[0].isr == (leader(c),)  # type: ignore[union-attr]
