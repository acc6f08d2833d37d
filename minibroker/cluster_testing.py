"""A cluster of minibroker processes for tests: `Cluster` (issue 29), re-exported by minibroker.testing.

    with Cluster(brokers=3) as c:              # `python -m minibroker cluster` in a temp dir
        c.bootstrap                            # every broker's host:port
        c.leader("orders", 0)                  # from Metadata
        c.stop_broker(2, kill=True)            # kill -9 (kill=False: SIGTERM, a controlled shutdown)
        c.start_broker(2)                      # again alone on its data dir; returns once it serves
        c.pause(3); c.resume(3)                # SIGSTOP / SIGCONT
        c.wait_for_isr("orders", 0, [1, 2])    # bounded waits: ISR, leader, high watermark
        c.move_leader("orders", 0, to=3)       # AlterPartitionReassignments + ElectLeaders
        c.inject(kind="broker.kill", node=2)   # the cluster fault kinds by name (issue 32)

Theory of operation. `Cluster` runs the launcher (minibroker.cluster_launcher) as a child process
and reads D/cluster.json once every broker serves; nodes are then driven one by one through
minibroker.cluster_control (the same functions the fault kinds use), and partitions are read and
moved over Kafka's protocol (Metadata, ListOffsets, AlterPartitionReassignments, ElectLeaders),
so `ClusterOps`, the part that only speaks the protocol, serves the Kafka reference cluster too
(reference/kafka_reference.py: KafkaCluster). Every wait polls with a deadline and fails with what
it last saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from minibroker import cluster_control as cc
from minibroker.cluster_control import Address, NodeProcesses, PartitionState
from minibroker.cluster_faults import NodeFaults, RemoteFault
from minibroker.cluster_launcher import CLUSTER_JSON, Node, serves, serving
from minibroker.faults.control import FaultControlError

T = TypeVar("T")
DEFAULT_TIMEOUT = 60.0
START_TIMEOUT = 240.0  # a loaded 2-core machine: four Python processes start at once
# what tests want of a cluster: a dead broker fenced in seconds, a paused follower out of the ISR
# soon, rebalances at once, internal topics on every broker (Kafka's RF 3 defaults need 3)
TEST_OVERRIDES: dict[str, str] = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500",
                                  "replica.lag.time.max.ms": "4000", "group.initial.rebalance.delay.ms": "0"}


def _run(coro: Coroutine[object, object, T]) -> T:
    return asyncio.run(coro)


def poll(check: Callable[[], T | None], what: str, timeout: float = DEFAULT_TIMEOUT, interval: float = 0.1) -> T:
    """`check()` until it returns something truthy (returned); an exception counts as not yet.
    TimeoutError after `timeout` s, saying what was last seen."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            got = check()
        except Exception as e:  # noqa: BLE001 - a broker not answering yet: try again
            last = e
        else:
            if got:
                return got
            last = got
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting until {what} (last: {last!r})")
        time.sleep(interval)


