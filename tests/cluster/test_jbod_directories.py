"""JBOD on a cluster (KIP-858, issue 29): three minibroker brokers with two `log.dirs` each and our
controller. Each replica's directory reaches the metadata log (the broker tells the controller
with AssignReplicasToDirs where it placed the replica the controller recorded UNASSIGNED), and a
failed directory makes the controller move leadership and the ISR off its replicas
(BrokerHeartbeat OfflineLogDirs), so producers with acks=all go on and lose nothing.

The metadata is read from the controller's own log files (a copy), decoded as the brokers decode
it: the directories are what every broker and Kafka's tools read."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.crash_loop import Wire
from minibroker.metadata.image import MetadataDelta, MetadataImage
from minibroker_protocol.apis import alter_replica_log_dirs
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, read_metadata_batches
from minibroker_storage.checkpoint import uuid_from_kafka
from tests.cluster.cluster_helpers import MiniCluster, consume_all, wait_until

MIGRATING, UNASSIGNED = uuid.UUID(int=0), uuid.UUID(int=1)  # Kafka's DirectoryId
# the internal topics replicated on every broker (tests/cluster/conftest.py's), so the group of the
# consumer reading back survives a failed directory
OVERRIDES = {"offsets.topic.replication.factor": 3, "transaction.state.log.replication.factor": 3}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    root = tmp_path_factory.mktemp("jbod")
    c = MiniCluster(root, overrides={"log.flush.offset.checkpoint.interval.ms": 100, **OVERRIDES})
    for b in c.brokers.values():  # two directories each: the data dir and a second one
        b.overrides["log.dirs"] = f"{b.data_dir},{b.data_dir.parent / 'second'}"
    c.start()
    try:
        yield c
    finally:
        c.stop()


def controller_image(cluster: MiniCluster, tmp: Path) -> MetadataImage:
    """The controller's metadata log replayed (a copy of its segments, read as an observer reads them)."""
    src = cluster.controller.data_dir / "__cluster_metadata-0"
    dst = tmp / f"metadata-{time.monotonic_ns()}"
    shutil.copytree(src, dst)
    delta = MetadataDelta(MetadataImage())
    for seg in sorted(dst.glob("*.log")):
        for batch in read_metadata_batches(seg.read_bytes()):
            for r in batch.records:
                if isinstance(r, ApiMessageAndVersion):
                    delta.replay(r)
    return delta.apply(0, 0)


def dirs_of(cluster: MiniCluster, node: int) -> dict[Path, uuid.UUID]:
    """Broker `node`'s log dirs and the directory.id of their meta.properties."""
    b = cluster.brokers[node]
    out = {}
    for d in (b.data_dir, b.data_dir.parent / "second"):
        props = dict(line.split("=", 1) for line in (d / "meta.properties").read_text().splitlines()
                     if "=" in line and not line.startswith("#"))
        out[d] = uuid_from_kafka(props["directory.id"])
    return out


def placement(cluster: MiniCluster, topic: str) -> dict[tuple[int, int], uuid.UUID]:
    """{(broker, partition): the id of the directory holding the replica's log}."""
    out = {}
    for n in cluster.brokers:
        for d, dir_id in dirs_of(cluster, n).items():
            for part in d.glob(f"{topic}-*"):
                if part.is_dir() and part.name.rsplit("-", 1)[1].isdigit():
                    out[(n, int(part.name.rsplit("-", 1)[1]))] = dir_id
    return out


def recorded(image: MetadataImage, topic: str) -> dict[tuple[int, int], uuid.UUID]:
    t = image.topic(topic)
    assert t is not None
    return {(r, p): d for p, reg in t.partitions.items() for r, d in zip(reg.replicas, reg.directories, strict=True)}


def test_each_replica_is_recorded_in_its_directory(cluster: MiniCluster, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("jbod-placed", 6, 3)])["jbod-placed"].result(30)
    image = controller_image(cluster, tmp_path)
    assert {b.id: len(b.log_dirs) for b in image.brokers.values()} == {1: 2, 2: 2, 3: 2}
    for n in cluster.brokers:
        assert set(image.brokers[n].log_dirs) == set(dirs_of(cluster, n).values())

    def assigned() -> bool:
        rec = recorded(controller_image(cluster, tmp_path), "jbod-placed")
        return len(rec) == 18 and rec == placement(cluster, "jbod-placed")
    wait_until(assigned, "every replica's directory is in the metadata", 30)
    rec = recorded(controller_image(cluster, tmp_path), "jbod-placed")
    assert not {UNASSIGNED, MIGRATING} & set(rec.values())
    # each broker spread its six replicas over its two directories (the least full one first)
    for n in cluster.brokers:
        used = [d for (b, _), d in rec.items() if b == n]
        assert sorted(used.count(d) for d in set(used)) == [3, 3]


