"""Control of a running cluster from outside its brokers: its nodes' processes (stop, kill -9,
start again, SIGSTOP, SIGCONT) and its partitions' leadership (moved through the controller), for
the test fixtures (minibroker.cluster_testing) and the cluster fault kinds
(minibroker.faults.cluster_kinds), which share these functions (issues 29 and 32).

Processes: `NodeProcesses` reads a `minibroker cluster` directory (minibroker.cluster_launcher):
each node's `node.properties`, its process (the one holding its data dir lock, else the pid of
cluster.json), and starts a node again with the launcher's own command.

Partitions, over Kafka's protocol only, so the same calls work on a Kafka cluster: `partitions`
(Metadata: leader, epoch, replicas, ISR), `high_watermark` (ListOffsets LATEST to the leader),
`move_leader` (Kafka's tools' two steps: AlterPartitionReassignments with the same replicas, the
new leader first, then ElectLeaders PREFERRED; the brokers forward both to the controller) and
`shuffle_leaders` (each partition's leadership to a random other in-sync replica, kfake's
ShufflePartitionLeaders).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minibroker.cluster_launcher import (
    CLUSTER_JSON,
    NODE_LOG,
    NODE_PROPERTIES,
    _alive,
    lock_holder,
    start_node_process,
)
from minibroker.metadata.controller_channel import ControllerChannel, ControllerUnavailable
from minibroker_protocol.apis import alter_partition_reassignments as apr
from minibroker_protocol.apis import elect_leaders, list_offsets, metadata
from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.schema import Api, Message

Address = tuple[str, int]
PREFERRED = 0  # ElectLeaders' election_type
LATEST = -1  # ListOffsets' timestamp for the high watermark (read_uncommitted)


class ClusterControlError(Exception):
    """A node or partition the cluster does not have, or an answer with an error."""


# -- processes ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NodeConfig:
    node_id: int
    role: str
    dir: Path
    host: str
    port: int

    @property
    def properties_path(self) -> Path:
        return self.dir / NODE_PROPERTIES

    @property
    def log_path(self) -> Path:
        return self.dir / NODE_LOG

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"


def read_node_properties(path: Path) -> dict[str, str]:
    """The `key: value` lines minibroker.cluster_launcher writes (a quoted value is JSON text)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition(": ")
        value = value.strip()
        out[key.strip()] = json.loads(value) if value.startswith('"') else value
    return out


