"""Snapshots of the metadata log: `<end offset>-<epoch>.checkpoint` files (KIP-630; Kafka: Snapshots,
FileRawSnapshotWriter, RecordsSnapshotWriter, RecordsSnapshotReader).

Layout, as Kafka writes it (tests/protocol/kraft_golden holds two of Kafka's): the file is a run of
RecordBatch v2 batches whose offsets start at 0 — a control batch with a SnapshotHeaderRecord
(`last_contained_log_timestamp`: the append time of the last log record the snapshot covers), data
batches of metadata records, and a control batch with a SnapshotFooterRecord — every batch with
the snapshot's epoch as partition leader epoch. The name is the snapshot id: the offset *after* the
last record it covers (20 digits) and that record's epoch (10 digits). It is written as
`.checkpoint.part`, flushed, renamed and made read-only (Kafka's `freeze`), so a file with the
final name is always whole; a deleted one is renamed `.checkpoint.deleted` first.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minibroker_protocol.metadata_serde import (
    ApiMessageAndVersion,
    ControlMessage,
    build_control_batch,
    build_metadata_batch,
    read_metadata_batches,
    write_metadata_record,
)
from minibroker_protocol.raft_records import (
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    SnapshotHeaderRecord,
)
from minibroker_protocol.records.v2 import ControlType
from minibroker_storage.log_files import fsync_dir

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".checkpoint.part"
DELETE_SUFFIX = ".checkpoint.deleted"
# Kafka: KafkaRaftClient.MAX_BATCH_SIZE_BYTES, the largest batch a snapshot writer builds
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """Kafka's OffsetAndEpoch: the end offset (exclusive) a snapshot covers and the epoch of its last record."""

    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SUFFIX}"


@dataclass(slots=True)
class Snapshot:
    """A snapshot read back: its id, header and metadata records."""

    id: SnapshotId
    header: SnapshotHeaderRecord
    records: list[ApiMessageAndVersion]


def list_snapshots(log_dir: Path) -> list[SnapshotId]:
    """The complete snapshots in `log_dir`, oldest first."""
    out = []
    for p in log_dir.iterdir() if log_dir.exists() else ():
        m = _NAME.match(p.name)
        if m:
            out.append(SnapshotId(int(m.group(1)), int(m.group(2))))
    return sorted(out)


def latest_snapshot(log_dir: Path) -> SnapshotId | None:
    ids = list_snapshots(log_dir)
    return ids[-1] if ids else None


def snapshot_bytes(snapshot_id: SnapshotId, records: Sequence[ApiMessageAndVersion], *,
                   last_contained_timestamp: int, now_ms: Callable[[], int]) -> bytes:
    """The content of a snapshot file: header batch, data batches of at most MAX_BATCH_SIZE_BYTES, footer
    batch; each batch stamped with the time it is built (`now_ms()`), as Kafka's writer does."""
    epoch = snapshot_id.epoch
    header = SNAPSHOT_HEADER_RECORD(version=0, last_contained_log_timestamp=last_contained_timestamp)
    out = bytearray(build_control_batch(ControlMessage(ControlType.SNAPSHOT_HEADER, header), base_offset=0,
                                        leader_epoch=epoch, timestamp=now_ms()))
    offset = 1
    batch: list[ApiMessageAndVersion] = []
    size = 0
    for r in records:
        n = len(write_metadata_record(r)) + 16  # the record's frame plus a record header's worst case
        if batch and size + n > MAX_BATCH_SIZE_BYTES:
            out += build_metadata_batch(batch, base_offset=offset, leader_epoch=epoch, timestamp=now_ms())
            offset += len(batch)
            batch, size = [], 0
        batch.append(r)
        size += n
    if batch:
        out += build_metadata_batch(batch, base_offset=offset, leader_epoch=epoch, timestamp=now_ms())
        offset += len(batch)
    out += build_control_batch(ControlMessage(ControlType.SNAPSHOT_FOOTER, SNAPSHOT_FOOTER_RECORD(version=0)),
                               base_offset=offset, leader_epoch=epoch, timestamp=now_ms())
    return bytes(out)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def write_snapshot(log_dir: Path, snapshot_id: SnapshotId, records: Sequence[ApiMessageAndVersion], *,
                   last_contained_timestamp: int, now_ms: Callable[[], int] = _wall_clock_ms) -> Path:
    """Write and freeze a snapshot; blocking (fsync): run it off the event loop."""
    data = snapshot_bytes(snapshot_id, records, last_contained_timestamp=last_contained_timestamp, now_ms=now_ms)
    final = log_dir / snapshot_id.file_name
    part = final.with_name(final.name.removesuffix(SUFFIX) + PARTIAL_SUFFIX)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(part, final)
    os.chmod(final, 0o400)  # frozen: Kafka makes a finished snapshot read-only
    fsync_dir(log_dir)
    return final


def read_snapshot(path: Path) -> Snapshot:
    """Parse a snapshot file; ValueError (MetadataParseError) if it is not one."""
    m = _NAME.match(path.name)
    if m is None:
        raise ValueError(f"{path.name} is not a snapshot file name")
    batches = list(read_metadata_batches(path.read_bytes()))
    if not batches or not isinstance(first := batches[0].records[0], ControlMessage) \
            or first.type != ControlType.SNAPSHOT_HEADER or not isinstance(first.message, SnapshotHeaderRecord):
        raise ValueError(f"{path.name} does not start with a snapshot header")
    last = batches[-1].records[-1] if batches[-1].records else None
    if not isinstance(last, ControlMessage) or last.type != ControlType.SNAPSHOT_FOOTER:
        raise ValueError(f"{path.name} does not end with a snapshot footer")
    records = [r for b in batches if not b.is_control for r in b.records if isinstance(r, ApiMessageAndVersion)]
    return Snapshot(SnapshotId(int(m.group(1)), int(m.group(2))), first.message, records)


def delete_snapshot(log_dir: Path, snapshot_id: SnapshotId) -> None:
    """Rename to .checkpoint.deleted (a crash leaves no half-deleted snapshot with the real name), then remove."""
    final = log_dir / snapshot_id.file_name
    gone = final.with_name(final.name.removesuffix(SUFFIX) + DELETE_SUFFIX)
    os.replace(final, gone)
    gone.unlink()
