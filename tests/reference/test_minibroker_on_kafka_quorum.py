"""A minibroker broker under a quorum of three Apache Kafka 4.4 controllers, through a failover of
the active one (issue 37).

Kafka's three controllers (`process.roles=controller`, static `controller.quorum.voters`) elect a
leader of `__cluster_metadata`; the broker registers, heartbeats and forwards to whichever is
active, learning it from its metadata fetches (minibroker.metadata.controller_nodes), and sends a
request answered NOT_CONTROLLER to the next one. The active controller is then killed with
SIGKILL: the other two elect a new leader, and the broker must go on without a restart: it stays
registered with the same broker epoch and unfenced, topics created through it after the failover
are made by the new controller and served by it, and what it acknowledged before is still read.
The broker's image is read back by our MetadataLoader as an observer of the quorum.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.controller_nodes import ControllerNodeProvider
from minibroker.metadata.image import MetadataImage
from minibroker.metadata.metadata_loader import MetadataLoader
from minibroker_protocol.apis import describe_quorum
from reference import kafka_reference as kr
from tests.helpers import ROOT, free_port

pytestmark = pytest.mark.timeout(400)
TIMEOUT = 120.0
BROKER = 1
VOTERS = (100, 101, 102)
# features the minibroker broker does not register support for: formatted off, so that it may register
FEATURES_OFF = ["share.version=0", "streams.version=0", "eligible.leader.replicas.version=0"]


class KafkaQuorum:
    """Three Kafka 4.4 controllers, one JVM each, on loopback."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.ports = {n: free_port() for n in VOTERS}
        self.cluster_id = kr.random_cluster_id()
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def voters(self) -> str:
        return ",".join(f"{n}@127.0.0.1:{p}" for n, p in self.ports.items())

    def _conf(self, node: int) -> Path:
        d = self.workdir / f"controller-{node}"
        d.mkdir(parents=True, exist_ok=True)
        conf = d / "controller.properties"
        props = {"process.roles": "controller", "node.id": node, "controller.quorum.voters": self.voters,
                 "listeners": f"CONTROLLER://127.0.0.1:{self.ports[node]}", "controller.listener.names": "CONTROLLER",
                 "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "log.dirs": d / "metadata", "broker.session.timeout.ms": 6000}
        conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return conf

    def format(self, conf: Path) -> None:
        args = ["format", "-t", self.cluster_id, "-c", str(conf)]
        for f in FEATURES_OFF:
            args += ["--feature", f]
        r = subprocess.run(kr.java_command("kafka.tools.StorageTool", args, heap="256m"), capture_output=True,
                           text=True, timeout=TIMEOUT)
        assert r.returncode == 0, r.stdout + r.stderr

    def start(self) -> None:
        confs = {n: self._conf(n) for n in VOTERS}
        for conf in confs.values():
            self.format(conf)
        for n, conf in confs.items():
            log4j = conf.parent / "log4j2.properties"
            log4j.write_text(kr._BROKER_LOG4J.format(log=conf.parent / "controller.log"))
            with open(conf.parent / "controller.out", "wb") as out:
                self.procs[n] = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="256m", log4j=log4j),
                                                 stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                 start_new_session=True)

    def kill(self, node: int) -> None:
        self.procs[node].send_signal(signal.SIGKILL)
        self.procs[node].wait(30)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

    def nodes(self) -> ControllerNodeProvider:
        return ControllerNodeProvider({n: ("127.0.0.1", p) for n, p in self.ports.items()})

    def leader(self, among: tuple[int, ...] = VOTERS) -> int:
        """The active controller: the voter that answers DescribeQuorum (the others answer
        NOT_LEADER_OR_FOLLOWER), naming itself as the leader."""
        async def ask() -> int:
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                for n in among:
                    ch = ControllerChannel("127.0.0.1", self.ports[n], client_id="quorum-test")
                    try:
                        resp = await ch.send(describe_quorum.API, describe_quorum.REQUEST(topics=[
                            describe_quorum.REQUEST.TopicData(topic_name="__cluster_metadata", partitions=[
                                describe_quorum.REQUEST.PartitionData(partition_index=0)])]), timeout=5)
                        assert isinstance(resp, describe_quorum.DescribeQuorumResponse)
                        parts = resp.topics[0].partitions if resp.topics and resp.error_code == 0 else []
                        if parts and parts[0].error_code == 0 and parts[0].leader_id == n:
                            return n
                    except (ConnectionError, OSError):
                        pass
                    finally:
                        await ch.close()
                await asyncio.sleep(0.3)
            raise AssertionError("no controller answered as the leader")
        return asyncio.run(ask())

    def observe(self, check: Callable[[MetadataImage], bool], what: str) -> MetadataImage:
        """Follow the quorum's metadata log as an observer (our MetadataLoader) until `check` holds."""
        async def run() -> MetadataImage:
            loader = MetadataLoader(ControllerChannel("127.0.0.1", self.ports[VOTERS[0]], client_id="observer",
                                                      nodes=self.nodes()), node_id=99, cluster_id=self.cluster_id)
            deadline = time.monotonic() + TIMEOUT
            try:
                while not check(loader.image):
                    assert time.monotonic() < deadline, f"timed out waiting for {what}: {loader.image.brokers}"
                    try:
                        await loader.fetch_once(max_wait_ms=200)
                    except (ConnectionError, OSError):
                        await asyncio.sleep(0.2)  # a controller starting or killed
                return loader.image
            finally:
                await loader.channel.close()
        return asyncio.run(run())


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaQuorum]:
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    if not kr.jars_ready():
        kr.fetch()
    q = KafkaQuorum(tmp_path_factory.mktemp("kafka-quorum"))
    q.start()
    try:
        yield q
    finally:
        q.stop()
        shutil.rmtree(q.workdir, ignore_errors=True)


