"""LogManager: the data directory's root files in Kafka's formats, restart, topic deletion."""

from __future__ import annotations

import gc
import re
import uuid

import pytest

from minibroker_storage.checkpoint import uuid_from_kafka, uuid_to_kafka
from minibroker_storage.config import LogConfig
from minibroker_storage.log_manager import LogManager

from .helpers import Clock, batch


def overrides_config(overrides: dict) -> LogConfig:
    """Stands in for the broker's config model (minibroker.config.to_log_config), which turns a
    topic's stored overrides into its LogConfig; storage only keeps the overrides."""
    default = LogConfig()
    return LogConfig(retention_ms=int(overrides.get("retention.ms", default.retention_ms)),
                     segment_bytes=int(overrides.get("segment.bytes", default.segment_bytes)))


def started(data, clock=None, **kw) -> LogManager:
    lm = LogManager(data, LogConfig(), now_ms=clock or Clock(), topic_config=overrides_config, **kw)
    lm.startup()
    return lm


def test_first_start_writes_meta_properties(tmp_path):
    data = tmp_path / "data"
    lm = started(data, node_id=3)
    text = (data / "meta.properties").read_text()
    lines = text.splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    props = dict(line.split("=", 1) for line in lines[2:])
    assert props["version"] == "1" and props["node.id"] == "3"
    assert props["cluster.id"] == lm.cluster_id and re.fullmatch(r"[A-Za-z0-9_-]{22}", lm.cluster_id)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", props["directory.id"])
    lm.shutdown()
    again = started(data)
    assert (again.cluster_id, again.node_id) == (lm.cluster_id, 3)
    again.shutdown()
    with pytest.raises(RuntimeError):
        started(data, node_id=4)


