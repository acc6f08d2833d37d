"""The metadata log `__cluster_metadata-0` of a single KRaft voter (Kafka: KafkaMetadataLog, the log side
of KafkaRaftClient for a leader whose quorum is itself).

Theory of operation. The log is a storage `Log` (the same segments, indexes and leader-epoch
checkpoint as any partition) in `<metadata log dir>/__cluster_metadata-0`, with Kafka's topic id
for it (Uuid.METADATA_TOPIC_ID, `AAAAAAAAAAAAAAAAAAAAAQ`), so Kafka's `kafka-dump-log
--cluster-metadata-decoder` reads its segments. `become_leader` starts a new epoch (one more than
quorum-state's), writes quorum-state and appends the LeaderChangeMessage control batch Kafka's
leader writes first in an epoch. Appends go through `Log.append_as_leader` (offsets and the
partition leader epoch are assigned there, as for any leader). A single voter is the whole
majority: an append is committed once it is on disk, so `flush()` moves the high watermark to the
log end (Kafka's leader advances it when the majority's fetch offsets do, its own flushed offset
included). Readers — the controller replaying at start, brokers fetching as observers — see only
what is below the high watermark. Snapshots (snapshots.py) sit in the same directory.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from minibroker.raft.quorum_state import ElectionState, read_quorum_state, write_quorum_state
from minibroker.raft.snapshots import (
    Snapshot,
    SnapshotId,
    delete_snapshot,
    latest_snapshot,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)
from minibroker_protocol.metadata_serde import (
    ApiMessageAndVersion,
    ControlMessage,
    MetadataBatch,
    build_control_batch,
    build_metadata_batch,
    read_metadata_batches,
)
from minibroker_protocol.raft_records import LEADER_CHANGE_MESSAGE
from minibroker_protocol.records.v2 import ControlType
from minibroker_storage.append_origin import AppendOrigin
from minibroker_storage.config import LogConfig
from minibroker_storage.log import FetchDataInfo, Log

METADATA_TOPIC = "__cluster_metadata"  # Kafka: Topic.CLUSTER_METADATA_TOPIC_NAME
METADATA_DIR = f"{METADATA_TOPIC}-0"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka: Uuid.METADATA_TOPIC_ID
# Kafka: KafkaRaftClient.MAX_BATCH_SIZE_BYTES; the metadata log's max.message.bytes
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
_READ_CHUNK = 1024 * 1024


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class MetadataLogConfig:
    """Kafka's metadata.log.* keys that shape the log (MetadataLogConfig)."""

    segment_bytes: int = 1024 * 1024 * 1024  # metadata.log.segment.bytes
    segment_ms: int = 7 * 24 * 60 * 60 * 1000  # metadata.log.segment.ms