class ClusterOps(ABC):
    """What a test asks of any cluster over Kafka's protocol: partitions' leaders, ISR and high
    watermarks, bounded waits on them, leadership moves. Subclasses say where the brokers are and
    how to stop, start, pause and resume one."""

    @property
    @abstractmethod
    def addresses(self) -> list[Address]:
        """host:port of the brokers, live ones first."""

    @abstractmethod
    def stop_broker(self, node_id: int, *, kill: bool = False) -> None:
        """SIGTERM (controlled shutdown) or, with kill, SIGKILL; returns once the process is gone."""

    @abstractmethod
    def start_broker(self, node_id: int, timeout: float = START_TIMEOUT) -> None:
        """Start a stopped broker again on its data dir; returns once it serves."""

    @abstractmethod
    def running(self, node_id: int) -> bool:
        """Whether the broker's process is alive (a paused one is)."""

    @abstractmethod
    def pause(self, node_id: int) -> None:
        """SIGSTOP the broker's process."""

    @abstractmethod
    def resume(self, node_id: int) -> None:
        """SIGCONT the broker's process."""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.addresses)

    def kill_broker(self, node_id: int) -> None:
        self.stop_broker(node_id, kill=True)

    # -- partitions -----------------------------------------------------------------------------
    def partitions(self, topic: str) -> dict[int, PartitionState]:
        """{partition: PartitionState(leader, leader_epoch, replicas, isr)} from Metadata."""
        return _run(cc.partitions(self.addresses, topic))

    def partition(self, topic: str, partition: int = 0) -> PartitionState:
        return _run(cc.partition(self.addresses, topic, partition))

    def leader(self, topic: str, partition: int = 0) -> int:
        """The node id of the partition's leader (-1 when it has none)."""
        return self.partition(topic, partition).leader

    def isr(self, topic: str, partition: int = 0) -> list[int]:
        return list(self.partition(topic, partition).isr)

    def high_watermark(self, topic: str, partition: int = 0) -> int:
        """ListOffsets LATEST at the leader (what a read_uncommitted consumer can read up to)."""
        return _run(cc.high_watermark(self.addresses, topic, partition))

    def wait_for_leader(self, topic: str, partition: int = 0, leader: int | Callable[[int], bool] | None = None,
                        timeout: float = DEFAULT_TIMEOUT) -> int:
        """Until the partition has a leader (`leader` given: that one, or one the predicate accepts)."""
        def check() -> int | None:
            got = self.leader(topic, partition)
            ok = got >= 0 and (leader is None or (leader(got) if callable(leader) else got == leader))
            return got if ok else None
        return poll(check, f"{topic}-{partition} has leader {leader if leader is not None else '(any)'}", timeout)

    def wait_for_isr(self, topic: str, partition: int, isr: Iterable[int] | Callable[[list[int]], bool],
                     timeout: float = DEFAULT_TIMEOUT) -> list[int]:
        """Until the ISR is exactly `isr` (node ids, any order) or satisfies the predicate; returns it."""
        wanted = None if callable(isr) else sorted(isr)

        def check() -> list[int] | None:
            got = self.isr(topic, partition)
            ok = got == wanted if wanted is not None else isr(got)  # type: ignore[operator]
            return got if ok else None
        return poll(check, f"{topic}-{partition}'s ISR is {wanted if wanted is not None else 'as asked'}", timeout)

    def wait_for_high_watermark(self, topic: str, partition: int, offset: int,
                                timeout: float = DEFAULT_TIMEOUT) -> int:
        """Until the partition's high watermark is at least `offset`; returns it."""
        def check() -> int | None:
            hw = self.high_watermark(topic, partition)
            return hw if hw >= offset else None
        return poll(check, f"{topic}-{partition}'s high watermark reaches {offset}", timeout)

    def move_leader(self, topic: str, partition: int, to: int, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Broker `to` leads the partition, moved as Kafka's tools move it (replicas reordered with
        AlterPartitionReassignments, then ElectLeaders PREFERRED); returns once Metadata says so."""
        _run(cc.move_leader(self.addresses, topic, partition, to, timeout))

    def shuffle_leaders(self, topics: Sequence[str] | None = None, seed: int | None = None
                        ) -> dict[tuple[str, int], int]:
        """Each partition's leadership to another in-sync replica at random (kfake's ShufflePartitionLeaders)."""
        return _run(cc.shuffle_leaders(self.addresses, topics, seed))

    # -- the cluster fault kinds by name (minibroker.faults.cluster_kinds) ------------------------
    def inject(self, api: str | None = None, *, kind: str | None = None, node: int | None = None,
               topic: str | None = None, partition: int | None = None, seed: int | None = None,
               **spec: str | int | float | None) -> RemoteFault | None:
        """Apply a cluster fault kind now: `broker.stop`, `broker.kill`, `broker.start` (node),
        `broker.pause` / `broker.resume` (node), `leader.move` (topic, partition, node = the new
        leader), `leader.shuffle` (topic optional, seed optional). The same names as POST
        /api/faults takes on a cluster broker's console. A request fault (`api`) or a fault inside
        a broker (`replica.fetch.cut`, `controller.cut`, `disk.slow`, `disk.full`) is set on broker
        `node` and returned (`RemoteFault`: `wait_fired`, `remove`, a context manager); the
        cluster must have fault control (`Cluster` asks for it)."""
        if api is not None or kind in IN_BROKER_KINDS:
            if node is None:
                raise ValueError(f"{api or kind} needs node (the broker it acts in)")
            more = {k: v for k, v in {"kind": kind, "topic": topic, "partition": partition, "seed": seed}.items()
                    if v is not None}
            return self.faults(node).inject(api, **more, **spec)
        if kind is None:
            raise ValueError("inject needs an api (a request fault) or a kind")
        if kind in ("broker.stop", "broker.kill", "broker.start", "broker.pause", "broker.resume"):
            if node is None:
                raise ValueError(f"{kind} needs node")
            {"broker.stop": lambda: self.stop_broker(node), "broker.kill": lambda: self.stop_broker(node, kill=True),
             "broker.start": lambda: self.start_broker(node), "broker.pause": lambda: self.pause(node),
             "broker.resume": lambda: self.resume(node)}[kind]()
        elif kind == "leader.move":
            if topic is None or node is None:
                raise ValueError("leader.move needs topic and node (the new leader)")
            self.move_leader(topic, partition or 0, node)
        elif kind == "leader.shuffle":
            self.shuffle_leaders([topic] if topic is not None else None, seed)
        else:
            raise ValueError(f"no cluster fault kind {kind!r}")
        return None

    def faults(self, node: int) -> NodeFaults:
        """The faults of broker `node`, set inside its process (minibroker.cluster_faults)."""
        raise NotImplementedError(f"{type(self).__name__} has no fault control")


IN_BROKER_KINDS = frozenset({"replica.fetch.cut", "controller.cut", "disk.slow", "disk.full"})


@dataclass(frozen=True, slots=True)
class ClusterBroker:
    node_id: int
    host: str
    port: int
    data_dir: Path  # the broker's log dir (D/broker-i/data)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


class Cluster(ClusterOps):
    """`python -m minibroker cluster` as a child process, and control of its nodes (module doc).
    `data_dir` None: a temporary directory, removed by `stop`."""

    def __init__(self, brokers: int = 3, *, data_dir: str | Path | None = None, host: str = "127.0.0.1",
                 port: int = 0, overrides: dict[str, str | int | bool] | None = None,
                 console_port: int | None = None, console_allow_faults: bool = False):
        self.size = brokers
        self._own_dir = data_dir is None
        self.root = Path(tempfile.mkdtemp(prefix="minibroker-cluster-") if data_dir is None else data_dir).absolute()
        self.host, self.port = host, port
        rf = str(min(brokers, 3))
        self.overrides: dict[str, str] = {**TEST_OVERRIDES, "offsets.topic.replication.factor": rf,
                                          "transaction.state.log.replication.factor": rf,
                                          "share.coordinator.state.topic.replication.factor": rf}
        for k, v in (overrides or {}).items():
            self.overrides[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        self.console_port, self.console_allow_faults = console_port, console_allow_faults
        self.launcher: subprocess.Popen[bytes] | None = None
        self.processes: NodeProcesses | None = None
        self.brokers: dict[int, ClusterBroker] = {}
        self.controller: ClusterBroker | None = None
        self.cluster_id = ""
        self.started_in_s = 0.0

    @property
    def console_url(self) -> str | None:
        """Broker 1's console (with `console_port`; 0 picks a free port at start)."""
        return None if not self.console_port else f"http://{self.host}:{self.console_port}"

    def command(self) -> list[str]:
        args = [sys.executable, "-m", "minibroker", "cluster", "--brokers", str(self.size), "--host", self.host,
                "--port", str(self.port), "--data-dir", str(self.root)]
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        if self.console_port is not None:
            args += ["--console-port", str(self.console_port)]
        if self.console_allow_faults:
            args.append("--console-allow-faults")
        return args + ["--fault-control"]  # c.faults(n), c.inject(api, node=n) (issue 32)

    def start(self, timeout: float = START_TIMEOUT) -> Cluster:
        started = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        if self.console_port == 0:
            with socket.socket() as s:
                s.bind((self.host, 0))
                self.console_port = int(s.getsockname()[1])
        with open(self.root / "launcher.log", "ab") as log:
            self.launcher = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
        doc_path = self.root / CLUSTER_JSON
        deadline = time.monotonic() + timeout
        while not doc_path.exists():
            if self.launcher.poll() is not None:
                raise RuntimeError(f"`minibroker cluster` exited with {self.launcher.returncode}: "
                                   f"{self.launcher_log()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"the cluster did not serve within {timeout:.0f} s: {self.launcher_log()[-2000:]}")
            time.sleep(0.05)
        self.started_in_s = time.monotonic() - started
        doc = json.loads(doc_path.read_text())
        self.cluster_id = doc["cluster_id"]
        self.brokers = {b["node_id"]: ClusterBroker(b["node_id"], b["host"], b["port"],
                                                    self.root / f"broker-{b['node_id']}" / "data")
                        for b in doc["brokers"]}
        c = doc["controller"]
        self.controller = ClusterBroker(c["node_id"], c["host"], c["port"], self.root / "controller" / "data")
        self.processes = NodeProcesses(self.root)
        return self

    def launcher_log(self) -> str:
        try:
            return (self.root / "launcher.log").read_text(errors="replace")
        except OSError:
            return ""

    def node_log(self, node_id: int) -> str:
        return self._processes.node(node_id).log_path.read_text(errors="replace")

    @property
    def _processes(self) -> NodeProcesses:
        assert self.processes is not None, "the cluster is not started"
        return self.processes

    def running(self, node_id: int) -> bool:
        return self._processes.running(node_id)

    def pid(self, node_id: int) -> int | None:
        return self._processes.pid(node_id)

    @property
    def addresses(self) -> list[Address]:
        live = [(b.host, b.port) for n, b in self.brokers.items() if self._processes.running(n)]
        return live + [(b.host, b.port) for b in self.brokers.values() if (b.host, b.port) not in live]

    def serves(self, node_id: int) -> bool:
        """The broker answers a Metadata naming itself (registered, unfenced, caught up)."""
        b = self.brokers[node_id]
        return _run(serves(Node(node_id, "broker", b.host, b.port, self.root)))

    def _serving_since(self, node_id: int, log_mark: int) -> bool:
        b, c = self.brokers[node_id], self.controller
        assert c is not None
        return _run(serving(Node(node_id, "broker", b.host, b.port, self.root / f"broker-{node_id}"),
                            Node(c.node_id, "controller", c.host, c.port, self.root / "controller"), log_mark))

    def stop_broker(self, node_id: int, *, kill: bool = False) -> None:
        self.brokers[node_id]  # noqa: B018 - a KeyError names a broker the cluster does not have
        self._processes.stop(node_id, kill=kill)

    def start_broker(self, node_id: int, timeout: float = START_TIMEOUT) -> None:
        self.brokers[node_id]  # noqa: B018 - as above
        log = self._processes.node(node_id).log_path
        mark = log.stat().st_size if log.exists() else 0
        proc = self._processes.start(node_id)

        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"broker {node_id} exited with {proc.returncode}: {self.node_log(node_id)[-2000:]}")
            return self._serving_since(node_id, mark)
        deadline = time.monotonic() + timeout
        while not up():
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {node_id} did not serve within {timeout:.0f} s")
            time.sleep(0.05)

    def pause(self, node_id: int) -> None:
        self._processes.pause(node_id)

    def faults(self, node: int) -> NodeFaults:
        self.brokers[node]  # noqa: B018 - a KeyError names a broker the cluster does not have
        return NodeFaults(self.root, node)

    def resume(self, node_id: int) -> None:
        self._processes.resume(node_id)

    def heal(self, timeout: float = START_TIMEOUT) -> None:
        """Every broker running, resumed, without faults and serving again (after a test that
        stopped, paused or cut some)."""
        for n in self.brokers:
            if self._processes.running(n):
                self._processes.resume(n)
                with contextlib.suppress(FaultControlError):
                    self.faults(n).clear()
            else:
                self.start_broker(n, timeout)
        poll(lambda: all(self.serves(n) for n in self.brokers), "every broker serves", timeout)

    def stop(self, timeout: float = 180.0) -> int | None:
        """SIGTERM to the launcher (brokers stopped in order, then the controller); returns its
        exit status. The temporary directory goes too."""
        rc = None
        if self.launcher is not None and self.launcher.poll() is None:
            self.launcher.send_signal(signal.SIGTERM)
            try:
                rc = self.launcher.wait(timeout)
            except subprocess.TimeoutExpired:
                self.launcher.kill()
                rc = self.launcher.wait(10)
        elif self.launcher is not None:
            rc = self.launcher.returncode
        if self.processes is not None:  # whatever the launcher did not stop (it was killed)
            for n in self.processes.nodes:
                if self.processes.running(n):
                    self.processes.stop(n, kill=True)
        if self._own_dir:
            shutil.rmtree(self.root, ignore_errors=True)
        return rc

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Cluster of {len(self.brokers)} brokers at {self.bootstrap if self.brokers else '(not started)'}>"


__all__ = ["Cluster", "ClusterBroker", "ClusterOps", "NodeFaults", "PartitionState", "RemoteFault", "poll"]