class NodeProcesses:
    """The node processes of a `minibroker cluster` directory."""

    def __init__(self, root: Path):
        self.root = root
        self.nodes: dict[int, NodeConfig] = {}
        for path in sorted(root.glob(f"*/{NODE_PROPERTIES}")):
            props = read_node_properties(path)
            host, _, port = props["listeners"].split(",")[0].rpartition("//")[2].rpartition(":")
            node = NodeConfig(int(props["node.id"]), props["process.roles"], path.parent, host, int(port))
            self.nodes[node.node_id] = node
        if not self.nodes:
            raise ClusterControlError(f"{root} holds no node of a `minibroker cluster` (no */{NODE_PROPERTIES})")
        self.children: dict[int, subprocess.Popen[bytes]] = {}

    def node(self, node_id: int) -> NodeConfig:
        node = self.nodes.get(node_id)
        if node is None:
            raise ClusterControlError(f"no node {node_id} in {self.root} (nodes: {sorted(self.nodes)})")
        return node

    @property
    def brokers(self) -> list[NodeConfig]:
        return [n for n in self.nodes.values() if n.role == "broker"]

    def pid(self, node_id: int) -> int | None:
        """The node's live process: a child started here, the holder of its data dir lock, or
        the pid cluster.json gave it."""
        child = self.children.get(node_id)
        if child is not None and child.poll() is None:
            return child.pid
        node = self.node(node_id)
        holder = lock_holder(node.data_dir / ".lock")
        if holder is not None and holder != os.getpid() and _alive(holder):
            return holder
        with contextlib.suppress(OSError, ValueError, KeyError):
            doc = json.loads((self.root / CLUSTER_JSON).read_text())
            entries = [*doc["brokers"], doc["controller"]]
            pid = next((e["pid"] for e in entries if e["node_id"] == node_id), None)
            if pid is not None and _alive(pid) and _is_node(pid, node):
                return int(pid)
        return None

    def running(self, node_id: int) -> bool:
        return self.pid(node_id) is not None

    def stop(self, node_id: int, *, kill: bool = False, timeout: float = 60.0) -> None:
        """SIGTERM (a controlled shutdown) or SIGKILL, and wait until the process is gone."""
        pid = self.pid(node_id)
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            if not kill:
                os.kill(pid, signal.SIGCONT)  # a paused broker cannot shut down
            os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + timeout
        child = self.children.get(node_id)
        while time.monotonic() < deadline:
            if child is not None and child.pid == pid:
                if child.poll() is not None:
                    return
            elif not _alive(pid):
                return
            time.sleep(0.02)
        raise ClusterControlError(f"node {node_id} (pid {pid}) did not stop within {timeout:.0f} s")

    def start(self, node_id: int) -> subprocess.Popen[bytes]:
        """Start the node again alone, with the launcher's command (its output appended to its
        node.log)."""
        if self.running(node_id):
            raise ClusterControlError(f"node {node_id} is running")
        node = self.node(node_id)
        proc = start_node_process(node.properties_path, node.log_path)
        self.children[node_id] = proc
        return proc

    def signal(self, node_id: int, sig: signal.Signals) -> None:
        pid = self.pid(node_id)
        if pid is None:
            raise ClusterControlError(f"node {node_id} is not running")
        os.kill(pid, sig)

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the process stops, its sockets stay open (a GC pause, a VM stall)."""
        self.signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.signal(node_id, signal.SIGCONT)


def _is_node(pid: int, node: NodeConfig) -> bool:
    with contextlib.suppress(OSError):
        return str(node.properties_path) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    return False


# -- partitions, over the protocol ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition as Metadata reports it."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


async def request(address: Address, api: Api, req: Message, timeout: float = 10.0) -> Message:
    """One request to one broker (a connection of its own, ApiVersions first)."""
    channel = ControllerChannel(address[0], address[1], client_id="minibroker-cluster-control")
    try:
        return await channel.send(api, req, timeout=timeout)
    finally:
        await channel.close()


async def any_broker(addresses: Sequence[Address], api: Api, req: Message, timeout: float = 10.0) -> Message:
    """The answer of the first broker that answers (a stopped or paused one is skipped)."""
    last: Exception | None = None
    for address in addresses:
        try:
            return await request(address, api, req, min(timeout, 5.0))
        except (ControllerUnavailable, OSError) as e:
            last = e
    raise ClusterControlError(f"no broker of {list(addresses)} answered {api.name}: {last}")


async def cluster_metadata(addresses: Sequence[Address], topics: Sequence[str] | None
                           ) -> metadata.MetadataResponse:
    req = metadata.REQUEST(topics=None if topics is None else [metadata.REQUEST.MetadataRequestTopic(name=t)
                                                                for t in topics],
                           allow_auto_topic_creation=False)
    resp = await any_broker(addresses, metadata.API, req)
    assert isinstance(resp, metadata.MetadataResponse)
    return resp


async def partitions(addresses: Sequence[Address], topic: str) -> dict[int, PartitionState]:
    """{partition: state} of a topic ({} while no broker knows it)."""
    resp = await cluster_metadata(addresses, [topic])
    out = {}
    for t in resp.topics:
        if t.name == topic and t.error_code == ErrorCode.NONE:
            for p in t.partitions:
                out[p.partition_index] = PartitionState(p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                                                        tuple(sorted(p.isr_nodes)))
    return out


async def partition(addresses: Sequence[Address], topic: str, p: int) -> PartitionState:
    state = (await partitions(addresses, topic)).get(p)
    if state is None:
        raise ClusterControlError(f"no partition {topic}-{p} in the cluster's metadata")
    return state


async def high_watermark(addresses: Sequence[Address], topic: str, p: int) -> int:
    """ListOffsets LATEST (read_uncommitted) to the partition's leader: its high watermark."""
    md = await cluster_metadata(addresses, [topic])
    state = await partition(addresses, topic, p)
    where = {b.node_id: (b.host, b.port) for b in md.brokers}
    if state.leader not in where:
        raise ClusterControlError(f"{topic}-{p} has no live leader (leader {state.leader})")
    R = list_offsets.REQUEST
    resp = await request(where[state.leader], list_offsets.API, R(replica_id=-1, isolation_level=0, topics=[
        R.ListOffsetsTopic(name=topic, partitions=[R.ListOffsetsPartition(
            partition_index=p, current_leader_epoch=-1, timestamp=LATEST, max_num_offsets=1)])]))
    assert isinstance(resp, list_offsets.ListOffsetsResponse)
    answer = resp.topics[0].partitions[0]
    if answer.error_code != ErrorCode.NONE:
        raise KafkaError(answer.error_code, f"ListOffsets of {topic}-{p} at broker {state.leader}")
    return answer.offset


