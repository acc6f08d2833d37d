"""A minibroker broker in a cluster run by Apache Kafka 4.4's own KRaft controller (issue 37, first step).

The data dir is formatted by Kafka's `kafka-storage format` (meta.properties with Kafka's cluster id,
node id and directory id) and minibroker starts on it as it is, with Kafka's keys (process.roles=broker,
controller.quorum.voters, controller.listener.names). It must register with Kafka's controller (its
directory ids, its supported features), follow Kafka's metadata log until the controller unfences it,
heartbeat, leave by controlled shutdown on SIGTERM, and after kill -9 register again as a new
incarnation. What the controller recorded is read back from Kafka's metadata log by our own
MetadataLoader as an observer: Kafka's records, our decoder.

Kafka is formatted with streams.version and eligible.leader.replicas.version at 0:
a broker must support every finalized feature level to register (Kafka: QuorumController refuses it
with UNSUPPORTED_VERSION), and minibroker's broker does not advertise those two yet
(docs/differences.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from minibroker.metadata.controller_channel import ControllerChannel
from minibroker.metadata.image import MetadataImage
from minibroker.metadata.metadata_loader import MetadataLoader
from reference import kafka_reference as kr
from tests.helpers import ROOT, BrokerProcess, free_port

pytestmark = pytest.mark.timeout(300)
TIMEOUT = 90.0
BROKER = 1
CONTROLLER = 100
# what minibroker's broker does not support yet: formatted off, so that it may register
FEATURES_OFF = ["share.version=0", "streams.version=0", "eligible.leader.replicas.version=0"]


def _properties(props: dict[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _format(conf: Path, cluster_id: str, features: list[str]) -> None:
    args = ["format", "-t", cluster_id, "-c", str(conf)]
    for f in features:
        args += ["--feature", f]
    run = subprocess.run(kr.java_command("kafka.tools.StorageTool", args, heap="256m"), capture_output=True,
                         text=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stdout + run.stderr


class KafkaController:
    """Apache Kafka 4.4 with process.roles=controller, one voter, on loopback."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.cluster_id = kr.random_cluster_id()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def voters(self) -> str:
        return f"{CONTROLLER}@127.0.0.1:{self.port}"

    def start(self) -> None:
        conf = self.workdir / "controller.properties"
        conf.write_text(_properties({
            "process.roles": "controller", "node.id": CONTROLLER, "controller.quorum.voters": self.voters,
            "listeners": f"CONTROLLER://127.0.0.1:{self.port}", "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.workdir / "metadata", "broker.session.timeout.ms": 6000}))
        _format(conf, self.cluster_id, FEATURES_OFF)
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(kr._BROKER_LOG4J.format(log=self.workdir / "controller.log"))
        with open(self.workdir / "controller.out", "wb") as out:
            self.proc = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="256m", log4j=log4j),
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def observe(ctrl: KafkaController | MinibrokerController, check: Callable[[MetadataImage], bool], what: str) -> MetadataImage:
    """Follow Kafka's metadata log as an observer (our MetadataLoader) until `check` holds."""
    async def run() -> MetadataImage:
        loader = MetadataLoader(ControllerChannel("127.0.0.1", ctrl.port, client_id="observer"), node_id=99,
                                cluster_id=ctrl.cluster_id)
        deadline = time.monotonic() + TIMEOUT
        try:
            while not check(loader.image):
                assert time.monotonic() < deadline, f"timed out waiting for {what}: {loader.image.brokers}"
                try:
                    await loader.fetch_once(max_wait_ms=200)
                except (ConnectionError, OSError):
                    await asyncio.sleep(0.2)  # the controller is still starting
            return loader.image
        finally:
            await loader.channel.close()
    return asyncio.run(run())


def start_minibroker(ctrl: KafkaController | MinibrokerController, data_dir: Path, port: int, log: Path,
                     overrides: list[str] = ()) -> subprocess.Popen[bytes]:  # type: ignore[assignment]
    cmd = [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(port),
           "--data-dir", str(data_dir),
           "--override", "process.roles=broker", "--override", f"node.id={BROKER}",
           "--override", f"controller.quorum.voters={ctrl.voters}",
           "--override", "controller.listener.names=CONTROLLER",
           "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"]
    for o in overrides:
        cmd += ["--override", o]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def kafka_controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaController]:
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    if not kr.jars_ready():
        kr.fetch()
    ctrl = KafkaController(tmp_path_factory.mktemp("kafka-controller"))
    ctrl.start()
    try:
        yield ctrl
    finally:
        ctrl.stop()
        shutil.rmtree(ctrl.workdir, ignore_errors=True)


def _unfenced(image: MetadataImage, epoch_above: int = -1) -> bool:
    b = image.brokers.get(BROKER)
    return b is not None and not b.fenced and b.epoch > epoch_above


def test_a_minibroker_broker_registers_with_kafkas_controller_on_a_dir_kafka_formatted(kafka_controller, tmp_path):
    data_dir = tmp_path / "broker-1"
    port = free_port()
    conf = tmp_path / "broker.properties"
    conf.write_text(_properties({
        "process.roles": "broker", "node.id": BROKER, "controller.quorum.voters": kafka_controller.voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "log.dirs": data_dir}))
    _format(conf, kafka_controller.cluster_id, FEATURES_OFF)
    meta = dict(line.split("=", 1) for line in (data_dir / "meta.properties").read_text().splitlines()
                if "=" in line and not line.startswith("#"))
    log = tmp_path / "minibroker.log"
    broker = start_minibroker(kafka_controller, data_dir, port, log)
    try:
        image = observe(kafka_controller, _unfenced, "broker 1 registered and unfenced")
        reg = image.brokers[BROKER]
        # the registration Kafka's controller wrote: our listener, our directory, our features
        assert [(e.name, e.host, e.port) for e in reg.endpoints] == [("PLAINTEXT", "127.0.0.1", port)]
        assert [str(d) for d in reg.log_dirs] and len(reg.log_dirs) == 1
        assert {"metadata.version", "transaction.version", "group.version"} <= set(reg.features)
        assert image.features["metadata.version"] >= 7
        # meta.properties is Kafka's, untouched: same cluster id, node id and directory id
        after = dict(line.split("=", 1) for line in (data_dir / "meta.properties").read_text().splitlines()
                     if "=" in line and not line.startswith("#"))
        assert {k: after[k] for k in ("cluster.id", "node.id", "directory.id")} == {
            k: meta[k] for k in ("cluster.id", "node.id", "directory.id")}
        first_epoch = reg.epoch

        # kill -9, start again on the same dir: a new incarnation, a new (higher) broker epoch
        broker.send_signal(signal.SIGKILL)
        broker.wait(10)
        broker = start_minibroker(kafka_controller, data_dir, port, log)
        image = observe(kafka_controller, lambda img: _unfenced(img, first_epoch), "broker 1 back with a new epoch")
        assert image.brokers[BROKER].epoch > first_epoch

        # SIGTERM: a controlled shutdown; Kafka's controller fences the broker at once, and it exits 0
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(60) == 0, log.read_text()[-3000:]
        observe(kafka_controller, lambda img: BROKER in img.brokers and img.brokers[BROKER].fenced, "broker 1 fenced after its shutdown")
        assert "controlled shutdown completed" in log.read_text()
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait(10)


class KafkaBroker:
    """Apache Kafka 4.4 with process.roles=broker under the same controller."""

    def __init__(self, ctrl: KafkaController | MinibrokerController, workdir: Path, node_id: int,
                 props: dict[str, object] | None = None) -> None:
        self.ctrl, self.workdir, self.node_id = ctrl, workdir, node_id
        self.props = props or {}  # over the defaults below
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    def start(self) -> None:
        conf = self.workdir / "broker.properties"
        conf.write_text(_properties({
            "process.roles": "broker", "node.id": self.node_id, "controller.quorum.voters": self.ctrl.voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "log.dirs": self.data_dir,
            "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1, "group.initial.rebalance.delay.ms": 0} | self.props))
        if not (self.data_dir / "meta.properties").exists():
            _format(conf, self.ctrl.cluster_id, FEATURES_OFF)
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(kr._BROKER_LOG4J.format(log=self.workdir / "server.log"))
        with open(self.workdir / "broker.out", "ab") as out:
            self.proc = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="256m", log4j=log4j),
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class MinibrokerController:
    """minibroker's own KRaft controller (process.roles=controller): the same cluster with Kafka's
    controller swapped for ours (a Kafka broker and a minibroker broker under it)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.cluster_id = kr.random_cluster_id()
        self.proc = BrokerProcess(workdir / "data", port=self.port, overrides={
            "process.roles": "controller", "node.id": CONTROLLER, "controller.quorum.voters": self.voters,
            "cluster.id": self.cluster_id, "listeners": f"CONTROLLER://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER", "broker.session.timeout.ms": 6000})

    @property
    def voters(self) -> str:
        return f"{CONTROLLER}@127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc.start()

    def stop(self) -> None:
        self.proc.stop()


@pytest.fixture(params=["kafka-controller", "minibroker-controller"])
def controller(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KafkaController | MinibrokerController]:
    if request.param == "kafka-controller":
        yield request.getfixturevalue("kafka_controller")
        return
    ours = MinibrokerController(tmp_path / "controller")
    (tmp_path / "controller").mkdir()
    ours.start()
    try:
        yield ours
    finally:
        ours.stop()


def _segments(part_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(part_dir.glob("*.log"))}


def test_kafka_and_minibroker_replicate_each_others_partitions_byte_for_byte(controller, tmp_path):
    """Partition 0 led by minibroker (node 1) with a Kafka follower (node 2); partition 1 led by Kafka
    with a minibroker follower. acks=all through both leaders; after catch-up each partition's .log
    segments are the same bytes on both replicas, and so are the leader-epoch checkpoints."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    ours_dir, port = tmp_path / "minibroker-1", free_port()
    conf = tmp_path / "broker-1.properties"
    conf.write_text(_properties({
        "process.roles": "broker", "node.id": BROKER, "controller.quorum.voters": controller.voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "log.dirs": ours_dir}))
    _format(conf, controller.cluster_id, FEATURES_OFF)
    log = tmp_path / "minibroker.log"
    ours = start_minibroker(controller, ours_dir, port, log)
    theirs = KafkaBroker(controller, tmp_path / "kafka-2", 2)
    (tmp_path / "kafka-2").mkdir()
    theirs.start()
    try:
        observe(controller, lambda img: all(n in img.brokers and not img.brokers[n].fenced for n in (1, 2)),
                "both brokers unfenced")
        bootstrap = f"127.0.0.1:{port},127.0.0.1:{theirs.port}"
        topic = "mixed"
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{theirs.port}", request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=-1, replication_factor=-1,
                                          replica_assignments={0: [1, 2], 1: [2, 1]},
                                          topic_configs={"min.insync.replicas": "2"})])
        finally:
            admin.close()
        image = observe(controller, lambda img: img.topic(topic) is not None, "the topic in the metadata log")
        tp = image.topic(topic)
        assert tp is not None
        assert {p: (r.leader, tuple(r.isr)) for p, r in tp.partitions.items()} == {0: (1, (1, 2)), 1: (2, (2, 1))}

        n = 2000
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        errors: list[object] = []
        for i in range(n):
            p.produce(topic, value=b"v%d" % i, key=b"k%d" % i, partition=i % 2,
                      on_delivery=lambda err, msg: errors.append(err) if err else None)
        assert p.flush(120) == 0 and errors == []

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "mixed-reader", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        got: dict[int, list[bytes]] = {0: [], 1: []}
        deadline = time.monotonic() + 60
        while sum(map(len, got.values())) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got[m.partition()].append(m.value())
        c.close()
        assert got == {q: [b"v%d" % i for i in range(q, n, 2)] for q in (0, 1)}

        # after catch-up both replicas of each partition hold the same bytes
        for q in (0, 1):
            mine, kafkas = ours_dir / f"{topic}-{q}", theirs.data_dir / f"{topic}-{q}"
            deadline = time.monotonic() + 60
            while _segments(mine) != _segments(kafkas) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _segments(mine) == _segments(kafkas), (q, {k: len(v) for k, v in _segments(mine).items()},
                                                          {k: len(v) for k, v in _segments(kafkas).items()})
            assert sum(len(v) for v in _segments(mine).values()) > 0
            for who, d in (("minibroker", mine), ("kafka", kafkas)):  # for the note (pytest -s)
                print(f"{topic}-{q} leader={1 if q == 0 else 2} {who}: " + ", ".join(
                    f"{name} {len(b)} B sha256 {hashlib.sha256(b).hexdigest()[:16]}"
                    for name, b in _segments(d).items()))
            assert (mine / "leader-epoch-checkpoint").read_text() == (kafkas / "leader-epoch-checkpoint").read_text()
    finally:
        theirs.stop()
        if ours.poll() is None:
            ours.terminate()
            try:
                ours.wait(60)
            except subprocess.TimeoutExpired:
                ours.kill()
                ours.wait(10)