class MetadataLog:
    """`__cluster_metadata-0` as its only voter writes and reads it."""

    def __init__(self, log: Log, *, node_id: int, now_ms: Callable[[], int] = _wall_clock_ms):
        self.log = log
        self.dir = log.dir
        self.node_id = node_id
        self._now_ms = now_ms
        self.epoch = 0
        self.high_watermark = 0
        self.last_append_timestamp = -1  # the append time of the last record written (snapshot headers)

    @classmethod
    def open(cls, log_dir: Path, *, node_id: int, config: MetadataLogConfig | None = None,
             now_ms: Callable[[], int] = _wall_clock_ms) -> MetadataLog:
        """Open (recovering it: Kafka's metadata log has no recovery-point checkpoint) or create the log."""
        cfg = config or MetadataLogConfig()
        log_config = LogConfig(segment_bytes=cfg.segment_bytes, segment_ms=cfg.segment_ms, retention_ms=-1,
                               max_message_bytes=MAX_BATCH_SIZE_BYTES)
        # the log starts where its first segment does: no segment is deleted for a snapshot yet, so an
        # observer can always fetch from 0 (docs/differences.md#metadata-log-retention)
        log = Log.open(log_dir / METADATA_DIR, log_config, recovery_point=0, clean_shutdown=False, now_ms=now_ms,
                       topic_id=METADATA_TOPIC_ID)
        return cls(log, node_id=node_id, now_ms=now_ms)

    # -- the leader ------------------------------------------------------------------------------
    def become_leader(self, voters: Sequence[int]) -> int:
        """Start the next epoch with this node as leader: quorum-state, then a LeaderChange batch."""
        stored = read_quorum_state(self.dir)
        self.epoch = max(stored.leader_epoch if stored else 0, self.log.latest_epoch or 0) + 1
        write_quorum_state(self.dir, ElectionState(self.epoch, self.node_id, -1, tuple(voters)))
        voter = LEADER_CHANGE_MESSAGE.Voter
        change = LEADER_CHANGE_MESSAGE(version=0, leader_id=self.node_id, voters=[voter(voter_id=v) for v in voters],
                                       granting_voters=[voter(voter_id=self.node_id)])
        self.append_control(ControlMessage(ControlType.LEADER_CHANGE, change))
        return self.epoch

    def append(self, records: Sequence[ApiMessageAndVersion]) -> tuple[int, int]:
        """Append one batch of records in the current epoch; (first offset, last offset). Not committed
        until `flush`. The records of one call stay in one batch: Kafka applies a batch atomically."""
        now = self._now_ms()
        info = self.log.append_as_leader(
            build_metadata_batch(records, base_offset=0, leader_epoch=self.epoch, timestamp=now),
            leader_epoch=self.epoch, origin=AppendOrigin.RAFT_LEADER)
        self.last_append_timestamp = now
        return info.first_offset, info.last_offset

    def append_control(self, control: ControlMessage) -> int:
        now = self._now_ms()
        info = self.log.append_as_leader(
            build_control_batch(control, base_offset=0, leader_epoch=self.epoch, timestamp=now),
            leader_epoch=self.epoch, origin=AppendOrigin.RAFT_LEADER)
        self.last_append_timestamp = now
        return info.first_offset

    def flush(self) -> int:
        """fsync the log and commit what it holds (one voter: itself is the majority). Blocking."""
        end = self.log.log_end_offset
        self.log.flush()
        self.high_watermark = max(self.high_watermark, end)
        return self.high_watermark

    # -- readers ---------------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    def read(self, offset: int, max_bytes: int) -> FetchDataInfo:
        """Committed batches from `offset`, as a file region (an observer's Fetch: sent with sendfile)."""
        return self.log.read(offset, max_bytes, max_offset=self.high_watermark)

    def batches(self, start: int, end: int | None = None) -> Iterator[MetadataBatch]:
        """Decoded batches from the one holding `start` up to `end` (default: the whole log)."""
        stop = self.log.log_end_offset if end is None else end
        offset = start
        while offset < stop:
            info = self.log.read(offset, _READ_CHUNK, max_offset=stop)
            if info.region is None:
                return
            last = offset
            for batch in read_metadata_batches(info.region.read_all()):
                if batch.last_offset >= offset:
                    yield batch
                last = batch.last_offset + 1
            if last <= offset:
                return
            offset = last

    # -- snapshots -------------------------------------------------------------------------------
    def latest_snapshot(self) -> Snapshot | None:
        sid = latest_snapshot(self.dir)
        return read_snapshot(self.dir / sid.file_name) if sid is not None else None

    def snapshot_id_at(self, end_offset: int) -> SnapshotId:
        """The id of a snapshot covering everything before `end_offset` (the epoch of its last record)."""
        epoch = self.log.leader_epoch_for_offset(end_offset - 1) if end_offset > 0 else 0
        return SnapshotId(end_offset, epoch if epoch is not None else self.epoch)

    def create_snapshot(self, end_offset: int, records: Sequence[ApiMessageAndVersion],
                        last_contained_timestamp: int) -> Path:
        """Write a snapshot of the state after every record before `end_offset` (committed only). Blocking."""
        if end_offset > self.high_watermark:
            raise ValueError(f"cannot snapshot at {end_offset}: the high watermark is {self.high_watermark}")
        return write_snapshot(self.dir, self.snapshot_id_at(end_offset), records,
                              last_contained_timestamp=last_contained_timestamp, now_ms=self._now_ms)

    def delete_before_snapshot(self, retention_bytes: int, retention_ms: int) -> int:
        """Once the log is over `metadata.max.retention.bytes` or its oldest segment older than
        `metadata.max.retention.ms`, start it at the latest snapshot: the segments wholly before it
        go, and so do the older snapshots (Kafka: KafkaMetadataLog.maybeClean). Observers behind the
        new start are sent to the snapshot (Fetch's snapshot_id, then FetchSnapshot). Returns the
        segments deleted. Blocking."""
        latest = latest_snapshot(self.dir)
        if latest is None or latest.end_offset <= self.log.log_start_offset:
            return 0
        oldest = self.log.segments.first
        too_big = retention_bytes >= 0 and self.log.size_in_bytes() > retention_bytes
        too_old = retention_ms >= 0 and oldest is not None and \
            self._now_ms() - oldest.largest_timestamp() > retention_ms
        if not (too_big or too_old):
            return 0
        self.log.increment_log_start_offset(latest.end_offset, "snapshot generated")
        deleted = self.log.delete_old_segments()
        for old in list_snapshots(self.dir):
            if old < latest:
                delete_snapshot(self.dir, old)
        return deleted

    def close(self) -> None:
        self.log.flush()
        self.log.close()
