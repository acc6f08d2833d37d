"""A minibroker cluster of processes for tests/cluster: one KRaft controller (process.roles=controller)
and three brokers (process.roles=broker), each `python -m minibroker` on its own data dir, with
short session timeouts and heartbeats so that a killed broker is fenced in a few seconds.

`MiniCluster` is a stand-in until the launcher (`python -m minibroker cluster`, the `kafka_cluster`
fixture) is on main: it starts, stops, kills, pauses and restarts single nodes by id.
"""

from __future__ import annotations

import base64
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.helpers import BrokerProcess, free_port

CONTROLLER_ID = 3000
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 500


class MiniCluster:
    def __init__(self, root: Path, brokers: int = 3, overrides: dict[str, Any] | None = None):
        self.root = root
        self.controller_port = free_port()
        voters = f"{CONTROLLER_ID}@127.0.0.1:{self.controller_port}"
        # one cluster id for every node (Kafka: kafka-storage format --cluster-id on each)
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.controller = BrokerProcess(root / "controller" / "data", port=self.controller_port, overrides={
            "process.roles": "controller", "node.id": CONTROLLER_ID, "cluster.id": cluster_id, "controller.quorum.voters": voters,
            "listeners": f"CONTROLLER://127.0.0.1:{self.controller_port}", "controller.listener.names": "CONTROLLER",
            "broker.session.timeout.ms": SESSION_TIMEOUT_MS})
        (root / "controller").mkdir(parents=True, exist_ok=True)
        self.brokers: dict[int, BrokerProcess] = {}
        for n in range(1, brokers + 1):
            (root / f"broker-{n}").mkdir(parents=True, exist_ok=True)
            self.brokers[n] = BrokerProcess(root / f"broker-{n}" / "data", overrides={
                "process.roles": "broker", "node.id": n, "cluster.id": cluster_id, "controller.quorum.voters": voters,
                "controller.listener.names": "CONTROLLER", "broker.heartbeat.interval.ms": HEARTBEAT_MS,
                "replica.lag.time.max.ms": 4000, **(overrides or {})})

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.proc is not None and b.proc.poll() is None)

    def start(self) -> None:
        # generous: on a fresh clone every process compiles the KRaft modules first (no .pyc is
        # written under PYTHONDONTWRITEBYTECODE), four at once on two cores
        self.controller.start(timeout=90)
        for b in self.brokers.values():
            b.start(timeout=90)
        self.wait_registered(list(self.brokers), timeout=120)

    def metadata_brokers(self, node: int) -> set[int]:
        """The broker ids broker `node` answers in Metadata (confluent-kafka's view)."""
        admin = AdminClient({"bootstrap.servers": self.brokers[node].bootstrap})
        return set(admin.list_topics(timeout=10).brokers)

    def wait_registered(self, nodes: list[int], timeout: float = 60.0) -> None:
        """Until every live broker's Metadata names all of `nodes` (registered and unfenced)."""
        live = [n for n, b in self.brokers.items() if b.proc is not None and b.proc.poll() is None]
        for n in live:
            wait_until(lambda n=n: set(nodes) <= self.metadata_brokers(n), f"broker {n} sees brokers {nodes}",
                       timeout)

    def stop(self) -> None:
        for b in self.brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                self.resume(b)
                try:
                    b.stop(40)
                except Exception:
                    b.kill()
        if self.controller.proc is not None and self.controller.proc.poll() is None:
            self.controller.stop()

    def heal(self) -> None:
        """Every broker serving again, as at the start: paused ones resumed, stopped or killed ones
        started on their data dirs, and all registered and unfenced in every broker's Metadata, so
        that the next test of a module sharing this cluster starts from a whole cluster."""
        if self.controller.proc is None or self.controller.proc.poll() is not None:
            self.controller.start(timeout=90)
        for b in self.brokers.values():
            self.resume(b)
            if b.proc is None or b.proc.poll() is not None:
                b.start(timeout=90)
        self.wait_registered(list(self.brokers), timeout=120)

    def kill(self, node: int) -> None:
        self.brokers[node].kill()

    def restart(self, node: int) -> None:
        self.brokers[node].start()

    def pause(self, node: int) -> None:
        proc = self.brokers[node].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)

    def resume(self, b: BrokerProcess | int) -> None:
        proc = (self.brokers[b] if isinstance(b, int) else b).proc
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{b.log_text()[-4000:]}" for n, b in self.brokers.items())


def wait_until(check: Callable[[], Any], what: str, timeout: float = 60.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as e:  # a broker not up yet: try again
            last = e
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting until {what} (last: {last!r})")


def partitions_of(cluster: MiniCluster, node: int, topic: str) -> dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """{partition: (leader, replicas, isr)} in broker `node`'s Metadata."""
    md = AdminClient({"bootstrap.servers": cluster.brokers[node].bootstrap}).list_topics(topic, timeout=10)
    t = md.topics[topic]
    if t.error is not None:
        return {}
    return {p.id: (p.leader, tuple(p.replicas), tuple(sorted(p.isrs))) for p in t.partitions.values()}


def log_files(cluster: MiniCluster, node: int, topic: str, partition: int) -> bytes:
    d = cluster.brokers[node].data_dir / f"{topic}-{partition}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 60.0,
                errors: list[str] | None = None) -> list[tuple[int, int, bytes]]:
    """What a fresh consumer reads from offset 0 of each partition, up to `expected` records or the
    timeout; the consumer's errors go to `errors` when one is given."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() and errors is not None:
                errors.append(str(m.error()))
            if m is None or m.error():
                continue
            out.append((m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return out
