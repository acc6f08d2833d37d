"""LogConfig defaults; checkpoint and metadata files; leader epoch cache.

Parsing topic keys into a LogConfig is the broker's config model: tests/test_config.py."""

from __future__ import annotations

import dataclasses

import pytest

from minibroker_storage.checkpoint import (
    CorruptCheckpoint,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    read_properties,
)
from minibroker_storage.config import LogConfig
from minibroker_storage.leader_epoch import LeaderEpochFileCache


def test_defaults_are_kafkas():
    c = LogConfig()
    assert (c.segment_bytes, c.segment_ms, c.segment_index_bytes, c.index_interval_bytes) == (
        1 << 30, 7 * 24 * 3600 * 1000, 10 << 20, 4096)
    assert (c.retention_ms, c.retention_bytes, c.max_message_bytes, c.file_delete_delay_ms) == (
        604800000, -1, 1048588, 60000)
    assert c.flush_messages == c.flush_ms == 2**63 - 1
    assert c.delete and not c.compact and not c.log_append_time
    assert c.record_version == 2


def test_log_config_is_immutable_and_its_derived_flags_follow_the_fields():
    c = LogConfig(cleanup_policy="compact,delete", message_timestamp_type="LogAppendTime", record_version=1)
    assert c.compact and c.delete and c.log_append_time and c.record_version == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.retention_ms = 1  # type: ignore[misc]
    d = dataclasses.replace(c, cleanup_policy="delete")
    assert d.delete and not d.compact and c.compact  # a new config, with its own cached flags
    assert d == LogConfig(cleanup_policy="delete", message_timestamp_type="LogAppendTime", record_version=1)


def test_offset_checkpoint_round_trip_and_errors(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    assert f.read() == {}
    f.write({("b", 1): 7, ("a", 0): 12})
    assert f.path.read_text() == "0\n2\na 0 12\nb 1 7\n"
    assert f.read() == {("a", 0): 12, ("b", 1): 7}
    for text in ("1\n0\n", "0\n2\na 0 1\n", "0\n1\na 0\n", "x\n"):
        f.path.write_text(text)
        with pytest.raises(CorruptCheckpoint):
            f.read()


def test_partition_metadata_and_properties(tmp_path):
    f = PartitionMetadataFile(tmp_path / "partition.metadata")
    f.path.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptCheckpoint):
        f.read()  # the zero id is refused, as Kafka does
    p = tmp_path / "meta.properties"
    p.write_text("#\n#Mon Jan 02 00:00:00 UTC 2023\ncluster.id=abc\nnode.id : 1\nversion=1\n")
    assert read_properties(p) == {"cluster.id": "abc", "node.id": "1", "version": "1"}


def test_leader_epoch_cache(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    c = LeaderEpochFileCache(path)
    assert c.latest_epoch is None and c.end_offset_for(0, 10) == (-1, -1)
    c.assign(0, 0)
    c.assign(0, 5)  # same epoch, later start: nothing to record
    c.assign(2, 10)
    c.assign(4, 30)
    assert LeaderEpochCheckpointFile(path).read() == [(0, 0), (2, 10), (4, 30)]
    assert path.read_text() == "0\n3\n0 0\n2 10\n4 30\n"
    assert [c.epoch_for_offset(o) for o in (0, 9, 10, 29, 31)] == [0, 0, 2, 2, 4]
    assert c.end_offset_for(4, 50) == (4, 50)
    assert c.end_offset_for(3, 50) == (2, 30)  # epoch 3 never led: answer with 2 and where 4 began
    assert c.end_offset_for(1, 50) == (0, 10)
    c.truncate_from_start(12)
    assert c.entries() == [(2, 12), (4, 30)]
    c.truncate_from_end(30)
    assert c.entries() == [(2, 12)]
    c.assign(3, 11)  # a start below the last entry's: the conflicting entry goes
    assert LeaderEpochFileCache(path).entries() == [(3, 11)]