async def move_leader(addresses: Sequence[Address], topic: str, p: int, to: int, timeout: float = 30.0) -> None:
    """Make broker `to` the leader of topic-p, as Kafka's tools do: its replicas reordered with `to`
    first (AlterPartitionReassignments, the same replica set), then ElectLeaders PREFERRED. `to`
    must be a replica in the ISR."""
    state = await partition(addresses, topic, p)
    if to not in state.replicas:
        raise ClusterControlError(f"broker {to} holds no replica of {topic}-{p} (replicas {list(state.replicas)})")
    if to not in state.isr:
        raise ClusterControlError(f"broker {to} is not in the ISR of {topic}-{p} (ISR {list(state.isr)})")
    order = [to, *(r for r in state.replicas if r != to)]
    if list(state.replicas) != order:
        R = apr.REQUEST
        resp = await any_broker(addresses, apr.API, R(timeout_ms=int(timeout * 1000), topics=[R.ReassignableTopic(
            name=topic, partitions=[R.ReassignablePartition(partition_index=p, replicas=order)])]), timeout)
        assert isinstance(resp, apr.AlterPartitionReassignmentsResponse)
        if resp.error_code != ErrorCode.NONE:
            raise KafkaError(resp.error_code, resp.error_message or "AlterPartitionReassignments")
        for t in resp.responses:
            for r in t.partitions:
                if r.error_code != ErrorCode.NONE:
                    raise KafkaError(r.error_code, r.error_message or f"AlterPartitionReassignments of {topic}-{p}")
        # the reassignment is done once Metadata shows the new order (Kafka's answer precedes it)
        deadline = time.monotonic() + timeout
        while list((await partition(addresses, topic, p)).replicas) != order:
            if time.monotonic() > deadline:
                raise ClusterControlError(f"{topic}-{p}'s replicas did not become {order}")
            await asyncio.sleep(0.05)
    E = elect_leaders.REQUEST
    resp = await any_broker(addresses, elect_leaders.API, E(election_type=PREFERRED, timeout_ms=int(timeout * 1000),
                                                             topic_partitions=[E.TopicPartitions(topic=topic,
                                                                                                 partitions=[p])]),
                            timeout)
    assert isinstance(resp, elect_leaders.ElectLeadersResponse)
    if resp.error_code != ErrorCode.NONE:
        raise KafkaError(resp.error_code, "ElectLeaders")
    for result in resp.replica_election_results:
        for elected in result.partition_result:
            if elected.error_code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED):
                raise KafkaError(elected.error_code, elected.error_message or f"ElectLeaders of {topic}-{p}")
    deadline = time.monotonic() + timeout
    while (await partition(addresses, topic, p)).leader != to:
        if time.monotonic() > deadline:
            raise ClusterControlError(f"broker {to} did not become the leader of {topic}-{p}")
        await asyncio.sleep(0.05)


async def shuffle_leaders(addresses: Sequence[Address], topics: Sequence[str] | None = None,
                          seed: int | None = None) -> dict[tuple[str, int], int]:
    """Move each partition's leadership (of `topics`, else of every topic that is not internal) to
    another in-sync replica picked at random; returns {(topic, partition): new leader} for the
    partitions that had another one."""
    rng = random.Random(seed)
    md = await cluster_metadata(addresses, topics)
    moved = {}
    for t in sorted(md.topics, key=lambda t: t.name or ""):
        if t.name is None or t.error_code != ErrorCode.NONE or (topics is None and t.is_internal):
            continue
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            others = sorted(r for r in p.isr_nodes if r != p.leader_id)
            if others:
                to = rng.choice(others)
                await move_leader(addresses, t.name, p.partition_index, to)
                moved[(t.name, p.partition_index)] = to
    return moved
