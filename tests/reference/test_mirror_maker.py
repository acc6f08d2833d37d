"""Moving from minibroker to Apache Kafka with Kafka's own MirrorMaker 2 (docs/migrating.md).

A minibroker topic with keys, headers and timestamps, and a group's committed offsets, are
mirrored by `connect-mirror-maker` (MirrorMaker 2 in dedicated mode, from the reference jars) into
an Apache Kafka 4.4 broker: every record arrives as `mini.<topic>` with its key, value, headers and
timestamp, and the group's offsets arrive through MirrorCheckpointConnector's offset sync.

The target is a Kafka of this module's own, not the session's `kafka_reference`: MirrorMaker
leaves topics and groups behind that the side-by-side listings of test_tools.py would see.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from reference import kafka_reference as kr
from reference import mirror_maker as mm

TOPIC = "mm-src"
GROUP = "mm-group"
RECORDS = 20
# the group has read everything when it moves (its consumers stopped): MirrorMaker translates an
# offset through the offset syncs of the records before it, and a consumer's position at the end of
# a partition translates to the end of the mirrored one
COMMITTED = {0: RECORDS // 2, 1: RECORDS // 2}
TS = int(time.time() * 1000) - 10_000


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kr.KafkaReference]:
    why = kr.missing_prerequisites() or mm.missing_prerequisites()
    if why is not None:
        pytest.skip(f"REFERENCE BROKER UNAVAILABLE: {why}")
    mm.fetch()
    with kr.KafkaReference() as k:
        yield k


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from minibroker.testing import BrokerThread

    with BrokerThread(tmp_path_factory.mktemp("mm-source") / "data",
                      overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def _records() -> list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]]:
    return [(i % 2, b"key-%d" % i, b"value-%d" % i, [("h", b"%d" % i), ("trace", b"t")], TS + i)
            for i in range(RECORDS)]


def _fill_source(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(20)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part, key, value, headers, ts in _records():
        p.produce(TOPIC, value, key, partition=part, headers=headers, timestamp=ts)
    assert p.flush(20) == 0


def _commit_source(bootstrap: str) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()], asynchronous=False)
    c.close()


def _properties(path: Path, source: str, target: str) -> Path:
    one = "1"
    props = {
        "clusters": "mini, kafka",
        "mini.bootstrap.servers": source,
        "kafka.bootstrap.servers": target,
        "mini->kafka.enabled": "true",
        "kafka->mini.enabled": "false",
        "mini->kafka.topics": TOPIC,
        "mini->kafka.groups": GROUP,
        # one broker on each side
        "replication.factor": one, "checkpoints.topic.replication.factor": one,
        "heartbeats.topic.replication.factor": one, "offset-syncs.topic.replication.factor": one,
        "offset.storage.replication.factor": one, "status.storage.replication.factor": one,
        "config.storage.replication.factor": one,
        # minibroker has no ACLs to copy (DescribeAcls is not served)
        "sync.topic.acls.enabled": "false",
        # an offset sync for every record, so a committed offset translates exactly
        "offset.lag.max": "0",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": one,
        "emit.checkpoints.interval.seconds": one,
        "refresh.topics.interval.seconds": one,
        "refresh.groups.interval.seconds": one,
    }
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _consume_all(bootstrap: str, topic: str, want: int, deadline: float) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm-check", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    got = []
    try:
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
    finally:
        c.close()
    return got


def _committed(bootstrap: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(f"mini.{TOPIC}", p) for p in (0, 1)],
                                                             timeout=10)}
    finally:
        c.close()


def test_mirror_maker_copies_a_minibroker_topic_and_group_offsets(
        source: object, target: kr.KafkaReference, tmp_path: Path) -> None:
    src = source.bootstrap  # type: ignore[attr-defined]
    _fill_source(src)
    props = _properties(tmp_path / "mm2.properties", src, target.bootstrap)
    log = (tmp_path / "mm2.log").open("w")
    proc = subprocess.Popen(mm.command(props), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        start = time.monotonic()
        deadline = start + 45
        got: list = []
        while time.monotonic() < deadline and len(got) < RECORDS:
            got = _consume_all(target.bootstrap, f"mini.{TOPIC}", RECORDS, min(deadline, time.monotonic() + 5))
        assert proc.poll() is None, (tmp_path / "mm2.log").read_text()[-4000:]
        _commit_source(src)
        seen = sorted((m.partition(), m.key(), m.value(), [(k, v) for k, v in (m.headers() or [])],
                       m.timestamp()[1]) for m in got)
        assert seen == sorted(_records()), (tmp_path / "mm2.log").read_text()[-4000:]
        # MirrorCheckpointConnector writes the group's translated offsets into the target
        committed: dict[int, int] = {}
        while time.monotonic() < deadline:
            committed = _committed(target.bootstrap)
            if committed == COMMITTED:
                break
            time.sleep(0.5)
        assert committed == COMMITTED, (tmp_path / "mm2.log").read_text()[-4000:]
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