def _format_minibroker(ctrl: KafkaController | MinibrokerController, tmp_path: Path, data_dir: Path, port: int) -> None:
    conf = tmp_path / f"{data_dir.name}.properties"
    conf.write_text(_properties({
        "process.roles": "broker", "node.id": BROKER, "controller.quorum.voters": ctrl.voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "log.dirs": data_dir}))
    _format(conf, ctrl.cluster_id, FEATURES_OFF)


def _leader_isr(img: MetadataImage, topic: str) -> tuple[int, list[int]] | None:
    t = img.topic(topic)
    return (t.partitions[0].leader, sorted(t.partitions[0].isr)) if t is not None else None


def _catch_up(mine: Path, kafkas: Path) -> None:
    deadline = time.monotonic() + 60
    while _segments(mine) != _segments(kafkas) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _segments(mine) == _segments(kafkas), ({k: len(v) for k, v in _segments(mine).items()},
                                                  {k: len(v) for k, v in _segments(kafkas).items()})


def test_leadership_moves_between_the_kinds_and_nothing_is_lost(kafka_controller, tmp_path):
    """minibroker leads, is killed with kill -9 under an idempotent acks=all producer: Kafka's
    controller fences it and Kafka's broker takes over; minibroker comes back as Kafka's follower and
    catches up; a preferred election gives it the lead again. Every acknowledged record is read once,
    in order, and the replicas end byte-identical with indexes Kafka's kafka-dump-log verifies."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    ours_dir, port = tmp_path / "minibroker-1", free_port()
    _format_minibroker(kafka_controller, tmp_path, ours_dir, port)
    log = tmp_path / "minibroker.log"
    ours = start_minibroker(kafka_controller, ours_dir, port, log)
    (tmp_path / "kafka-2").mkdir()
    theirs = KafkaBroker(kafka_controller, tmp_path / "kafka-2", 2)
    theirs.start()
    topic = "moves"
    try:
        observe(kafka_controller, lambda img: all(n in img.brokers and not img.brokers[n].fenced for n in (1, 2)),
                "both brokers unfenced")
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{theirs.port}", request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=-1, replication_factor=-1,
                                          replica_assignments={0: [1, 2]})])
        finally:
            admin.close()
        observe(kafka_controller, lambda img: img.topic(topic) is not None, "the topic")
        bootstrap = f"127.0.0.1:{port},127.0.0.1:{theirs.port}"
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
                      "message.timeout.ms": 120_000})
        acked: list[int] = []
        errors: list[object] = []

        def report(err: object, msg: object) -> None:
            if err:
                errors.append(err)
            else:
                acked.append(int(msg.value()))  # type: ignore[attr-defined]

        n, kill_at = 3000, 1000
        for i in range(n):
            p.produce(topic, value=b"%d" % i, partition=0, on_delivery=report)
            if i == kill_at:
                p.flush(60)
                ours.send_signal(signal.SIGKILL)  # the leader dies; Kafka's broker has every acked record
                ours.wait(10)
            p.poll(0)
        assert p.flush(180) == 0 and errors == []
        # Kafka's controller fenced the dead broker: Kafka's broker leads, alone in the ISR
        observe(kafka_controller, lambda img: _leader_isr(img, topic) == (2, [2]), "Kafka's broker leads")

        # back as Kafka's follower: it catches up to the same bytes, rejoins the ISR
        ours = start_minibroker(kafka_controller, ours_dir, port, log)
        mine, kafkas = ours_dir / f"{topic}-0", theirs.data_dir / f"{topic}-0"
        observe(kafka_controller, lambda img: _leader_isr(img, topic) == (2, [1, 2]), "minibroker back in the ISR")
        _catch_up(mine, kafkas)

        # preferred leader election: minibroker (first replica) leads again; 500 more records
        election = kr.run_tool("kafka-leader-election", ["--bootstrap-server", f"127.0.0.1:{theirs.port}",
                                                          "--election-type", "preferred", "--topic", topic,
                                                          "--partition", "0"], timeout=120)
        assert election.returncode == 0, election.stdout + election.stderr
        observe(kafka_controller, lambda img: _leader_isr(img, topic) == (1, [1, 2]), "minibroker leads again")
        for i in range(n, n + 500):
            p.produce(topic, value=b"%d" % i, partition=0, on_delivery=report)
        assert p.flush(120) == 0 and errors == []
        assert sorted(acked) == list(range(n + 500))

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "moves-reader", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[int] = []
        deadline = time.monotonic() + 60
        while len(got) < n + 500 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(int(m.value()))
        c.close()
        assert got == list(range(n + 500))  # nothing lost, nothing twice, in order

        _catch_up(mine, kafkas)
        assert (mine / "leader-epoch-checkpoint").read_text() == (kafkas / "leader-epoch-checkpoint").read_text()
        for d in (mine, kafkas):
            check = kr.run_tool("kafka-dump-log", ["--files", ",".join(str(x) for x in sorted(d.glob("*.index"))),
                                                   "--verify-index-only"], timeout=120)
            assert check.returncode == 0 and "Mismatches" not in check.stdout and "Exception" not in check.stdout, (
                d, check.stdout[-2000:], check.stderr[-2000:])
    finally:
        theirs.stop()
        if ours.poll() is None:
            ours.terminate()
            try:
                ours.wait(60)
            except subprocess.TimeoutExpired:
                ours.kill()
                ours.wait(10)


MIGRATION_SECONDS = float(os.environ.get("MINIBROKER_MIGRATION_SECONDS", "12"))  # the run: 60


def _reassign(bootstrap: str, moves: dict[tuple[str, int], list[int]], tmp_path: Path) -> None:
    """kafka-reassign-partitions --execute, then --verify until it says every move is complete."""
    plan = tmp_path / f"plan-{time.monotonic_ns()}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(moves.items())]}))
    run = kr.run_tool("kafka-reassign-partitions", ["--bootstrap-server", bootstrap, "--execute",
                                                    "--reassignment-json-file", str(plan)], timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    deadline = time.monotonic() + 300  # a loaded machine: each --verify is a JVM
    while True:
        check = kr.run_tool("kafka-reassign-partitions", ["--bootstrap-server", bootstrap, "--verify",
                                                          "--reassignment-json-file", str(plan)], timeout=120)
        if check.returncode == 0 and "is still in progress" not in check.stdout:
            assert check.stdout.count("is complete") == len(moves), check.stdout
            return
        assert time.monotonic() < deadline, check.stdout + check.stderr
        time.sleep(1)


@pytest.fixture
def fresh_kafka_controller(tmp_path: Path) -> Iterator[KafkaController]:
    """A controller of its own: the module's carries the other tests' topics and broker ids."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    (tmp_path / "controller").mkdir()
    ctrl = KafkaController(tmp_path / "controller")
    ctrl.start()
    try:
        yield ctrl
    finally:
        ctrl.stop()


