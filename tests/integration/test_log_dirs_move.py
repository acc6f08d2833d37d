"""AlterReplicaLogDirs on a single broker (no controller): `__consumer_offsets` moved to the
other log dir while a group commits, the coordinator's later writes land in the moved log and
survive a restart (the coordinators find the log through the topic registry, which the swap
updates); an unknown directory is LOG_DIR_NOT_FOUND, an unknown partition REPLICA_NOT_AVAILABLE."""

from __future__ import annotations

import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

from bench.crash_loop import Wire
from minibroker.testing import BrokerThread
from minibroker_protocol.apis import alter_replica_log_dirs
from minibroker_protocol.errors import ErrorCode

R = alter_replica_log_dirs.REQUEST


def alter(wire: Wire, path: Path, topic: str, partition: int) -> int:
    resp = wire.call(alter_replica_log_dirs.API, 2, R(dirs=[R.AlterReplicaLogDir(
        path=str(path), topics=[R.AlterReplicaLogDirTopic(name=topic, partitions=[partition])])]))
    return int(resp.results[0].partitions[0].error_code)


def test_move_the_offsets_partition_while_a_group_commits(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    overrides = {"log.dirs": f"{a},{b}", "offsets.topic.num.partitions": 1}
    broker = BrokerThread(tmp_path, overrides=overrides)
    broker.start()
    try:
        p = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for i in range(5):
            p.send("data", b"v%d" % i, partition=0)
        p.flush()
        p.close()
        c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="g", enable_auto_commit=False)
        tp = TopicPartition("data", 0)
        c.assign([tp])
        c.commit({tp: OffsetAndMetadata(1, None, -1)})
        source = next(d for d in (a, b) if (d / "__consumer_offsets-0").is_dir())
        target = b if source == a else a
        wire = Wire(int(broker.bootstrap.rsplit(":", 1)[1]), timeout=10)
        assert alter(wire, tmp_path / "nowhere", "__consumer_offsets", 0) == ErrorCode.LOG_DIR_NOT_FOUND
        assert alter(wire, target, "nosuch", 0) == ErrorCode.REPLICA_NOT_AVAILABLE
        assert alter(wire, source, "__consumer_offsets", 0) == ErrorCode.NONE  # already there
        assert alter(wire, target, "__consumer_offsets", 0) == ErrorCode.NONE
        wire.close()
        deadline = time.monotonic() + 30
        while not (target / "__consumer_offsets-0").is_dir():
            assert time.monotonic() < deadline, "the move never finished"
            time.sleep(0.05)
        assert not (source / "__consumer_offsets-0").exists()
        c.commit({tp: OffsetAndMetadata(4, None, -1)})  # written to the moved log
        c.close()
        assert broker.committed("g", "data", 0) == 4
    finally:
        broker.stop()
    again = BrokerThread(tmp_path, overrides=overrides)
    again.start()
    try:
        assert (target / "__consumer_offsets-0").is_dir()
        c = KafkaConsumer(bootstrap_servers=again.bootstrap, group_id="g", enable_auto_commit=False)
        assert c.committed(TopicPartition("data", 0)) == 4
        c.close()
    finally:
        again.stop()
