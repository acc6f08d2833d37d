"""The cluster's component fault kinds (issue 32 with issue 29), registered with `register_kind`
by the KRaft broker (minibroker.kafka_raft_server imports this module), so a broker of a
`minibroker cluster` takes them in its registry: from a test in the same process, and over HTTP
(`POST /api/faults` on the console of the broker started with `--console-port`,
`--console-allow-faults`).

- `broker.stop` (`node`): SIGTERM to that broker (a controlled shutdown: its leadership moves
  first). Removing the fault starts it again (as removing `broker.pause` resumes).
- `broker.kill` (`node`): SIGKILL (kill -9): the controller fences it after
  broker.session.timeout.ms and elects new leaders from the ISR. Removing the fault starts it again.
- `broker.start` (`node`): start a stopped broker again alone on its data dir (the launcher's
  command, minibroker.cluster_launcher).
- `leader.move` (`topic`, `partition` (default 0), `node` = the new leader): as Kafka's tools
  move it, AlterPartitionReassignments with the same replicas, `node` first, then ElectLeaders
  PREFERRED (kfake's MoveTopicPartition, librdkafka's partition_set_leader).
- `leader.shuffle` (`topic` optional, `seed` optional): each partition's leadership to another
  in-sync replica at random (kfake's ShufflePartitionLeaders).
- `coordinator.move` (`group_id` or `transactional_id`, `node`): the leadership of the key's
  coordinator partition moves to `node` (kfake's RehashCoordinators, librdkafka's coordinator_set).

Theory of operation. The kinds act on the cluster from outside the brokers it names, with the
functions the test fixtures use (minibroker.cluster_control): the processes through the cluster
directory this broker belongs to (its log dir is D/broker-i/data, so D is two levels up), the
partitions over Kafka's protocol to the cluster's brokers. A fault's `node` names the broker to
act on, not the broker whose registry holds the fault (`ClusterKind.any_node`). Each action runs
as a task on the broker's loop (the registry's `apply` is synchronous) and the fault fires when
it is done; a failure is logged and recorded in the registry's history with its reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from minibroker import cluster_control as cc
from minibroker.cluster_launcher import NODE_PROPERTIES
from minibroker.config import BrokerConfig
from minibroker.coordinator.runtime.coordinator_store import partition_for
from minibroker.faults.components import FaultTarget, register_kind
from minibroker.faults.model import Fault, FaultError

log = logging.getLogger("minibroker.faults")


class ClusterTarget(FaultTarget, Protocol):
    config: BrokerConfig


def cluster_dir(target: FaultTarget) -> Path:
    """D, the `minibroker cluster` directory of this broker (its log dir is D/broker-i/data)."""
    config = getattr(target, "config", None)
    if isinstance(config, BrokerConfig):
        node_dir = Path(config.data_dir).absolute().parent
        if (node_dir / NODE_PROPERTIES).exists():
            return node_dir.parent
    raise FaultError("the cluster fault kinds need a broker started by `python -m minibroker cluster`")


_tasks: set[asyncio.Task[None]] = set()  # held until done (the loop keeps only weak references)


class ClusterKind:
    """A one-shot action on the cluster; `revert` undoes what can be undone."""

    any_node = True  # `node` names the broker acted on, not the registry's broker

    def __init__(self, name: str, needs: tuple[str, ...]):
        self.name, self.needs = name, needs

    def apply(self, target: FaultTarget, fault: Fault, on_fire: Callable[[Fault, str], None]) -> None:
        for attr in self.needs:
            if getattr(fault, attr) is None:
                raise FaultError(f"{self.name} needs {attr}")
        processes = cc.NodeProcesses(cluster_dir(target))
        if fault.node is not None:
            node = processes.nodes.get(fault.node)
            if node is None or node.role != "broker":
                raise FaultError(f"no broker with node id {fault.node} in this cluster "
                                 f"(brokers: {sorted(n.node_id for n in processes.brokers)})")
        task = asyncio.get_running_loop().create_task(self._run(processes, fault, on_fire), name=f"fault-{fault.id}")
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)

    async def _run(self, processes: cc.NodeProcesses, fault: Fault, on_fire: Callable[[Fault, str], None]) -> None:
        fault.matched += 1
        try:
            what = await self.act(processes, fault)
        except Exception as e:  # noqa: BLE001 - said in the fault's history and the log
            log.warning("fault %d (%s) failed: %s", fault.id, self.name, e)
            on_fire(fault, f"{self.name} failed: {e}")
            return
        fault.fired += 1
        on_fire(fault, what)

    async def act(self, processes: cc.NodeProcesses, fault: Fault) -> str:
        raise NotImplementedError

    def revert(self, target: FaultTarget, fault: Fault) -> None:
        """Nothing to undo (a leader move stays; a started broker runs on)."""


def _addresses(processes: cc.NodeProcesses) -> list[cc.Address]:
    live = [(n.host, n.port) for n in processes.brokers if processes.running(n.node_id)]
    return live or [(n.host, n.port) for n in processes.brokers]


async def _in_thread(fn: Callable[[], object]) -> None:
    await asyncio.to_thread(fn)


class _Stop(ClusterKind):
    def __init__(self, name: str, kill: bool):
        super().__init__(name, ("node",))
        self.kill = kill

    async def act(self, processes: cc.NodeProcesses, fault: Fault) -> str:
        assert fault.node is not None
        await _in_thread(lambda: processes.stop(fault.node or 0, kill=self.kill))
        return f"node {fault.node} {'killed (SIGKILL)' if self.kill else 'stopped (SIGTERM)'}"

    def revert(self, target: FaultTarget, fault: Fault) -> None:
        processes = cc.NodeProcesses(cluster_dir(target))
        if fault.node is not None and not processes.running(fault.node):
            processes.start(fault.node)


class _Start(ClusterKind):
    async def act(self, processes: cc.NodeProcesses, fault: Fault) -> str:
        assert fault.node is not None
        if processes.running(fault.node):
            return f"node {fault.node} was running"
        processes.start(fault.node)
        return f"node {fault.node} started"


class _MoveLeader(ClusterKind):
    async def act(self, processes: cc.NodeProcesses, fault: Fault) -> str:
        assert fault.topic is not None and fault.node is not None
        partition = fault.partition or 0
        await cc.move_leader(_addresses(processes), fault.topic, partition, fault.node)
        return f"{fault.topic}-{partition} led by node {fault.node}"


class _Shuffle(ClusterKind):
    async def act(self, processes: cc.NodeProcesses, fault: Fault) -> str:
        moved = await cc.shuffle_leaders(_addresses(processes), [fault.topic] if fault.topic else None, fault.seed)
        return "leaders: " + (", ".join(f"{t}-{p} -> {n}" for (t, p), n in sorted(moved.items())) or "none moved")


class _MoveCoordinator(ClusterKind):
    """The coordinator of a group (`group_id`) or of a transactional id (`transactional_id`) moves
    to `node`: the leadership of its partition of __consumer_offsets / __transaction_state moves
    (Kafka: a coordinator is the leader of partition abs(key.hashCode()) % partitions; kfake's
    RehashCoordinators, librdkafka's coordinator_set). The old coordinator answers NOT_COORDINATOR
    from then on; the new one loads the partition first (COORDINATOR_LOAD_IN_PROGRESS)."""

    def apply(self, target: FaultTarget, fault: Fault, on_fire: Callable[[Fault, str], None]) -> None:
        if fault.group_id is None and fault.transactional_id is None:
            raise FaultError("coordinator.move needs group_id or transactional_id")
        super().apply(target, fault, on_fire)

    async def act(self, processes: cc.NodeProcesses, fault: Fault) -> str:
        assert fault.node is not None
        if fault.group_id is not None:
            topic, key = "__consumer_offsets", fault.group_id
        elif fault.transactional_id is not None:
            topic, key = "__transaction_state", fault.transactional_id
        else:
            raise FaultError("coordinator.move needs group_id or transactional_id")
        addresses = _addresses(processes)
        parts = await cc.partitions(addresses, topic)
        if not parts:
            raise FaultError(f"{topic} does not exist yet: no coordinator to move")
        partition = partition_for(key, len(parts))
        await cc.move_leader(addresses, topic, partition, fault.node)
        return f"the coordinator of {key!r} ({topic}-{partition}) on node {fault.node}"


KIND_NAMES = ("broker.stop", "broker.kill", "broker.start", "leader.move", "leader.shuffle", "coordinator.move")


def register() -> None:
    register_kind("broker.stop", _Stop("broker.stop", kill=False))
    register_kind("broker.kill", _Stop("broker.kill", kill=True))
    register_kind("broker.start", _Start("broker.start", ("node",)))
    register_kind("leader.move", _MoveLeader("leader.move", ("topic", "node")))
    register_kind("leader.shuffle", _Shuffle("leader.shuffle", ()))
    register_kind("coordinator.move", _MoveCoordinator("coordinator.move", ("node",)))


register()
