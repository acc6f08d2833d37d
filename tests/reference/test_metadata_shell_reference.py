"""Kafka's own `kafka-metadata-shell` reads our controller's snapshot as it reads Kafka's (issue 29).

The same cluster is built twice: Apache Kafka 4.4's KRaft controller, then minibroker's, each a
single voter (process.roles=controller) on a directory formatted by Kafka's `kafka-storage format
--release-version 4.3`, with one minibroker broker (node 1) under it and the same topics and
topic config created through that broker with Kafka's `kafka-topics`/`kafka-configs`. Each
controller writes snapshots (`metadata.log.max.record.bytes.between.snapshots=1`, so one follows
every write); once one covers the last change, kafka-metadata-shell runs the same commands on
both snapshots and the outputs must be the same, but for what differs between any two clusters.

Why 4.3: kafka-shell 4.4.0 is not on Maven Central; 4.3.1 is (reference/shell/pom.xml), and its
MetadataLoader refuses metadata.version 33 (4.4's) but knows 30 (4.3-IV0), what `--release-version
4.3` finalizes (docs/differences.md#metadata-shell). streams.version is formatted at 0, as it had
to be when minibroker's broker did not support it (a broker must support every finalized feature
to register); it supports 0-1 now (docs/differences.md#mixed-features).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from minibroker.raft.snapshots import read_snapshot
from minibroker_protocol import metadata_records as mr
from reference import kafka_reference as kr
from tests.helpers import ROOT, BrokerProcess, free_port

pytestmark = pytest.mark.timeout(900)  # two controllers, a broker each and ~20 JVM tools on 2 loaded cores
TIMEOUT = 180.0
CONTROLLER = 100
BROKER = 1
FORMAT = ["--release-version", "4.3", "--feature", "streams.version=0"]
# a snapshot after every write, and at least every 2 s (both controllers read both keys)
SNAPSHOTS = {"metadata.log.max.record.bytes.between.snapshots": 1, "metadata.log.max.snapshot.interval.ms": 2000}
TOPICS = [("orders", 3), ("payments", 1)]
SHELL_COMMANDS = [
    ["find", "/image"],
    ["ls", "/image/topics/byName"],
    ["ls", "/image/topics/byName/orders"],
    ["cat", "/image/topics/byName/orders/0"],
    ["cat", "/image/topics/byName/orders/2"],
    ["cat", "/image/topics/byName/payments/0"],
    ["ls", "/image/cluster/brokers"],
    ["cat", "/image/cluster/brokers/1"],
    ["cat", "/image/features/metadataVersion"],
    ["ls", "/image/features"],
    ["cat", "/image/features/finalized_group.version"],
    ["cat", "/image/features/finalized_transaction.version"],
    ["cat", "/image/features/finalized_share.version"],
    ["cat", "/image/features/finalized_eligible.leader.replicas.version"],
    ["ls", "/image/cluster/controllers"],
    ["cat", "/image/cluster/controllers/100"],
    ["cat", "/image/configs/BROKER/min.insync.replicas"],
    ["cat", "/image/configs/TOPIC:payments/retention.ms"],
    ["cat", "/image/producerIds/nextProducerId"],
]


def _properties(props: dict[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _format(conf: Path, cluster_id: str) -> None:
    run = subprocess.run(kr.java_command("kafka.tools.StorageTool", ["format", "-t", cluster_id, "-c", str(conf),
                                                                     *FORMAT], heap="256m"),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "metadata.version 4.3-IV0" in run.stdout, run.stdout


@dataclass
class Controller:
    """One voter, Kafka's or ours, and where it writes `__cluster_metadata-0`."""

    name: str
    workdir: Path
    port: int
    cluster_id: str
    proc: subprocess.Popen[bytes] | BrokerProcess | None = None

    @property
    def voters(self) -> str:
        return f"{CONTROLLER}@127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "metadata"

    def conf(self) -> dict[str, object]:
        return {"process.roles": "controller", "node.id": CONTROLLER, "controller.quorum.voters": self.voters,
                "listeners": f"CONTROLLER://127.0.0.1:{self.port}", "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "log.dirs": self.log_dir, **SNAPSHOTS}

    def start(self) -> None:
        conf = self.workdir / "controller.properties"
        conf.write_text(_properties(self.conf()))
        _format(conf, self.cluster_id)
        if self.name == "kafka":
            log4j = self.workdir / "log4j2.properties"
            log4j.write_text(kr._BROKER_LOG4J.format(log=self.workdir / "controller.log"))
            with open(self.workdir / "controller.out", "wb") as out:
                self.proc = subprocess.Popen(kr.java_command("kafka.Kafka", [str(conf)], heap="256m", log4j=log4j),
                                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
        else:
            # ours, on the directory Kafka's StorageTool formatted: its bootstrap checkpoint's levels
            # are the cluster's (minibroker/controller/feature_control.py)
            overrides = {k: v for k, v in self.conf().items() if k != "log.dirs"}
            self.proc = BrokerProcess(self.log_dir, port=self.port, overrides={**overrides, "cluster.id": self.cluster_id})
            self.proc.start(timeout=TIMEOUT)

    def stop(self) -> None:
        if isinstance(self.proc, BrokerProcess):
            if self.proc.proc is not None and self.proc.proc.poll() is None:
                self.proc.stop()
        elif self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def snapshots(self) -> list[Path]:
        """The snapshots written so far, oldest first (not the bootstrap one, offset 0, which the format wrote)."""
        found = [p for p in self.log_dir.rglob("__cluster_metadata-0/*.checkpoint") if not p.name.startswith("0" * 20)]
        return sorted(found)


def _start_broker(ctrl: Controller, workdir: Path) -> subprocess.Popen[bytes]:
    data_dir, port = workdir / "broker-1", free_port()
    conf = workdir / "broker.properties"
    conf.write_text(_properties({
        "process.roles": "broker", "node.id": BROKER, "controller.quorum.voters": ctrl.voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "log.dirs": data_dir}))
    _format(conf, ctrl.cluster_id)
    cmd = [sys.executable, "-m", "minibroker", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir)]
    for o in ("process.roles=broker", f"node.id={BROKER}", f"controller.quorum.voters={ctrl.voters}",
              "controller.listener.names=CONTROLLER", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"):
        cmd += ["--override", o]
    with open(workdir / "broker.log", "ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    proc.port = port  # type: ignore[attr-defined]
    return proc


def _holds_last_change(snapshot: Path) -> bool:
    records = [r.message for r in read_snapshot(snapshot).records]
    return any(isinstance(m, mr.ConfigRecord) and m.resource_name == "payments" and m.name == "retention.ms"
               for m in records)


def _tool(args: list[str]) -> None:
    r = kr.run_tool(args[0], args[1:], timeout=TIMEOUT)
    assert r.returncode == 0, f"{args}: {r.stdout}{r.stderr}"


def build_cluster_and_snapshot(name: str, workdir: Path) -> tuple[Path, Controller]:
    """Start the controller and a broker, create the topics and the config, and return a copy of
    the first snapshot written after the last change."""
    ctrl = Controller(name, workdir, free_port(), kr.random_cluster_id())
    ctrl.start()
    broker = None
    try:
        broker = _start_broker(ctrl, workdir)
        boot = f"127.0.0.1:{broker.port}"  # type: ignore[attr-defined]
        deadline = time.monotonic() + TIMEOUT
        while True:  # the broker answers once its controller has unfenced it
            r = kr.run_tool("kafka-topics", ["--bootstrap-server", boot, "--create", "--topic", TOPICS[0][0],
                                             "--partitions", str(TOPICS[0][1]), "--replication-factor", "1"],
                            timeout=TIMEOUT)
            if r.returncode == 0:
                break
            assert time.monotonic() < deadline, r.stdout + r.stderr
            time.sleep(1)
        for topic, partitions in TOPICS[1:]:
            _tool(["kafka-topics", "--bootstrap-server", boot, "--create", "--topic", topic, "--partitions",
                   str(partitions), "--replication-factor", "1"])
        _tool(["kafka-configs", "--bootstrap-server", boot, "--alter", "--entity-type", "topics", "--entity-name",
               "payments", "--add-config", "retention.ms=1000"])
        # Kafka's controller writes its snapshots in the background, so one that appears now may
        # still be of an offset before the last change: wait for one that holds it (read with our
        # snapshot reader only to know when to stop; the shell does the comparing)
        deadline = time.monotonic() + TIMEOUT
        while True:
            latest = ctrl.snapshots()[-1:]
            copy = workdir / "snapshot" / latest[0].name if latest else None
            if latest and copy is not None:
                copy.parent.mkdir(exist_ok=True)
                shutil.copy(latest[0], copy)  # the controller deletes old snapshots past its retention
                if _holds_last_change(copy):
                    return copy, ctrl
            assert time.monotonic() < deadline, f"{name}: no snapshot after the last change"
            time.sleep(0.5)
    finally:
        if broker is not None and broker.poll() is None:
            broker.terminate()
            try:
                broker.wait(60)
            except subprocess.TimeoutExpired:
                broker.kill()
        ctrl.stop()


def shell(snapshot: Path, command: list[str]) -> str:
    """One command's output. Every path here exists in both images: an empty output or "no such file
    or directory" (in either case: `ls` prints it in lower case) is kafka-shell 4.3.1's race, run
    again. Its non-interactive mode waits only for the MetadataLoader's lastAppliedOffset
    (MetadataShell.waitUntilCaughtUp), not for the image to reach the shell's publisher, so a
    command now and then sees no /image yet (seen on both controllers' snapshots under load; the
    publisher sets the whole image at once, never part of it). The empty image has a features node:
    its metadataVersion reads "Optional.empty" (seen once on Kafka's snapshot in a full run), which
    no snapshot of a formatted cluster holds."""
    for _ in range(5):
        out = _shell_once(snapshot, command)
        if out.strip() and "no such file or directory" not in out.lower() and out.strip() != "Optional.empty":
            return out
    return out


def _shell_once(snapshot: Path, command: list[str]) -> str:
    r = subprocess.run(kr.metadata_shell_command(snapshot, command), capture_output=True, text=True, timeout=TIMEOUT,
                       stdin=subprocess.DEVNULL)
    # kafka-shell's classpath has slf4j-api and no binding: SLF4J says so on stderr, nothing else should
    errors = [line for line in r.stderr.splitlines() if line.strip() and not line.startswith("SLF4J: ")]
    assert r.returncode == 0 and not errors, f"{command} on {snapshot}: {r.returncode}\n{r.stdout}{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    why = kr.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    if not kr.jars_ready():
        kr.fetch()
    if not kr.shell_jars_ready():
        if shutil.which("mvn") is None:
            pytest.skip(f"kafka-shell's jars are not in {kr.shell_libs_dir()} and mvn is not installed to fetch them")
        kr.fetch_shell()
    out = {}
    for name in ("kafka", "minibroker"):
        workdir = tmp_path_factory.mktemp(f"{name}-controller")
        out[name], _ = build_cluster_and_snapshot(name, workdir)
    yield out


# What differs between any two clusters, so between these two: replaced on both sides.
_IDS = [
    # topic ids are random per topic (Uuid.randomUuid in ReplicationControlManager); `find` lists
    # /image/topics/byId/<id> in id order, so its lines are sorted once the ids are replaced
    (re.compile(r"(/image/topics/byId/)[A-Za-z0-9_-]{22}"), r"\1<topic id>"),
    # a registration's incarnation id is random per process start, its port a free one per test
    (re.compile(r"incarnationId=[A-Za-z0-9_-]{22}"), "incarnationId=<incarnation>"),
    (re.compile(r"port=\d+"), "port=<port>"),
    # a broker's epoch is the offset of its RegisterBrokerRecord, and the two logs hold different
    # NoOpRecords and heartbeat timings before it
    (re.compile(r"(BrokerRegistration\(id=\d+, )epoch=\d+"), r"\1epoch=<offset>"),
]
# Where our controller still differs from Kafka's (docs/differences.md#metadata-shell): our text is
# turned into Kafka's, and the test fails if the difference is gone, so that this list and the doc
# are brought up to date.
KNOWN = [
    # what each controller supports: ours kraft.version 0 only (one static voter, no KIP-853
    # dynamic quorum; minibroker/features.py)
    (("cat", "/image/cluster/controllers/100"),
     "kraft.version: 0, metadata.version: 7-33, share.version: 0-2, streams.version: 0-1, transaction.version: 0-2",
     "kraft.version: 0-1, metadata.version: 7-33, share.version: 0-2, streams.version: 0-1, "
     "transaction.version: 0-2"),
]


def normalise(text: str, directory_id: str) -> str:
    """`directory_id`: the broker's log directory (meta.properties' directory.id, random at format)."""
    for pattern, replacement in _IDS:
        text = pattern.sub(replacement, text)
    text = text.replace(directory_id, "<directory.id>")
    return "\n".join(sorted(text.splitlines())) if "/image/topics/byId/" in text else text


def test_kafka_metadata_shell_reads_both_snapshots_alike(snapshots):
    outputs = {side: {tuple(c): shell(snapshots[side], c) for c in SHELL_COMMANDS} for side in ("kafka", "minibroker")}
    broker = ("cat", "/image/cluster/brokers/1")
    dirs = {}
    for side, out in outputs.items():
        m = re.search(r"directories=\[([A-Za-z0-9_-]{22})\]", out[broker])
        assert m, f"{side}: {out[broker]}"
        dirs[side] = m.group(1)
    theirs = {c: normalise(text, dirs["kafka"]) for c, text in outputs["kafka"].items()}
    ours = {c: normalise(text, dirs["minibroker"]) for c, text in outputs["minibroker"].items()}
    # the shell loaded both images (an unknown metadata.version leaves /image empty on both)
    assert theirs[("ls", "/image/topics/byName")].split() == ["orders", "payments"]
    assert theirs[("cat", "/image/features/metadataVersion")].strip() == "Optional[4.3-IV0]"
    for command, ours_text, kafkas_text in KNOWN:
        assert ours_text in ours[command], f"no longer differs, update KNOWN and the doc: {command} {ours_text}"
        ours[command] = ours[command].replace(ours_text, kafkas_text)
    for command in theirs:
        for _ in range(3):  # kafka-shell 4.3.1's race (see `shell`) can also cut an output short
            if ours[command] == theirs[command]:
                break
            theirs[command] = normalise(shell(snapshots["kafka"], list(command)), dirs["kafka"])
            ours[command] = _known(command, normalise(shell(snapshots["minibroker"], list(command)), dirs["minibroker"]))
        assert ours[command] == theirs[command], f"kafka-metadata-shell {' '.join(command)}"


def _known(command: tuple[str, ...], text: str) -> str:
    """Our output with the KNOWN differences turned into Kafka's text."""
    for known, ours_text, kafkas_text in KNOWN:
        if known == command:
            text = text.replace(ours_text, kafkas_text)
    return text
