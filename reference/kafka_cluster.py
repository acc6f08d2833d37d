"""Apache Kafka 4.4 as a cluster on this machine: one KRaft controller and three brokers, each a
JVM of its own (256 MB heap), with the Cluster API of minibroker's tests (issue 29).

    with KafkaCluster(brokers=3) as k:
        k.bootstrap; k.leader("t", 0); k.stop_broker(2, kill=True); k.start_broker(2)
        k.pause(3); k.resume(3); k.wait_for_isr("t", 0, [1, 2, 3]); k.move_leader("t", 0, to=1)

Theory of operation. Each node is a `KafkaReference` (reference/kafka_reference.py) whose server
properties are the node's own: the controller (`process.roles=controller`, node.id 3000, its
CONTROLLER listener) and brokers 1..N (`process.roles=broker`, node.id i, PLAINTEXT), all naming
the controller in `controller.quorum.voters`, every data dir formatted by StorageTool with one
cluster id, ports free on loopback, data dirs under one temp dir. The JVMs are formatted and
started in parallel (threads, one per node), and the cluster serves once every broker's Metadata
names every broker. The timing keys are those of minibroker's `Cluster` (a dead broker fenced
after 3 s, a follower out of the ISR after 4 s), so a scenario gives the same outcome on both in
about the same time. Everything a test asks of partitions (leaders, ISR, high watermarks, leader
moves through AlterPartitionReassignments and ElectLeaders) is `ClusterOps`, over Kafka's
protocol, shared with minibroker's cluster. A node stopped or killed is started again on the same
directory, ports and cluster id.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from minibroker.cluster_control import Address
from minibroker.cluster_launcher import Node, serves
from minibroker.cluster_testing import TEST_OVERRIDES, ClusterOps, _run, poll
from reference.kafka_reference import KafkaReference, _prop, free_port, random_cluster_id

CONTROLLER_NODE_ID = 3000
HEAP = "256m"
START_TIMEOUT = 300.0  # four JVMs at once on a loaded 2-core machine


@dataclass
class KafkaNode(KafkaReference):
    """One node of the cluster: its own server properties instead of the one-node set."""

    node_props: Mapping[str, object] = field(default_factory=dict)

    def properties(self) -> dict[str, str]:
        props = {**self.node_props, "log.dirs": self.data_dir, **self.overrides}
        return {k: _prop(v) for k, v in props.items()}


def _parallel(fns: list[Callable[[], object]]) -> None:
    errors: list[BaseException] = []

    def run(fn: Callable[[], object]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


class KafkaCluster(ClusterOps):
    def __init__(self, brokers: int = 3, *, overrides: Mapping[str, object] | None = None, heap: str = HEAP,
                 host: str = "127.0.0.1"):
        self.host = host
        self.root = Path(tempfile.mkdtemp(prefix="kafka-cluster-"))
        self.cluster_id = random_cluster_id()
        cport = free_port(host)
        voters = f"{CONTROLLER_NODE_ID}@{host}:{cport}"
        common = {"controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
                  "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                  **TEST_OVERRIDES, **(overrides or {})}
        self.controller = KafkaNode(heap=heap, jit=False, workdir=self.root / "controller", host=host, port=cport,
                                    controller_port=cport, node_id=CONTROLLER_NODE_ID, cluster_id=self.cluster_id,
                                    node_props={**common, "process.roles": "controller", "node.id": CONTROLLER_NODE_ID,
                                                "listeners": f"CONTROLLER://{host}:{cport}"})
        self.brokers: dict[int, KafkaNode] = {}
        rf = min(brokers, 3)
        for i in range(1, brokers + 1):
            port = free_port(host)
            self.brokers[i] = KafkaNode(
                heap=heap, jit=False, workdir=self.root / f"broker-{i}", host=host, port=port, controller_port=cport,
                node_id=i, cluster_id=self.cluster_id,
                node_props={**common, "process.roles": "broker", "node.id": i,
                            "listeners": f"PLAINTEXT://{host}:{port}", "advertised.listeners": f"PLAINTEXT://{host}:{port}",
                            "inter.broker.listener.name": "PLAINTEXT",
                            "offsets.topic.replication.factor": rf, "transaction.state.log.replication.factor": rf,
                            "share.coordinator.state.topic.replication.factor": rf})
        self.started_in_s = 0.0

    @property
    def addresses(self) -> list[Address]:
        live = [(b.host, b.port) for b in self.brokers.values() if b.proc is not None and b.proc.poll() is None]
        return live + [(b.host, b.port) for b in self.brokers.values() if (b.host, b.port) not in live]

    def serves(self, node_id: int, all_brokers: bool = False) -> bool:
        b = self.brokers[node_id]
        return _run(serves(Node(node_id, "broker", b.host, b.port, self.root),
                           frozenset(self.brokers) if all_brokers else frozenset()))

    def start(self, timeout: float = START_TIMEOUT) -> KafkaCluster:
        started = time.monotonic()
        try:
            # the controller's JVM and the brokers' at once: a broker retries until the controller answers
            _parallel([lambda n=n: n.start(timeout) for n in [self.controller, *self.brokers.values()]])  # type: ignore[misc]
            poll(lambda: all(self.serves(n, all_brokers=True) for n in self.brokers), "every Kafka broker serves",
                 timeout)
        except BaseException:
            self.stop()
            raise
        self.started_in_s = time.monotonic() - started
        return self

    def stop_broker(self, node_id: int, *, kill: bool = False) -> None:
        node = self.brokers[node_id]
        if node.proc is not None and node.proc.poll() is None:
            os.kill(node.proc.pid, signal.SIGCONT)
        node.halt(kill)

    def start_broker(self, node_id: int, timeout: float = START_TIMEOUT) -> None:
        self.brokers[node_id].start(timeout)
        poll(lambda: self.serves(node_id), f"Kafka broker {node_id} serves", timeout)

    def running(self, node_id: int) -> bool:
        proc = self.brokers[node_id].proc
        return proc is not None and proc.poll() is None

    def _signal(self, node_id: int, sig: signal.Signals) -> None:
        proc = self.brokers[node_id].proc
        assert proc is not None and proc.poll() is None, f"Kafka broker {node_id} is not running"
        os.kill(proc.pid, sig)

    def pause(self, node_id: int) -> None:
        self._signal(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self._signal(node_id, signal.SIGCONT)

    def stop(self) -> None:
        """The brokers one after the other (controlled shutdown), then the controller; the temp dir goes."""
        for b in self.brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                os.kill(b.proc.pid, signal.SIGCONT)
                b._end_process(kill=False, grace=30)  # noqa: SLF001 - KafkaReference's own bounded stop
        self.controller._end_process(kill=False, grace=30)  # noqa: SLF001
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