def _unfenced(image: MetadataImage) -> bool:
    b = image.brokers.get(BROKER)
    return b is not None and not b.fenced


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for v in values:
        p.produce(topic, v)
    assert p.flush(60) == 0


def _consume(bootstrap: str, topic: str, n: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


def test_a_minibroker_broker_rides_through_a_failover_of_kafkas_active_controller(quorum: KafkaQuorum,
                                                                                 tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "minibroker.log"
    cmd = [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(port),
           "--data-dir", str(tmp_path / "broker-1"), "--override", f"cluster.id={quorum.cluster_id}"]
    for o in ("process.roles=broker", f"node.id={BROKER}", f"controller.quorum.voters={quorum.voters}",
              "controller.listener.names=CONTROLLER",
              "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
              "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1"):
        cmd += ["--override", o]
    with open(log, "ab") as out:
        broker = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    bootstrap = f"127.0.0.1:{port}"
    try:
        first = quorum.leader()
        image = quorum.observe(_unfenced, "broker 1 registered and unfenced")
        epoch = image.brokers[BROKER].epoch
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("before", 1, 1)])["before"].result(60)  # forwarded to the active controller
        _produce(bootstrap, "before", [b"b1", b"b2"])

        quorum.kill(first)
        second = quorum.leader(tuple(n for n in VOTERS if n != first))
        assert second != first
        # the broker follows the new leader: CreateTopics forwarded to it, its records in the broker's image
        admin.create_topics([NewTopic("after", 2, 1)])["after"].result(60)
        _produce(bootstrap, "after", [b"a1", b"a2", b"a3"])
        # heartbeats reach the new controller: still the first registration, unfenced, past two sessions
        time.sleep(2 * 6.0)
        image = quorum.observe(lambda img: "after" in img.topic_ids and _unfenced(img), "topic 'after' and broker 1")
        assert image.brokers[BROKER].epoch == epoch
        assert sorted(_consume(bootstrap, "before", 2)) == [b"b1", b"b2"]
        assert sorted(_consume(bootstrap, "after", 3)) == [b"a1", b"a2", b"a3"]
        text = log.read_text()
        assert f"the active controller is node {second}" in text, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        # a clean shutdown through the new controller (controlled shutdown)
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(60) == 0, log.read_text()[-3000:]
        assert "controlled shutdown completed" in log.read_text()
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait(10)