def test_create_log_writes_partition_files(tmp_path):
    data = tmp_path / "data"
    lm = started(data)
    tid = uuid.UUID("7a0c6a39-6c49-4f9f-9a58-2b3b6f2fbd2e")
    lg = lm.create_log("orders", 2, tid, LogConfig())
    d = data / "orders-2"
    assert lg.dir == d and lm.get_log("orders", 2) is lg and lm.create_log("orders", 2, tid) is lg
    assert (d / "partition.metadata").read_text() == f"version: 0\ntopic_id: {uuid_to_kafka(tid)}"
    assert (d / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert sorted(p.name for p in d.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
        "leader-epoch-checkpoint", "partition.metadata"]
    assert lm.topic_ids() == {"orders": tid}
    lm.shutdown()


def test_uuid_text_is_kafkas_base64():
    assert uuid_to_kafka(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"  # Kafka's METADATA_TOPIC_ID
    u = uuid.uuid4()
    assert uuid_from_kafka(uuid_to_kafka(u)) == u


def test_checkpoints_in_kafkas_text_format(tmp_path):
    data = tmp_path / "data"
    lm = started(data)
    a = lm.create_log("a", 0, uuid.uuid4(), LogConfig(segment_bytes=400))
    b = lm.create_log("b", 1, uuid.uuid4(), LogConfig())
    for _ in range(4):
        a.append_as_leader(batch(2, 100))
    b.append_as_leader(batch(3))
    a.delete_records_before(5)
    a.flush(4)
    lm.checkpoint()
    assert (data / "recovery-point-offset-checkpoint").read_text() == "0\n2\na 0 4\nb 1 0\n"
    assert (data / "replication-offset-checkpoint").read_text() == "0\n2\na 0 8\nb 1 3\n"
    # only logs whose start offset is above their first segment's base offset
    assert a.segments.first.base_offset < 5
    assert (data / "log-start-offset-checkpoint").read_text() == "0\n1\na 0 5\n"
    assert (data / "cleaner-offset-checkpoint").read_text() == "0\n0\n"
    assert not list(data.glob("*.tmp"))
    lm.shutdown()
    assert (data / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":-1}'
    assert (data / "recovery-point-offset-checkpoint").read_text() == "0\n2\na 0 8\nb 1 3\n"


def test_restart_restores_logs_ids_offsets_and_overrides(tmp_path):
    data = tmp_path / "data"
    clock = Clock()
    lm = started(data, clock)
    tid = uuid.uuid4()
    lm.set_topic_overrides("t", {"retention.ms": 5000, "segment.bytes": "600"})
    for p in range(3):
        lg = lm.create_log("t", p, tid, overrides_config(lm.topic_overrides("t")))
        for _ in range(p + 1):
            lg.append_as_leader(batch(2, 200))
    lm.get_log("t", 2).delete_records_before(2)
    lm.shutdown()

    lm = started(data, clock)
    assert sorted(lm.logs()) == [("t", 0), ("t", 1), ("t", 2)]
    assert lm.topic_ids() == {"t": tid}
    assert lm.topic_overrides("t") == {"retention.ms": 5000, "segment.bytes": "600"}
    lg = lm.get_log("t", 2)
    assert (lg.config.retention_ms, lg.config.segment_bytes) == (5000, 600)
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (2, 6, 6)
    assert lg.read(2, 10**6).region is not None
    lm.set_topic_overrides("t", {})
    assert lg.config.retention_ms == LogConfig().retention_ms
    lm.shutdown()
    assert started(data, clock).topic_overrides("t") == {}


def test_unclean_restart_recovers_from_the_checkpointed_recovery_point(tmp_path):
    data = tmp_path / "data"
    lm = started(data)
    lg = lm.create_log("t", 0, uuid.uuid4(), LogConfig(segment_bytes=400))
    for _ in range(6):
        lg.append_as_leader(batch(2, 100))
    lg.flush()
    lm.checkpoint()
    lg.append_as_leader(batch(2, 100))  # after the last flush and checkpoint
    for log in lm.logs().values():
        log.close_handlers()  # crash
    assert not (data / ".kafka_cleanshutdown").exists()
    del lm  # and the crashed process is gone, with its flock on .lock (minibroker_storage.file_lock)
    gc.collect()
    lm = started(data)
    assert not lm.had_clean_shutdown
    lg = lm.get_log("t", 0)
    assert lg.log_end_offset == 14 and lg.recovery_point == 12
    lm.shutdown()


def test_delete_topic_renames_then_removes_after_the_delay(tmp_path):
    data = tmp_path / "data"
    clock = Clock()
    lm = started(data, clock)
    tid = uuid.uuid4()
    lm.set_topic_overrides("gone", {"retention.ms": 1})
    for p in range(2):
        lm.create_log("gone", p, tid).append_as_leader(batch(1))
    lm.create_log("kept", 0, uuid.uuid4())
    lm.delete_topic("gone")
    assert lm.get_log("gone", 0) is None and "gone" not in lm.topic_ids()
    deleted = sorted(p.name for p in data.iterdir() if p.name.endswith("-delete"))
    assert len(deleted) == 2 and all(re.fullmatch(r"gone-[01]\.[0-9a-f]{32}-delete", n) for n in deleted)
    assert lm.topic_overrides("gone") == {}
    assert "gone" not in (data / "recovery-point-offset-checkpoint").read_text()
    assert lm.cleanup_deleted(clock.ms + 59_999) == 0
    assert lm.cleanup_deleted(clock.ms + 60_000) == 2
    assert not any(p.name.endswith("-delete") for p in data.iterdir())
    assert (data / "kept-0").is_dir()
    lm.shutdown()


def test_delete_log_removes_one_replica_after_the_delay(tmp_path):
    """A partition reassigned away from this broker (Kafka: LogManager.asyncDelete): its
    directory renamed `-delete` at once, removed after file.delete.delay.ms; the topic's other
    partitions and its config stay."""
    data = tmp_path / "data"
    clock = Clock()
    lm = started(data, clock)
    tid = uuid.uuid4()
    lm.set_topic_overrides("moved", {"retention.ms": 1000})
    for p in range(2):
        lm.create_log("moved", p, tid).append_as_leader(batch(1))
    gone = lm.delete_log("moved", 1)
    assert gone is not None and re.fullmatch(r"moved-1\.[0-9a-f]{32}-delete", gone.name)
    assert lm.get_log("moved", 1) is None and lm.get_log("moved", 0) is not None
    assert lm.delete_log("moved", 1) is None
    assert not (data / "moved-1").exists() and (data / "moved-0").is_dir()
    assert "moved 1" not in (data / "recovery-point-offset-checkpoint").read_text()
    assert lm.topic_overrides("moved") == {"retention.ms": 1000}
    assert lm.cleanup_deleted(clock.ms + 59_999) == 0 and gone.exists()
    assert lm.cleanup_deleted(clock.ms + 60_000) == 1 and not gone.exists()
    lm.shutdown()


def test_leftover_delete_dirs_are_removed_at_startup(tmp_path):
    data = tmp_path / "data"
    lm = started(data)
    lm.create_log("x", 0, uuid.uuid4()).append_as_leader(batch(1))
    lm.shutdown()
    (data / "x-0").rename(data / "x-0.0123456789abcdef0123456789abcdef-delete")
    lm = started(data)
    assert lm.logs() == {} and [p.name for p in data.iterdir() if p.is_dir()] == []
    lm.shutdown()


def test_flush_all_and_missing_topic_id_repair(tmp_path):
    data = tmp_path / "data"
    lm = started(data)
    tid = uuid.uuid4()
    for p in range(2):
        lm.create_log("t", p, tid).append_as_leader(batch(1))
    lm.flush_all()
    assert all(lg.recovery_point == 1 for lg in lm.logs().values())
    lm.shutdown()
    (data / "t-1" / "partition.metadata").unlink()
    lm = started(data)
    assert lm.get_log("t", 1).topic_id == tid
    assert (data / "t-1" / "partition.metadata").exists()
    lm.shutdown()


def test_the_broker_epoch_of_a_clean_shutdown_is_read_back_from_every_directory(tmp_path):
    """KIP-966: a KRaft broker registers with the epoch its clean shutdown wrote (Kafka:
    LogManager.readBrokerEpochFromCleanShutdownFiles); any directory without it, or with another
    epoch, makes it -1 (an unclean shutdown to the controller)."""
    data, extra = tmp_path / "data", tmp_path / "extra"
    lm = started(data, extra_dirs=[extra])
    assert lm.broker_epoch_from_clean_shutdown_files() == -1  # a first start
    lm.shutdown(broker_epoch=42)
    for d in (data, extra):
        assert (d / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":42}'
    lm = started(data, extra_dirs=[extra])
    assert lm.broker_epoch_from_clean_shutdown_files() == 42
    assert not (data / ".kafka_cleanshutdown").exists()  # a crash from here is unclean again
    lm.shutdown(broker_epoch=43)
    (extra / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')  # the dirs disagree
    assert started(data, extra_dirs=[extra]).broker_epoch_from_clean_shutdown_files() == -1


@pytest.mark.parametrize("content", ["", "{", '{"version":1,"brokerEpoch":5}', '{"version":0}',
                                     '{"version":0,"brokerEpoch":"5"}', "[0]"])
def test_an_unreadable_clean_shutdown_file_gives_no_broker_epoch(tmp_path, content):
    data = tmp_path / "data"
    started(data).shutdown(broker_epoch=5)
    (data / ".kafka_cleanshutdown").write_text(content)
    lm = started(data)
    assert lm.had_clean_shutdown and lm.broker_epoch_from_clean_shutdown_files() == -1