def move(cluster: MiniCluster, node: int, topic: str, partition: int, target: Path) -> None:
    """AlterReplicaLogDirs to broker `node` (what kafka-reassign-partitions sends with log_dirs)."""
    wire = Wire(cluster.brokers[node].port, timeout=10)
    R = alter_replica_log_dirs.REQUEST
    resp = wire.call(alter_replica_log_dirs.API, 2, R(dirs=[R.AlterReplicaLogDir(
        path=str(target), topics=[R.AlterReplicaLogDirTopic(name=topic, partitions=[partition])])]))
    wire.close()
    assert resp.results[0].partitions[0].error_code == 0
    target_id = dirs_of(cluster, node)[target]
    # the copy ends, the broker swaps the logs and tells the controller (Kafka: AssignmentsManager)
    wait_until(lambda: recorded(controller_image(cluster, cluster.root), topic)[(node, partition)] == target_id
               and placement(cluster, topic)[(node, partition)] == target_id,
               f"{topic}-{partition}'s new directory on broker {node} is recorded", 30)


def test_a_replica_moved_by_alter_replica_log_dirs_is_recorded_in_its_new_directory(
        cluster: MiniCluster, tmp_path: Path) -> None:
    topic = "jbod-moved"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    wait_until(lambda: recorded(controller_image(cluster, tmp_path), topic) == placement(cluster, topic),
               "the replicas' directories are in the metadata", 30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(50):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0
    before = recorded(controller_image(cluster, tmp_path), topic)[(2, 0)]
    move(cluster, 2, topic, 0, next(d for d, i in dirs_of(cluster, 2).items() if i != before))
    assert len(consume_all(cluster.bootstrap, topic, 1, 50, timeout=30)) == 50


def test_a_failed_directory_moves_leadership_and_producers_lose_nothing(cluster: MiniCluster, tmp_path: Path) -> None:
    topic = "jbod-failover"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
    wait_until(lambda: len(recorded(controller_image(cluster, tmp_path), topic)) == 6
               and recorded(controller_image(cluster, tmp_path), topic) == placement(cluster, topic),
               "the replicas' directories are in the metadata", 30)
    image = controller_image(cluster, tmp_path)
    t = image.topic(topic)
    assert t is not None
    victim_p, victim = 0, t.partitions[0].leader
    # the leader's replica in its second directory: the data dir holds this broker's metadata
    # and internal topics (Kafka halts a broker whose metadata log directory fails)
    failing = cluster.brokers[victim].data_dir.parent / "second"
    failed_id = dirs_of(cluster, victim)[failing]
    if recorded(image, topic)[(victim, victim_p)] != failed_id:
        move(cluster, victim, topic, victim_p, failing)

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 60000})
    acked: list[bytes] = []
    failed: list[str] = []

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked.append(msg.value())  # type: ignore[attr-defined]
        else:
            failed.append(str(err))

    def produce(n: int, tag: str) -> None:
        for i in range(n):
            producer.produce(topic, value=f"{tag}-{i}".encode(), partition=i % 2, on_delivery=delivered)
            producer.poll(0)
        assert producer.flush(60) == 0

    produce(100, "before")
    assert len(acked) == 100, failed[:3]
    # the directory is replaced by a file under the running broker: its next checkpoint fails
    failing.rename(failing.parent / "gone")
    failing.write_text("not a directory any more")

    def moved() -> bool:
        img = controller_image(cluster, tmp_path)
        part = img.topic(topic).partitions[victim_p]  # type: ignore[union-attr]
        return part.leader not in (victim, -1) and victim not in part.isr \
            and failed_id not in img.brokers[victim].log_dirs
    wait_until(moved, f"broker {victim}'s replica of {topic}-{victim_p} leaves leadership and the ISR", 30)
    image = controller_image(cluster, tmp_path)
    assert image.brokers[victim].log_dirs and not image.brokers[victim].fenced  # its other directory serves
    produce(100, "after")
    assert len(acked) == 200, (failed[:3], cluster.logs()[-6000:])
    got = consume_all(cluster.bootstrap, topic, 2, 200, timeout=60)
    assert sorted(v for _, _, v in got) == sorted(acked)
    # the replica in the failed directory stays out: it fetches no more (a leader would count an
    # idle follower caught up and bring it back into the ISR)
    part = controller_image(cluster, tmp_path).topic(topic).partitions[victim_p]  # type: ignore[union-attr]
    assert victim not in part.isr and part.leader != victim