def test_moving_from_minibroker_to_kafka_without_downtime(fresh_kafka_controller, tmp_path):
    """docs/migrating.md's path: a topic and the consumer offsets live on a minibroker broker; a Kafka
    broker joins; kafka-reassign-partitions moves every partition (the internal __consumer_offsets
    included) onto it while an idempotent producer and a consumer group run; the minibroker broker is
    retired. Every acknowledged record is read by the group (at least once: a session that times out
    on a loaded machine reads again from its last commit) and its committed offsets survive the move."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from kafka.admin import KafkaAdminClient, NewTopic

    ours_dir, port = tmp_path / "minibroker-1", free_port()
    _format_minibroker(fresh_kafka_controller, tmp_path, ours_dir, port)
    log = tmp_path / "minibroker.log"
    ours = start_minibroker(fresh_kafka_controller, ours_dir, port, log, ["offsets.topic.replication.factor=1",
                                                                    "offsets.topic.num.partitions=3"])
    theirs: KafkaBroker | None = None
    topic, group = "orders", "billing"
    stop = threading.Event()
    try:
        observe(fresh_kafka_controller, lambda img: BROKER in img.brokers and not img.brokers[BROKER].fenced,
                "minibroker unfenced")
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
        finally:
            admin.close()
        observe(fresh_kafka_controller, lambda img: img.topic(topic) is not None, "the topic")

        acked: list[int] = []
        errors: list[object] = []
        consumed: list[int] = []

        def produce() -> None:
            p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all", "enable.idempotence": True,
                          "linger.ms": 5, "message.timeout.ms": 120_000})
            i = 0
            while not stop.is_set():
                for _ in range(50):  # about 2,000 records a second
                    try:
                        p.produce(topic, key=b"%d" % (i % 97), value=b"%d" % i,
                                  on_delivery=lambda err, msg: errors.append(err) if err else acked.append(
                                      int(msg.value())))
                    except BufferError:  # nowhere to send for a while: wait, as an application would
                        p.poll(0.1)
                        continue
                    i += 1
                p.poll(0)
                time.sleep(0.025)
            assert p.flush(120) == 0

        def consume() -> None:
            c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group, "auto.offset.reset": "earliest",
                          "enable.auto.commit": False})
            c.subscribe([topic])
            idle_since = None
            while True:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    consumed.append(int(m.value()))
                    if len(consumed) % 100 == 0:  # not one commit a record: thousands queue up under load
                        c.commit(asynchronous=True)
                    idle_since = None
                elif stop.is_set():
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since > 10 and len(consumed) >= len(acked):
                        break
            for _ in range(5):  # the last positions, retried: a loaded coordinator may time the first out
                try:
                    c.commit(asynchronous=False)
                    break
                except KafkaException as e:
                    if e.args[0].code() == KafkaError._NO_OFFSET:  # nothing new since the last commit
                        break
                    time.sleep(1)
            c.close()

        threads = [threading.Thread(target=produce, daemon=True), threading.Thread(target=consume, daemon=True)]
        for t in threads:
            t.start()
        time.sleep(MIGRATION_SECONDS / 3)

        # a Kafka broker joins; every partition moves onto it, __consumer_offsets too
        (tmp_path / "kafka-2").mkdir()
        theirs = KafkaBroker(fresh_kafka_controller, tmp_path / "kafka-2", 2)
        theirs.start()
        image = observe(fresh_kafka_controller, lambda img: 2 in img.brokers and not img.brokers[2].fenced
                        and img.topic("__consumer_offsets") is not None, "Kafka's broker unfenced")
        offsets = image.topic("__consumer_offsets")
        assert offsets is not None
        moves = {(topic, q): [2] for q in range(3)} | {("__consumer_offsets", q): [2] for q in offsets.partitions}
        _reassign(f"127.0.0.1:{theirs.port}", moves, tmp_path)

        def all_on_kafka(img: MetadataImage) -> bool:
            ts = [img.topic(t) for t in (topic, "__consumer_offsets")]
            return all(t is not None and all(list(r.replicas) == [2] for r in t.partitions.values()) for t in ts)

        observe(fresh_kafka_controller, all_on_kafka, "everything on Kafka's broker")
        time.sleep(MIGRATION_SECONDS / 3)

        # the minibroker broker retires (controlled shutdown): clients go on with Kafka alone
        ours.send_signal(signal.SIGTERM)
        assert ours.wait(60) == 0
        time.sleep(MIGRATION_SECONDS / 3)
        stop.set()
        for t in threads:
            t.join(240)
        assert errors == [] and acked, errors[:5]
        # every acknowledged record read, nothing else; a classic group whose session timed out on a
        # loaded machine reads again from its last commit (at least once, as Kafka's groups do)
        assert set(consumed) == set(acked)
        # the group's committed offsets came along: Kafka's broker reports them at the log ends
        lag = kr.run_tool("kafka-consumer-groups", ["--bootstrap-server", f"127.0.0.1:{theirs.port}", "--describe",
                                                   "--group", group], timeout=120)
        rows = [line.split() for line in lag.stdout.splitlines() if line.startswith(group)]
        assert len(rows) == 3 and all(r[3] == r[4] for r in rows), lag.stdout  # CURRENT-OFFSET == LOG-END-OFFSET
        assert sum(int(r[3]) for r in rows) == len(acked)
        print(f"migration: acknowledged {len(acked)}, read back {len(set(consumed))} ({len(consumed)} reads), "
              f"lost {len(set(acked) - set(consumed))}")
    finally:
        stop.set()
        if theirs is not None:
            theirs.stop()
        if ours.poll() is None:
            ours.kill()
            ours.wait(10)


def _foreign_format(ctrl: KafkaController | MinibrokerController, conf_dir: Path, data_dir: Path, node_id: int,
                    port: int) -> str:
    """Format `data_dir` as Kafka's StorageTool would for another cluster: meta.properties names a
    cluster id the controller has never seen."""
    foreign = kr.random_cluster_id()
    conf = conf_dir / f"{data_dir.name}.properties"
    conf.write_text(_properties({
        "process.roles": "broker", "node.id": node_id, "controller.quorum.voters": ctrl.voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "log.dirs": data_dir}))
    _format(conf, foreign, FEATURES_OFF)
    return foreign


def _lines(path: Path, *needles: str) -> list[str]:
    text = path.read_text(errors="replace") if path.exists() else ""
    return [line for line in text.splitlines() if any(n in line for n in needles)]


def test_a_broker_of_another_cluster_is_refused_by_either_controller(controller, tmp_path):
    """A Kafka 4.4 broker and a minibroker broker whose data dirs another cluster formatted, against
    Kafka's controller and against ours: neither controller registers them. Kafka's broker is stopped
    at its first raft Fetch (error 104, INCONSISTENT_CLUSTER_ID), logs it and keeps retrying; ours is
    refused at BrokerRegistration with QuorumController's reason, which both controllers log, and exits
    2 with one line (Kafka's broker would keep retrying: docs/differences.md). The metadata log never
    holds either broker."""
    (tmp_path / "kafka-7").mkdir()
    theirs = KafkaBroker(controller, tmp_path / "kafka-7", 7)
    _foreign_format(controller, tmp_path, theirs.data_dir, 7, theirs.port)
    ours_dir, port = tmp_path / "minibroker-1", free_port()
    foreign = _foreign_format(controller, tmp_path, ours_dir, BROKER, port)
    log = tmp_path / "minibroker.log"
    theirs.start()
    ours = start_minibroker(controller, ours_dir, port, log)
    try:
        assert ours.wait(120) == 2, log.read_text()[-3000:]
        last = log.read_text().strip().splitlines()[-1]
        assert last == f"minibroker: broker {BROKER}: the controller refused the registration " \
                       "(error INCONSISTENT_CLUSTER_ID)", last
        kafka_log = theirs.workdir / "server.log"
        deadline = time.monotonic() + 180  # a loaded machine: the JVM's start
        while not _lines(kafka_log, "INCONSISTENT_CLUSTER_ID", "InconsistentClusterId") \
                and time.monotonic() < deadline:
            time.sleep(1)
        refused = _lines(kafka_log, "INCONSISTENT_CLUSTER_ID", "InconsistentClusterId")
        assert refused, kafka_log.read_text(errors="replace")[-3000:] if kafka_log.exists() else "no server.log"
        assert theirs.proc is not None and theirs.proc.poll() is None  # Kafka's broker retries, it does not exit
        image = observe(controller, lambda img: img.features.get("metadata.version", 0) > 0, "the metadata log")
        # (broker 1 may be another test's, fenced since it left the module's controller)
        assert 7 not in image.brokers and (BROKER not in image.brokers or image.brokers[BROKER].fenced)
        # the controller side, for the report (pytest -s): Kafka's controller.log, our controller's stderr
        ctrl_log = (controller.workdir / "controller.log" if isinstance(controller, KafkaController)
                    else controller.proc.log_path)
        # both controllers refuse our BrokerRegistration with QuorumController's reason, and log it
        reason = f"Expected cluster ID {controller.cluster_id}, but got cluster ID {foreign}"
        said = _lines(ctrl_log, reason)
        assert said, _lines(ctrl_log, "registerBroker")
        print(f"{type(controller).__name__}: Kafka broker logged: {refused[0][:300]}")
        print(f"{type(controller).__name__}: controller logged: {said[0][:300]}")
    finally:
        theirs.stop()
        if ours.poll() is None:
            ours.kill()
            ours.wait(10)


def _elect_preferred(bootstrap: str, topic: str, partition: int) -> None:
    run = kr.run_tool("kafka-leader-election", ["--bootstrap-server", bootstrap, "--election-type", "preferred",
                                                "--topic", topic, "--partition", str(partition)], timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


# KIP-848: when Kafka led first, minibroker could not read the null ClassicMemberMetadata tag in
# Kafka's member record (a varint marker 0) and lost the member: UNKNOWN_MEMBER_ID after the move
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_coordinator_moves_between_the_kinds(fresh_kafka_controller, tmp_path, protocol):
    """__consumer_offsets (one partition, replicas on a minibroker broker and a Kafka broker): a
    consumer group (classic, and KIP-848's consumer protocol) commits while the partition's leadership (so the group coordinator) moves
    from one kind to the other and back (reassignment reorder + preferred election, as operators do).
    The group goes on, its committed offsets read back the same from either kind, and both replicas of
    __consumer_offsets-0 are the same bytes: each kind reads and writes the other's group records."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    ours_dir, port = tmp_path / "minibroker-1", free_port()
    _format_minibroker(fresh_kafka_controller, tmp_path, ours_dir, port)
    log = tmp_path / "minibroker.log"
    ours = start_minibroker(fresh_kafka_controller, ours_dir, port, log, ["offsets.topic.replication.factor=2",
                                                                    "offsets.topic.num.partitions=1"])
    (tmp_path / "kafka-3").mkdir()
    theirs = KafkaBroker(fresh_kafka_controller, tmp_path / "kafka-3", 3, {"offsets.topic.replication.factor": 2,
                                                                      "offsets.topic.num.partitions": 1})
    theirs.start()
    topic, group, offsets = "coord-moves", "coord-group", "__consumer_offsets"
    kafka_bootstrap = f"127.0.0.1:{theirs.port}"
    try:
        observe(fresh_kafka_controller, lambda img: all(n in img.brokers and not img.brokers[n].fenced for n in (1, 3)),
                "both brokers unfenced")
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=-1, replication_factor=-1,
                                          replica_assignments={0: [1, 3]})])
        finally:
            admin.close()
        p = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all", "enable.idempotence": True})
        n = 300
        for i in range(n):
            p.produce(topic, value=b"%d" % i, partition=0)
        assert p.flush(60) == 0
        # the first FindCoordinator goes to minibroker: it creates __consumer_offsets (1 partition, RF 2)
        conf = {"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "group.protocol": protocol}
        if protocol == "classic":
            conf["session.timeout.ms"] = 30_000  # KIP-848: the broker's group.consumer.session.timeout.ms
        c = Consumer(conf)
        c.subscribe([topic])
        consumed: list[int] = []

        def consume(upto: int) -> None:
            deadline = time.monotonic() + 120
            while len(consumed) < upto:
                assert time.monotonic() < deadline, (len(consumed), upto)
                m = c.poll(0.5)
                if m is not None and not m.error():
                    consumed.append(int(m.value()))
                    if len(consumed) % 10 == 0:
                        c.commit(m, asynchronous=False)

        consume(100)
        image = observe(fresh_kafka_controller, lambda img: img.topic(offsets) is not None, "__consumer_offsets")
        part = image.topic(offsets).partitions[0]  # type: ignore[union-attr]
        assert sorted(part.replicas) == [1, 3], part.replicas
        first = part.leader
        other = 3 if first == 1 else 1
        moves = []
        for target in (other, first):  # to the other kind, then back
            _reassign(kafka_bootstrap, {(offsets, 0): [target, 1 if target == 3 else 3]}, tmp_path)
            _elect_preferred(kafka_bootstrap, offsets, 0)
            observe(fresh_kafka_controller, lambda img, t=target: _leader_isr(img, offsets) == (t, [1, 3]),
                    f"broker {target} leads {offsets}-0")
            moves.append(target)
            consume(len(consumed) + 100)
        assert moves == [other, first]
        c.close()  # the last commit was the 300th record's, on the coordinator back where it started
        assert consumed == list(range(n))  # the group went on: nothing twice, nothing skipped

        for bootstrap in (f"127.0.0.1:{port}", kafka_bootstrap):  # read back on either kind
            r = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
            try:
                (tp,) = r.committed([TopicPartition(topic, 0)], timeout=60)
            finally:
                r.close()
            assert tp.offset == n, (bootstrap, tp)
        mine, kafkas = ours_dir / f"{offsets}-0", theirs.data_dir / f"{offsets}-0"
        _catch_up(mine, kafkas)
        for who, d in (("minibroker", mine), ("kafka", kafkas)):  # for the note (pytest -s)
            print(f"{offsets}-0 {who}: " + ", ".join(f"{name} {len(b)} B sha256 {hashlib.sha256(b).hexdigest()[:16]}"
                                                     for name, b in _segments(d).items()))
    finally:
        theirs.stop()
        if ours.poll() is None:
            ours.terminate()
            try:
                ours.wait(60)
            except subprocess.TimeoutExpired:
                ours.kill()
                ours.wait(10)


def test_a_transaction_coordinator_moves_between_the_kinds(fresh_kafka_controller, tmp_path):
    """__transaction_state (one partition, replicas on a minibroker and a Kafka broker): a transactional
    producer commits and aborts while the partition's leadership (the transaction coordinator) moves
    from one kind to the other and back. A read_committed consumer sees every committed record once
    and no aborted one; both replicas of __transaction_state-0 are the same bytes."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    ours_dir, port = tmp_path / "minibroker-1", free_port()
    _format_minibroker(fresh_kafka_controller, tmp_path, ours_dir, port)
    log = tmp_path / "minibroker.log"
    txn_props = {"transaction.state.log.replication.factor": 2, "transaction.state.log.num.partitions": 1,
                 "transaction.state.log.min.isr": 1}
    ours = start_minibroker(fresh_kafka_controller, ours_dir, port, log, [f"{k}={v}" for k, v in txn_props.items()])
    (tmp_path / "kafka-4").mkdir()
    theirs = KafkaBroker(fresh_kafka_controller, tmp_path / "kafka-4", 4, dict(txn_props))
    theirs.start()
    topic, state = "txn-moves", "__transaction_state"
    kafka_bootstrap = f"127.0.0.1:{theirs.port}"
    try:
        observe(fresh_kafka_controller, lambda img: all(n in img.brokers and not img.brokers[n].fenced for n in (1, 4)),
                "both brokers unfenced")
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=-1, replication_factor=-1,
                                          replica_assignments={0: [1, 4], 1: [4, 1]})])
        finally:
            admin.close()
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "transactional.id": "mover", "acks": "all",
                      "transaction.timeout.ms": 60_000})
        p.init_transactions(120)
        committed: list[int] = []
        seq = 0

        def transactions(count: int) -> None:
            nonlocal seq
            for _ in range(count):
                p.begin_transaction()
                batch = list(range(seq, seq + 10))
                seq += 10
                for i in batch:
                    p.produce(topic, value=b"%d" % i, partition=i % 2)
                if (batch[0] // 10) % 3 == 2:
                    # every third one aborted, once its records are written: aborted unflushed,
                    # librdkafka sends EndTxn(ABORT) whenever an AddPartitionsToTxn was answered
                    # with an error (CONCURRENT_TRANSACTIONS while the previous commit's markers
                    # are written, the slowest right after a move), and the coordinator, Kafka's as
                    # ours, answers INVALID_TXN_STATE for a transaction it never saw begin (issue 37)
                    assert p.flush(60) == 0
                    p.abort_transaction(120)
                else:
                    p.commit_transaction(120)
                    committed.extend(batch)

        transactions(6)
        image = observe(fresh_kafka_controller, lambda img: img.topic(state) is not None, state)
        part = image.topic(state).partitions[0]  # type: ignore[union-attr]
        assert sorted(part.replicas) == [1, 4], part.replicas
        first = part.leader
        other = 4 if first == 1 else 1
        for target in (other, first):  # to the other kind, then back
            _reassign(kafka_bootstrap, {(state, 0): [target, 1 if target == 4 else 4]}, tmp_path)
            _elect_preferred(kafka_bootstrap, state, 0)
            observe(fresh_kafka_controller, lambda img, t=target: _leader_isr(img, state) == (t, [1, 4]),
                    f"broker {target} leads {state}-0")
            transactions(6)
        assert p.flush(60) == 0

        c = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "txn-reader", "enable.auto.commit": False,
                      "isolation.level": "read_committed"})
        c.assign([TopicPartition(topic, q, 0) for q in (0, 1)])
        got: list[int] = []
        deadline = time.monotonic() + 60
        while len(got) < len(committed) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(int(m.value()))
        for _ in range(4):  # nothing more (an aborted record would come now)
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(int(m.value()))
        c.close()
        assert sorted(got) == sorted(committed) and len(committed) == 120  # once each, none aborted
        mine, kafkas = ours_dir / f"{state}-0", theirs.data_dir / f"{state}-0"
        _catch_up(mine, kafkas)
        for who, d in (("minibroker", mine), ("kafka", kafkas)):  # for the note (pytest -s)
            print(f"{state}-0 {who}: " + ", ".join(f"{name} {len(b)} B sha256 {hashlib.sha256(b).hexdigest()[:16]}"
                                                   for name, b in _segments(d).items()))
        for q in (0, 1):
            _catch_up(ours_dir / f"{topic}-{q}", theirs.data_dir / f"{topic}-{q}")  # the markers too
    finally:
        theirs.stop()
        if ours.poll() is None:
            ours.terminate()
            try:
                ours.wait(60)
            except subprocess.TimeoutExpired:
                ours.kill()
                ours.wait(10)


class _Events:
    """The JSON events a Kafka verifiable tool prints, read as they come (a thread of its own)."""

    def __init__(self, tool: str, args: list[str]) -> None:
        self.proc = subprocess.Popen(kr.tool_command(tool, args), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.events: list[dict[str, object]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def named(self, name: str) -> list[dict[str, object]]:
        return [e for e in list(self.events) if e["name"] == name]

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # both tools close their client in a shutdown hook (the producer flushes)
        self.proc.wait(90)
        self._reader.join(10)


@pytest.mark.timeout(600)  # a Kafka broker, two Java clients and six tool JVMs on a loaded machine
def test_the_java_client_produces_and_consumes_through_leader_moves_between_the_kinds(fresh_kafka_controller, tmp_path):
    """kafka-verifiable-producer (the Java 4.4 client: acks=all, idempotent, retries unbounded) and a
    kafka-verifiable-consumer group run while the partition's leader moves Kafka -> minibroker -> Kafka
    (reassignment reorder + preferred election). Every acknowledged record is in the log once, in the
    order acknowledged, and the group commits the log end."""
    from confluent_kafka import Consumer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    # a controller of its own: the module's has the other tests' __consumer_offsets, led by brokers
    # gone since, so the group would find no coordinator (a module run waited 240 s for one)
    kafka_controller = fresh_kafka_controller
    ours_dir, port = tmp_path / "minibroker-1", free_port()
    _format_minibroker(kafka_controller, tmp_path, ours_dir, port)
    ours = start_minibroker(kafka_controller, ours_dir, port, tmp_path / "minibroker.log")
    (tmp_path / "kafka-6").mkdir()
    theirs = KafkaBroker(kafka_controller, tmp_path / "kafka-6", 6)
    theirs.start()
    topic = "java-moves"
    kafka_bootstrap = f"127.0.0.1:{theirs.port}"
    bootstrap = f"127.0.0.1:{port},{kafka_bootstrap}"
    tools: list[_Events] = []
    try:
        observe(kafka_controller, lambda img: all(n in img.brokers and not img.brokers[n].fenced for n in (1, 6)),
                "both brokers unfenced")
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=60_000)
        try:
            admin.create_topics([NewTopic(topic, num_partitions=-1, replication_factor=-1,
                                          replica_assignments={0: [6, 1]})])
        finally:
            admin.close()
        observe(kafka_controller, lambda img: _leader_isr(img, topic) == (6, [1, 6]), "Kafka's broker leads")
        group = _Events("kafka-verifiable-consumer", [
            "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", "java-movers",
            "--group-protocol", "classic", "--reset-policy", "earliest"])
        tools.append(group)
        group.wait("the group's partition assigned", lambda: bool(group.named("partitions_assigned")))
        conf = tmp_path / "producer.properties"  # an application's retries (the tool's own default is 0)
        conf.write_text("enable.idempotence=true\nretries=2147483647\n")
        java = _Events("kafka-verifiable-producer", [
            "--bootstrap-server", bootstrap, "--topic", topic, "--max-messages", "100000", "--throughput", "100",
            "--acks", "-1", "--value-prefix", "7", "--producer.config", str(conf)])
        tools.append(java)
        leaders = []
        for target, other in ((1, 6), (6, 1)):  # to minibroker, then back to Kafka
            before = len(java.named("producer_send_success"))
            java.wait("acknowledgements before the move", lambda b=before: len(java.named("producer_send_success")) > b + 100)
            _reassign(kafka_bootstrap, {(topic, 0): [target, other]}, tmp_path)
            _elect_preferred(kafka_bootstrap, topic, 0)
            observe(kafka_controller, lambda img, t=target: _leader_isr(img, topic) == (t, [1, 6]),
                    f"broker {target} leads")
            leaders.append(target)
        before = len(java.named("producer_send_success"))
        java.wait("acknowledgements after the moves", lambda: len(java.named("producer_send_success")) > before + 100)
        java.stop()
        assert leaders == [1, 6]
        java_acked = [str(e["value"]) for e in java.named("producer_send_success")]
        errors = java.named("producer_send_error")
        assert errors == [] and len(java_acked) > 300, errors[:5]

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "java-moves-check", "enable.auto.commit": False})
        _, hw = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=60)
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[str] = []
        deadline = time.monotonic() + 120
        while len(got) < hw and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value().decode())
        c.close()
        assert len(got) == hw and len(set(got)) == len(got)  # none twice
        acked = set(java_acked)
        assert [v for v in got if v in acked] == java_acked  # nothing acknowledged lost, in order
        group.wait("the group committed the log end", lambda: any(
            e["success"] and e["offsets"] == [{"topic": topic, "partition": 0, "offset": hw}]
            for e in group.named("offsets_committed")))
        print(f"java client through moves: acknowledged {len(java_acked)}, log end {hw}, read {len(got)}")
    finally:
        for t in tools:
            t.stop()
        theirs.stop()
        if ours.poll() is None:
            ours.terminate()
            try:
                ours.wait(60)
            except subprocess.TimeoutExpired:
                ours.kill()
                ours.wait(10)


@pytest.fixture
def our_controller(tmp_path: Path) -> Iterator[MinibrokerController]:
    """minibroker's own controller, fresh (the Kafka broker and the minibroker broker under it)."""
    if kr.missing_prerequisites():
        pytest.skip(kr.missing_prerequisites() or "")
    (tmp_path / "controller").mkdir()
    ours = MinibrokerController(tmp_path / "controller")
    ours.start()
    try:
        yield ours
    finally:
        ours.stop()


def test_a_group_coordinator_moves_between_the_kinds_under_our_controller(our_controller, tmp_path):
    """The same group-coordinator move (Kafka -> minibroker -> back, or the other way), with
    minibroker's controller running the cluster: the reassignment and the election reach it forwarded
    by the Kafka broker, and the group goes on from its commits whichever kind coordinates."""
    test_a_group_coordinator_moves_between_the_kinds(our_controller, tmp_path, "classic")


def test_a_transaction_across_the_kinds_under_our_controller(our_controller, tmp_path):
    """The transaction test under minibroker's controller: data partitions led by both kinds (txn-moves-0
    by minibroker, txn-moves-1 by Kafka) while the coordinator moves between them, so WriteTxnMarkers
    and KIP-890's AddPartitionsToTxn verification go each way; read_committed sees the committed only."""
    test_a_transaction_coordinator_moves_between_the_kinds(our_controller, tmp_path)
