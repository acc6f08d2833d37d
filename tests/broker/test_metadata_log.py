"""The single voter's metadata log, snapshots and quorum-state in Kafka's formats (minibroker/raft)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from minibroker.raft.metadata_log import METADATA_DIR, MetadataLog
from minibroker.raft.quorum_state import read_quorum_state
from minibroker.raft.snapshots import (
    SnapshotId,
    list_snapshots,
    read_snapshot,
    snapshot_bytes,
    write_snapshot,
)
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import ApiMessageAndVersion, ControlMessage, read_metadata_batches
from minibroker_protocol.raft_records import SnapshotHeaderRecord
from minibroker_protocol.records.v2 import ControlType, decode_batches

GOLDEN = Path(__file__).resolve().parent.parent / "protocol" / "kraft_golden"
TID = uuid.UUID("c68858cf-7b48-4aab-b11c-b33b151cf2b3")


def topic_records(name: str = "golden", partitions: int = 2) -> list[ApiMessageAndVersion]:
    out = [ApiMessageAndVersion(mr.TOPIC_RECORD(name=name, topic_id=TID), 0)]
    out += [ApiMessageAndVersion(mr.PARTITION_RECORD(partition_id=p, topic_id=TID, replicas=[1], isr=[1], leader=1,
                                                     leader_epoch=0, partition_epoch=0), 2) for p in range(partitions)]
    return out


def test_kafkas_snapshot_is_rewritten_byte_for_byte() -> None:
    name = "00000000000000000048-0000000001.checkpoint"
    kafka = read_snapshot(GOLDEN / name)
    assert kafka.id == SnapshotId(48, 1) and kafka.id.file_name == name
    stamps = iter([b.base_timestamp for b in decode_batches((GOLDEN / name).read_bytes())])
    ours = snapshot_bytes(kafka.id, kafka.records, last_contained_timestamp=kafka.header.last_contained_log_timestamp,
                          now_ms=lambda: next(stamps))
    assert ours == (GOLDEN / name).read_bytes()


def test_a_leader_writes_epochs_records_and_commits_on_flush(tmp_path: Path) -> None:
    clock = [1_700_000_000_000]
    ml = MetadataLog.open(tmp_path, node_id=1, now_ms=lambda: clock[0])
    assert ml.become_leader([1]) == 1
    assert read_quorum_state(ml.dir) is not None
    assert (ml.dir / "quorum-state").read_text() == (
        '{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1}],"data_version":0}')
    first, last = ml.append(topic_records())
    assert (first, last) == (1, 3)
    assert list(ml.batches(0)) and ml.read(0, 1 << 20).region is None  # nothing committed yet
    assert ml.flush() == 4
    batches = list(read_metadata_batches(ml.read(0, 1 << 20).region.read_all()))  # type: ignore[union-attr]
    assert [(b.base_offset, b.leader_epoch, b.is_control) for b in batches] == [(0, 1, True), (1, 1, False)]
    assert batches[1].records == topic_records()
    ml.close()
    # a restart is the next epoch; the log, its epochs and its records are still there
    again = MetadataLog.open(tmp_path, node_id=1, now_ms=lambda: clock[0])
    assert again.end_offset == 4 and again.become_leader([1]) == 2
    again.flush()
    assert [b.leader_epoch for b in again.batches(0)] == [1, 1, 2]
    assert (again.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n2 4\n"
    assert (again.dir / "partition.metadata").read_text() == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    again.close()


def test_a_snapshot_is_written_frozen_and_read_back(tmp_path: Path) -> None:
    ml = MetadataLog.open(tmp_path, node_id=1, now_ms=lambda: 1_700_000_000_000)
    ml.become_leader([1])
    ml.append(topic_records())
    ml.flush()
    with pytest.raises(ValueError):
        ml.create_snapshot(ml.end_offset + 1, [], 0)
    path = ml.create_snapshot(ml.end_offset, topic_records(), ml.last_append_timestamp)
    assert path.name == "00000000000000000004-0000000001.checkpoint"
    assert os.stat(path).st_mode & 0o777 == 0o400
    assert list_snapshots(ml.dir) == [SnapshotId(4, 1)]
    snap = ml.latest_snapshot()
    assert snap is not None and snap.records == topic_records()
    assert isinstance(snap.header, SnapshotHeaderRecord) and snap.header.last_contained_log_timestamp == 1_700_000_000_000
    ml.close()


def test_a_kafka_formatted_dir_opens_with_its_bootstrap_snapshot(tmp_path: Path) -> None:
    (tmp_path / METADATA_DIR).mkdir()
    name = "00000000000000000000-0000000000.checkpoint"
    (tmp_path / METADATA_DIR / name).write_bytes((GOLDEN / name).read_bytes())
    ml = MetadataLog.open(tmp_path, node_id=1)
    snap = ml.latest_snapshot()
    assert snap is not None and snap.id == SnapshotId(0, 0)
    levels = {r.message.name: r.message.feature_level for r in snap.records
              if isinstance(r.message, mr.FeatureLevelRecord)}
    assert "metadata.version" in levels and ml.end_offset == 0
    ml.close()


def test_snapshot_batches_split_at_the_batch_size(tmp_path: Path) -> None:
    many = [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=2, resource_name="t", name=f"k{i}", value="v" * 1000), 0)
            for i in range(20_000)]
    data = snapshot_bytes(SnapshotId(10, 3), many, last_contained_timestamp=5, now_ms=lambda: 6)
    batches = list(read_metadata_batches(data))
    assert len(batches) > 3 and all(b.size_in_bytes <= 8 * 1024 * 1024 for b in batches)
    assert [b.base_offset for b in batches][:2] == [0, 1] and batches[-1].last_offset == len(many) + 1
    assert isinstance(batches[-1].records[0], ControlMessage) and batches[-1].records[0].type == ControlType.SNAPSHOT_FOOTER
    path = write_snapshot(tmp_path, SnapshotId(10, 3), many, last_contained_timestamp=5, now_ms=lambda: 6)
    assert read_snapshot(path).records == many
