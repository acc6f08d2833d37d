"""One partition's log: `<log.dirs>/<topic>-<partition>/` (Kafka: UnifiedLog + LocalLog).

Theory of operation.

Append (the back half of Produce). minibroker_storage.log_validator checks the batches of an append
(headers, CRC, records for a Produce request, timestamps, old formats) and nothing is written
unless every batch passes; it then assigns offsets in the batch headers (baseOffset rewritten,
the leader epoch, for `LogAppendTime` the broker's time), in the request's own bytes when they
are writable. One write appends the whole run to the active segment, after a roll if the
segment is full by bytes, age or index. No record is decoded.

Offsets. LEO = next offset to assign. HW = what consumers may read. Who moves the HW is the
replication layer's business (Kafka: Partition.maybeIncrementLeaderHW, the follower's fetch
response): `high_watermark_follows_leo` is set while the ISR is this replica alone (and for a log
no partition owns yet), so every append is committed at once and HW follows LEO; otherwise the
HW moves only by `update_high_watermark` / `maybe_increment_high_watermark`, and the
`replication-offset-checkpoint` keeps it across restarts (LogManager).

Follower appends (`append_as_follower`, Kafka: UnifiedLog.appendAsFollower) take the leader's
batches as they are: offsets and partition leader epochs kept, each header's CRC checked and the
offsets checked to increase from the LEO, by walking batch headers only. `truncate_to` and
`truncate_fully_and_start_at` cut the log for the divergence protocol (KIP-101/279): segments,
indexes, the leader epoch cache and the producer state go back with it. The last stable offset (LSO), the read
limit of read_committed, is the first offset of the oldest transaction still open in the
partition, or the HW when none is. The log start offset moves forward by DeleteRecords and
retention. The recovery point is the offset below which everything is known to be on disk; it
advances only in `flush`.

Producer state (storage/producer_state.py). Between offset assignment and the write, each
batch with a producer id is checked against its producer's entry: a retried batch (same epoch
and sequence range as one of the producer's last five) makes the whole append a duplicate,
answered with the original offsets and not written; a stale epoch or a sequence gap fails the
append; a marker closes the producer's transaction. After the write the entries are updated
and each aborted transaction goes to the `.txnindex` of the segment holding its marker. A roll
and a close write a `.snapshot`; opening the log reloads it and replays the log past it.

Read (the back half of Fetch). offset -> the segment holding it -> index lookup + header scan to
the batch holding the offset -> a region of the segment file: whole batches only, up to
`max_bytes` but at least one whole batch when `min_one_batch` (KIP-74), never past `max_offset`.

Durability. Appends reach the page cache. `flush` fsyncs segments and indexes and advances the
recovery point; `maybe_flush` applies `flush.messages`/`flush.ms`, and a roll asks for a flush
of the segment it closed (Kafka flushes it asynchronously after a roll). `flush` may run on an
executor thread while appends continue on the loop thread: `_flush_lock` covers the fsyncs and
the recovery point update, and the file objects guard against a concurrent close.

Deletion (minibroker_storage.retention). Retention and DeleteRecords never cut a segment: whole segments below the new log
start go. Their files are renamed `*.deleted` and closed/removed after `file.delete.delay.ms`
(`cleanup_deleted`), so a fetch region handed out just before stays readable.

read_committed fetches also get the aborted transactions overlapping what they read
(`aborted_transactions`), from the `.txnindex` of the segment holding the fetch offset and the
segments after it.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchView,
    InvalidBatch,
)
from minibroker_protocol.records.legacy import iter_deep
from minibroker_protocol.records.v2 import decode_batch, last_sequence
from minibroker_storage import log_validator, retention
from minibroker_storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    PARTITION_METADATA_FILE,
    CorruptCheckpoint,
    PartitionMetadataFile,
)
from minibroker_storage.config import LogConfig
from minibroker_storage.file_region import FileRegion
from minibroker_storage.leader_epoch import LeaderEpochFileCache
from minibroker_storage.loader import load_log, rebuild_producer_state
from minibroker_storage.log_files import (
    DELETED_FILE_SUFFIX,
    SEGMENT_FILE_SUFFIXES,
    fsync_dir,
    parse_log_dir_name,
    segment_file,
)
from minibroker_storage.log_validator import AppendPlan, ValidatedRecords
from minibroker_storage.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
    end_txn_marker,
)
from minibroker_storage.segment import BatchInfo, LogSegment, RollParams
from minibroker_storage.segments import LogSegments
from minibroker_storage.txn_index import AbortedTxn

logger = logging.getLogger("minibroker_storage.log")

ZERO_UUID = uuid.UUID(int=0)

RecordTimestamps = Callable[[bytes], Iterable[tuple[int, int]]]
"""Given one whole batch's bytes, yield (offset, timestamp) of each record."""


def decode_record_timestamps(batch: bytes) -> Iterable[tuple[int, int]]:
    """The default RecordTimestamps: minibroker_protocol.records decodes the one batch a timestamp lookup
    lands in (Kafka does the same in FileRecords.searchForTimestamp). Appends and fetches never
    decode records; only ListOffsets by time and MAX_TIMESTAMP come here."""
    if batch[MAGIC_OFFSET] < 2:  # a message set of a magic 0/1 topic (issue 7)
        return [(m.offset, m.timestamp) for m in iter_deep(batch)]
    return [(r.offset, r.timestamp) for r in decode_batch(batch).records]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


__all__ = ["AppendOrigin", "FetchDataInfo", "Log", "LogAppendInfo", "OffsetAndTimestamp", "TimestampAndOffset"]


@dataclass
class LogAppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless message.timestamp.type=LogAppendTime
    log_start_offset: int
    num_records: int
    valid_bytes: int
    offset_of_max_timestamp: int = -1
    duplicate: bool = False  # a retried batch already in the log: nothing was written


@dataclass
class FetchDataInfo:
    region: FileRegion | None  # None: nothing to return
    first_offset: int  # base offset of the first batch in the region (or the fetch offset if none)
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    log_end_offset: int


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int


class Log:
    def __init__(self, dir: Path, config: LogConfig, segments: LogSegments, *, log_start_offset: int,
                 recovery_point: int, next_offset: int, topic_id: uuid.UUID, epoch_cache: LeaderEpochFileCache,
                 now_ms: Callable[[], int], producer_state: ProducerStateManager | None = None):
        parsed = parse_log_dir_name(dir.name)
        if parsed is None:
            raise ValueError(f"'{dir.name}' is not in the form of topic-partition")
        self.topic, self.partition = parsed
        self.dir = dir
        self.config = config
        self.topic_id = topic_id
        self.segments = segments
        self.leader_epoch_cache = epoch_cache
        self.log_start_offset = log_start_offset
        self.log_end_offset = next_offset
        self.high_watermark = next_offset  # until a Partition says otherwise (or a checkpoint, `open`)
        # True while this replica is the whole ISR (or no partition owns the log): HW = LEO after
        # every append. The Partition clears it when followers share the ISR (module docstring).
        self.high_watermark_follows_leo = True
        self.recovery_point = recovery_point
        self.record_timestamps: RecordTimestamps | None = decode_record_timestamps
        self._now_ms = now_ms
        self._flush_lock = threading.Lock()
        self.last_flush_time = now_ms()
        self._roll_flush_offset = 0  # a roll asks for a flush up to the new segment's base offset
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._closed = False
        if producer_state is None:
            producer_state = ProducerStateManager(dir)
            producer_state.update_map_end_offset(next_offset)
        self.producer_state = producer_state
        self._unflushed_snapshots: list[Path] = []  # written at roll without fsync; `flush` syncs them
        self._snapshot_lock = threading.Lock()

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, dir: Path, config: LogConfig, *, recovery_point: int = 0, log_start_offset: int = 0,
             clean_shutdown: bool = False, now_ms: Callable[[], int] = _wall_clock_ms,
             topic_id: uuid.UUID | None = None,
             producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
             high_watermark: int | None = None) -> Log:
        """Open or create the partition directory `dir`, recovering it if needed (LogLoader).
        `high_watermark`: from `replication-offset-checkpoint`, clamped to the log (None: the LEO)."""
        dir.mkdir(parents=True, exist_ok=True)
        meta = PartitionMetadataFile(dir / PARTITION_METADATA_FILE)
        stored = None
        if meta.exists():
            try:
                stored = meta.read()
            except CorruptCheckpoint as e:
                logger.warning("%s", e)
        if topic_id is not None and stored is not None and stored != topic_id:
            raise KafkaError(ErrorCode.INCONSISTENT_TOPIC_ID,
                             f"Tried to assign topic ID {topic_id} to log for {dir.name}, "
                             f"but log already contained topic ID {stored}")
        if topic_id is not None and stored is None:
            meta.write(topic_id)  # before any data, as Kafka does
        epoch_cache = LeaderEpochFileCache(dir / LEADER_EPOCH_CHECKPOINT_FILE)
        producer_state = ProducerStateManager(dir, producer_id_expiration_ms=producer_id_expiration_ms)
        loaded = load_log(dir, config, log_start_offset=log_start_offset, recovery_point=recovery_point,
                          clean_shutdown=clean_shutdown, now_ms=now_ms, epoch_cache=epoch_cache,
                          producer_state=producer_state)
        # Kafka's CheckpointFile creates the file empty; entries are written when an epoch is assigned
        epoch_cache.checkpoint.path.touch(exist_ok=True)
        lg = cls(dir, config, loaded.segments, log_start_offset=loaded.log_start_offset,
                 recovery_point=loaded.recovery_point, next_offset=loaded.next_offset,
                 topic_id=stored or topic_id or ZERO_UUID, epoch_cache=epoch_cache, now_ms=now_ms,
                 producer_state=producer_state)
        if high_watermark is not None:
            lg.update_high_watermark(high_watermark)  # Kafka: UnifiedLog's initial HW from the checkpoint
        return lg

    # -- offsets -------------------------------------------------------------------------------
    @property
    def last_stable_offset(self) -> int:
        """The read limit of read_committed fetches: the first offset of the oldest open
        transaction (never below the log start), capped by the HW (UnifiedLog.lastStableOffset)."""
        first_unstable = self.producer_state.first_unstable_offset()
        if first_unstable is None:
            return self.high_watermark
        return min(max(first_unstable, self.log_start_offset), self.high_watermark)

    @property
    def first_unstable_offset(self) -> int | None:
        return self.producer_state.first_unstable_offset()

    def _update_high_watermark_with_log_end_offset(self) -> None:
        # the ISR is this replica alone: the HW is the LEO (Kafka: Partition.maybeIncrementLeaderHW)
        if self.high_watermark_follows_leo:
            self.high_watermark = self.log_end_offset

    def update_high_watermark(self, hw: int) -> int:
        """Set the HW, clamped to [log start, LEO]; returns it (Kafka: UnifiedLog.updateHighWatermark).
        A follower takes min(leader's HW, own LEO) this way."""
        self.high_watermark = min(max(hw, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    def maybe_increment_high_watermark(self, hw: int) -> bool:
        """Move the HW up to `hw` (never down, never past the LEO); True if it moved (Kafka:
        UnifiedLog.maybeIncrementHighWatermark, called by the leader's Partition)."""
        if hw > self.log_end_offset:
            raise ValueError(f"High watermark {hw} update exceeds current log end offset {self.log_end_offset}")
        if hw > self.high_watermark:
            self.high_watermark = hw
            return True
        return False

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active

    def size_in_bytes(self) -> int:
        return self.segments.size_in_bytes()

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    # -- leader epochs -----------------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record a new leader epoch starting at `start_offset` (Kafka: on becoming leader)."""
        if leader_epoch >= 0:
            self.leader_epoch_cache.assign(leader_epoch, start_offset)

    def leader_epoch_for_offset(self, offset: int) -> int | None:
        return self.leader_epoch_cache.epoch_for_offset(offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetForLeaderEpoch answers it."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    # -- append --------------------------------------------------------------------------------
    def validate(self, records: bytes | bytearray | memoryview, *, origin: str = AppendOrigin.CLIENT,
                 request_version: int | None = None,
                 verify: Callable[[list[BatchView]], None] | None = None) -> ValidatedRecords:
        """Check the batches of an append against this log's config (minibroker_storage.log_validator); for a
        Produce partition `request_version` adds the request's checks, the record walk and the
        conversion to the topic's format. Pass the result to `append_as_leader`."""
        self._check_open()
        return log_validator.validate(records, self.config, now_ms=self._now_ms(), origin=origin,
                                      request_version=request_version, where=f"{self.topic}-{self.partition}",
                                      verify=verify)

    def append_as_leader(self, records: bytes | bytearray | memoryview | ValidatedRecords, *, leader_epoch: int = 0,
                         origin: str = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Validate (unless `records` was validated by `validate`), assign offsets and append the
        batches of one Produce partition or coordinator write."""
        self._check_open()
        validated = records if isinstance(records, ValidatedRecords) else self.validate(records, origin=origin)
        now = self._now_ms()
        plan = log_validator.assign_offsets(validated, self.config, first_offset=self.log_end_offset,
                                            leader_epoch=leader_epoch, now_ms=now)
        first, offset = plan.first_offset, plan.next_offset
        segment = self._maybe_roll(RollParams(self.config.segment_ms, self.config.segment_bytes, plan.max_timestamp,
                                              offset - 1, validated.size if not validated.legacy else len(plan.data),
                                              len(plan.infos), now), first)
        self.maybe_assign_epoch_start_offset(leader_epoch, first)
        if validated.legacy:
            segment.append(plan.data, plan.infos)
            self.log_end_offset = offset
            self._update_high_watermark_with_log_end_offset()
            self.producer_state.update_map_end_offset(offset)  # no producers in v0/v1, still caught up
            return self._append_info(plan)
        # producer state is checked after offsets are known and before anything is written
        producers, completed, duplicate = self._analyze_and_validate_producer_state(
            plan.views, plan.starts, plan.infos, plan.data, origin)
        if duplicate is not None:
            # a retry of a batch already in the log: its original offsets, nothing written (UnifiedLog.append)
            return LogAppendInfo(first_offset=duplicate.first_offset, last_offset=duplicate.last_offset,
                                 max_timestamp=duplicate.timestamp, log_append_time=duplicate.timestamp,
                                 log_start_offset=self.log_start_offset, num_records=0, valid_bytes=0,
                                 duplicate=True)
        segment.append(plan.data, plan.infos)
        self.log_end_offset = offset
        self._update_high_watermark_with_log_end_offset()
        self._update_producer_state(segment, producers, completed, offset)
        return self._append_info(plan)

    def _update_producer_state(self, segment: LogSegment, producers: dict[int, ProducerAppendInfo],
                               completed: list[CompletedTxn], end_offset: int) -> None:
        """After a write: the producers' entries, the completed transactions (aborted ones into
        the `.txnindex` of the segment holding the marker), the state's end offset."""
        psm = self.producer_state
        for info in producers.values():
            psm.update(info)
        for txn in completed:
            segment.update_txn_index(txn.producer_id, txn.first_offset, txn.last_offset, txn.is_aborted,
                                     psm.last_stable_offset(txn))
            psm.complete_txn(txn)
        psm.update_map_end_offset(end_offset)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo | None:
        """Append the leader's batches as they are (Kafka: UnifiedLog.appendAsFollower): offsets
        and partition leader epochs kept. Only batch headers are read: each batch must be whole
        and its CRC right (CORRUPT_MESSAGE), the first must start at or after the LEO and each
        after the one before (Kafka: UnexpectedAppendOffsetException, OffsetsOutOfOrderException);
        a partial batch at the end (a fetch cut by max bytes) is left for the next fetch. The
        leader epoch cache takes each batch's epoch (KIP-101), the producer state its producer.
        Returns None when there was no whole batch."""
        self._check_open()
        buf = records if isinstance(records, memoryview) else memoryview(records)
        end = len(buf)
        views: list[BatchView] = []
        starts: list[int] = []
        infos: list[BatchInfo] = []
        pos = 0
        expected = self.log_end_offset
        max_ts, offset_of_max, num_records = -1, -1, 0
        while end - pos >= LOG_OVERHEAD + 5:
            length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
            if length < 0 or pos + LOG_OVERHEAD + length > end:
                break
            view = BatchView(buf, pos)
            if view.magic < 2:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                                 f"{self.topic}-{self.partition}: replicating message format v{view.magic} is not "
                                 "supported (docs/differences.md)")
            view.validate(producer_batch=False)  # cleaned batches have gaps; CRC and sizes still hold
            if view.base_offset < expected:
                what = "first offset" if not views else "offsets out of order:"
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                                 f"{self.topic}-{self.partition}: {what} {view.base_offset} is below the expected "
                                 f"offset {expected} when appending as follower")
            views.append(view)
            starts.append(pos)
            infos.append(BatchInfo(view.last_offset, view.max_timestamp, view.size))
            if view.max_timestamp > max_ts:
                max_ts, offset_of_max = view.max_timestamp, view.last_offset
            num_records += view.records_count
            expected = view.last_offset + 1
            pos += view.size
        if not views:
            return None
        data = buf[:pos]
        first = views[0].base_offset
        segment = self._maybe_roll(RollParams(self.config.segment_ms, self.config.segment_bytes, max_ts,
                                              expected - 1, pos, len(infos), self._now_ms()), first)
        producers, completed, _ = self._analyze_and_validate_producer_state(
            views, starts, infos, data, AppendOrigin.REPLICATION)
        for view in views:  # Kafka: appendAsFollower -> maybeAssignEpochStartOffset per batch
            self.maybe_assign_epoch_start_offset(view.partition_leader_epoch, view.base_offset)
        segment.append(data, infos)
        self.log_end_offset = expected
        self._update_high_watermark_with_log_end_offset()
        self._update_producer_state(segment, producers, completed, expected)
        return LogAppendInfo(first_offset=first, last_offset=expected - 1, max_timestamp=max_ts,
                             log_append_time=-1, log_start_offset=self.log_start_offset,
                             num_records=num_records, valid_bytes=pos, offset_of_max_timestamp=offset_of_max)

    # -- truncation (the divergence protocol, KIP-101/279) -----------------------------------------
    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything at and after `target_offset` (Kafka: UnifiedLog.truncateTo): later
        segments go, the one holding it is cut (indexes and `.txnindex` with it), the leader epoch
        cache drops the epochs starting there, the producer state is rebuilt to it, the HW and
        the recovery point come down with the LEO. False if the log already ends there."""
        self._check_open()
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.topic}-{self.partition} to a negative offset "
                             f"({target_offset}).")
        if target_offset >= self.log_end_offset:
            return False
        first = self.segments.first
        if first is None or target_offset <= first.base_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        logger.info("Truncating %s-%d to offset %d (log end offset %d)", self.topic, self.partition,
                    target_offset, self.log_end_offset)
        with self._flush_lock:  # not while a flush fsyncs the segments going away
            self.remove_and_delete_segments([s for s in self.segments.values() if s.base_offset > target_offset])
            active = self.segments.active
            active.truncate_to(target_offset)
            # the segment cuts whole batches: a target inside a batch ends the log at that batch's
            # start, so that the next fetch (from the LEO) gets the batch whole
            end = active.read_next_offset()
            self.log_end_offset = end
            self.recovery_point = min(self.recovery_point, end)
            self._roll_flush_offset = min(self._roll_flush_offset, end)
        self.leader_epoch_cache.truncate_from_end(end)
        self.log_start_offset = min(self.log_start_offset, end)
        self._rebuild_producer_state(end)
        self.high_watermark = min(self.high_watermark, end)
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and start empty at `new_offset` (Kafka:
        UnifiedLog.truncateFullyAndStartAt): a follower whose fetch offset is below the leader's
        log start, or whose whole log diverged. The epoch cache and the producer state are
        cleared; log start, LEO, HW and recovery point are all `new_offset`."""
        self._check_open()
        if new_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.topic}-{self.partition} to a negative offset "
                             f"({new_offset}).")
        logger.info("Truncating %s-%d fully and starting at offset %d", self.topic, self.partition, new_offset)
        with self._flush_lock:
            self.remove_and_delete_segments(self.segments.values())  # renamed .deleted before the new file
            self.segments.add(LogSegment.open(self.dir, new_offset, self.config, self._now_ms))
            self.log_end_offset = self.recovery_point = new_offset
            self._roll_flush_offset = 0
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = new_offset
        self.high_watermark = new_offset

    def _rebuild_producer_state(self, end_offset: int) -> None:
        # the newest snapshot at or below the new end, then the log replayed to it (Kafka:
        # UnifiedLog.rebuildProducerState via loadProducerState)
        rebuild_producer_state(self.producer_state, self.segments, self.log_start_offset, end_offset,
                               self._now_ms(), clean_shutdown=False, recovered=set())

    def _append_info(self, plan: AppendPlan) -> LogAppendInfo:
        return LogAppendInfo(first_offset=plan.first_offset, last_offset=plan.next_offset - 1,
                             max_timestamp=plan.max_timestamp, log_append_time=plan.log_append_time,
                             log_start_offset=self.log_start_offset, num_records=plan.num_records,
                             valid_bytes=len(plan.data), offset_of_max_timestamp=plan.offset_of_max_timestamp)

    def _analyze_and_validate_producer_state(self, views: list[BatchView], starts: list[int], infos: list[BatchInfo],
                                             buf: bytes | bytearray | memoryview, origin: str
                                             ) -> tuple[dict[int, ProducerAppendInfo], list[CompletedTxn],
                                                        BatchMetadata | None]:
        """Kafka's UnifiedLog.analyzeAndValidateProducerState: the producer entries this append
        would produce, the transactions it completes, or the cached batch it duplicates.
        Raises KafkaError (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, ...)."""
        psm = self.producer_state
        producers: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        for v, pos, info in zip(views, starts, infos, strict=True):
            if not v.has_producer_id:
                continue
            pid = v.producer_id
            last_seq = last_sequence(v.base_sequence, v.last_offset_delta)
            if origin == AppendOrigin.CLIENT:
                entry = psm.last_entry(pid)
                dup = entry.find_duplicate_batch(v.producer_epoch, v.base_sequence, last_seq) if entry else None
                if dup is not None:
                    return producers, completed, dup
            append = producers.get(pid)
            if append is None:
                append = producers[pid] = psm.prepare_update(pid, origin)
            base = info.last_offset - v.last_offset_delta
            if v.is_control:
                try:
                    marker = end_txn_marker(memoryview(buf)[pos:pos + v.size])
                except (InvalidBatch, ValueError) as e:
                    raise KafkaError(ErrorCode.INVALID_RECORD, f"invalid control batch: {e}") from None
                if marker is not None:
                    txn = append.append_end_txn_marker(marker, v.producer_epoch, base, info.max_timestamp)
                    if txn is not None:
                        completed.append(txn)
            else:
                append.append_data_batch(v.producer_epoch, v.base_sequence, last_seq, info.max_timestamp, base,
                                         info.last_offset, v.is_transactional)
        return producers, completed, None

    def _maybe_roll(self, params: RollParams, first_offset: int) -> LogSegment:
        segment = self.segments.active
        if segment.should_roll(params):
            logger.debug("Rolling new log segment of %s-%d (log_size = %d/%d, offset_index_size = %d/%d, "
                         "time_index_size = %d/%d)", self.topic, self.partition, segment.size,
                         self.config.segment_bytes, segment.offset_index.entries, segment.offset_index.max_entries,
                         segment.time_index.entries, segment.time_index.max_entries)
            return self.roll(first_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, LEO); the old one is trimmed
        and marked for flushing."""
        self._check_open()
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.segments.active
        if self.segments.contains(new_offset):
            if active.base_offset == new_offset and active.size == 0:
                return active  # an empty active segment at that offset already (KAFKA-6388)
            raise RuntimeError(f"Trying to roll a new log segment for {self.dir.name} with start offset "
                               f"{new_offset} while it already exists.")
        if new_offset < active.base_offset:
            raise RuntimeError(f"Trying to roll a new log segment for {self.dir.name} with start offset "
                               f"{new_offset} lower than start offset of the active segment {active}")
        for path in (segment_file(self.dir, new_offset, s) for s in SEGMENT_FILE_SUFFIXES):
            if path.exists():
                logger.warning("Newly rolled segment file %s already exists; deleting it first", path)
                path.unlink()
        active.on_become_inactive()
        segment = self.segments.add(LogSegment.open(self.dir, new_offset, self.config, self._now_ms))
        self._roll_flush_offset = max(self._roll_flush_offset, new_offset)
        # a producer snapshot at the new segment's base bounds the replay after a crash; written
        # now, fsynced by the flush the roll asks for (Kafka: UnifiedLog.roll)
        self.producer_state.update_map_end_offset(new_offset)
        snap = self.producer_state.take_snapshot(sync=False)
        if snap is not None:
            with self._snapshot_lock:
                self._unflushed_snapshots.append(snap)
        logger.info("Rolled new log segment for %s-%d at offset %d", self.topic, self.partition, new_offset)
        return segment

    # -- read ----------------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> FetchDataInfo:
        """A region of one segment file holding whole batches from the one with `fetch_offset`."""
        self._check_open()
        leo, lso_start = self.log_end_offset, self.log_start_offset
        if fetch_offset < lso_start or fetch_offset > leo:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"Received request for offset {fetch_offset} for partition {self.topic}-"
                             f"{self.partition}, but we only have log segments in the range {lso_start} to {leo}.")
        limit_offset = self.high_watermark if max_offset is None else min(max_offset, leo)
        empty = self._fetch_info(None, fetch_offset)
        if fetch_offset >= limit_offset:
            return empty
        segment = self.segments.floor_segment(fetch_offset)
        while segment is not None:
            found = segment.translate_offset(fetch_offset)
            if found is None:
                segment = self.segments.higher_segment(segment.base_offset)
                continue
            start, view = found
            if view.base_offset >= limit_offset:
                return empty
            max_position = segment.size
            if limit_offset < leo:
                bound = segment.translate_offset(limit_offset, start)
                if bound is not None:
                    max_position = bound[0]  # stop before the batch that holds the limit offset
            limit = min(max_position, start + max(0, max_bytes))
            first_end = start + view.size
            if first_end > limit:  # whole batches only: none fits if the first does not
                end = start
            elif first_end >= max_position:  # the first is the last one readable: no header walk
                end = first_end
            else:
                end = segment.whole_batches_end(first_end, limit)
            if end == start:
                if not min_one_batch or start + view.size > max_position:
                    return empty
                end = start + view.size
            return self._fetch_info(segment.log.slice(start, end - start), view.base_offset)
        return empty

    def _fetch_info(self, region: FileRegion | None, first_offset: int) -> FetchDataInfo:
        return FetchDataInfo(region=region, first_offset=first_offset, high_watermark=self.high_watermark,
                             log_start_offset=self.log_start_offset, last_stable_offset=self.last_stable_offset,
                             log_end_offset=self.log_end_offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset), for a
        read_committed fetch (Kafka: LocalLog.collectAbortedTransactions)."""
        found: list[AbortedTxn] = []
        segment = self.segments.floor_segment(fetch_offset) or self.segments.first
        while segment is not None:
            result = segment.collect_aborted_txns(fetch_offset, upper_bound_offset)
            found.extend(result.aborted)
            if result.is_complete:
                break
            segment = self.segments.higher_segment(segment.base_offset)
        return found

    # -- producers -----------------------------------------------------------------------------
    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        return self.producer_state.has_ongoing_transaction(producer_id, producer_epoch)

    def remove_expired_producers(self, now: int | None = None) -> int:
        """Forget producers idle for producer.id.expiration.ms (Kafka: PeriodicProducerExpirationCheck)."""
        return self.producer_state.remove_expired_producers(self._now_ms() if now is None else now)

    def take_producer_snapshot(self) -> Path | None:
        self._check_open()
        self.producer_state.update_map_end_offset(self.log_end_offset)
        return self.producer_state.take_snapshot()

    # -- timestamps ----------------------------------------------------------------------------
    def offset_for_timestamp(self, timestamp: int) -> OffsetAndTimestamp | None:
        """ListOffsets by time: (offset, timestamp) of the first record whose timestamp is >=
        `timestamp`, at or after the log start; None if there is none. The first segment whose
        largest timestamp reaches the target, its time index, its offset index, a header scan to
        the first batch whose max timestamp reaches it, then that one batch's records
        (`record_timestamps`). With `record_timestamps = None` the answer is to the batch: its
        first offset (>= log start) and its max timestamp."""
        start = self.log_start_offset
        for segment in self.segments.values():
            if segment.largest_timestamp() < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, start)
            if found is None:
                continue
            pos, view = found
            if view.timestamp_type == 0:
                for off, ts in self._record_timestamps(segment, pos, view):
                    if ts >= timestamp and off >= start:
                        return OffsetAndTimestamp(off, ts)
            return OffsetAndTimestamp(max(view.base_offset, start), view.max_timestamp)
        return None

    def max_timestamp_and_offset(self) -> TimestampAndOffset | None:
        """ListOffsets MAX_TIMESTAMP (-3, KIP-734): (largest timestamp, offset of the record that
        has it). A LogAppendTime batch answers its first offset (all its records share the time);
        a CreateTime one the record found by `record_timestamps`, else the batch's last offset."""
        best: LogSegment | None = None
        for segment in self.segments.values():
            if best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far:
                best = segment
        if best is None or best.max_timestamp_so_far < 0:
            return None
        ts, last = best.max_timestamp_and_offset
        found = best.translate_offset(last)
        if found is None:
            return None
        pos, view = found
        if view.timestamp_type == 1:
            return TimestampAndOffset(ts, view.base_offset)
        for off, rts in self._record_timestamps(best, pos, view):
            if rts == ts:
                return TimestampAndOffset(ts, off)
        return TimestampAndOffset(ts, view.last_offset)

    def legacy_fetch_offsets_before(self, timestamp: int, max_num_offsets: int) -> list[int]:
        """ListOffsets v0 (Kafka: UnifiedLog.legacyFetchOffsetsBefore): segment start offsets (at
        least the log start) paired with the segment file's modification time, plus (LEO, now)
        if the active segment holds data; -1 takes from the newest, -2 from the oldest, a time
        from the newest entry not modified after it; up to `max_num_offsets`, descending."""
        segs = self.segments.values()
        table: list[tuple[int, float]] = []
        for seg in segs:
            try:
                mtime_ms = seg.log.path.stat().st_mtime_ns // 1_000_000
            except FileNotFoundError:
                mtime_ms = 0
            table.append((max(seg.base_offset, self.log_start_offset), mtime_ms))
        if segs and segs[-1].size > 0:
            table.append((self.log_end_offset, self._now_ms()))
        if timestamp == -1:
            start = len(table) - 1
        elif timestamp == -2:
            start = 0
        else:
            start = len(table) - 1
            while start >= 0 and table[start][1] > timestamp:
                start -= 1
        count = max(0, min(max_num_offsets, start + 1))
        return sorted((table[start - j][0] for j in range(count)), reverse=True)

    def _record_timestamps(self, segment: LogSegment, pos: int, view: BatchView) -> Iterable[tuple[int, int]]:
        if self.record_timestamps is None:
            return ()
        try:
            return self.record_timestamps(segment.log.read(pos, view.size))
        except (InvalidBatch, ValueError) as e:  # unreadable records: answer to the batch
            logger.warning("cannot read the records of the batch at %d in %s: %s", pos, segment, e)
            return ()

    # -- log start offset, retention (minibroker_storage.retention) ---------------------------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset` (-1 = the high watermark);
        whole segments below it go. Returns the new log start offset."""
        self._check_open()
        if offset == -1:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"Cannot increment the log start offset to {offset} of partition {self.topic}-"
                             f"{self.partition} since it is larger than the high watermark {self.high_watermark}")
        self.increment_log_start_offset(offset, "ClientRecordDeletion")
        retention.delete_log_start_offset_breached_segments(self)
        return self.log_start_offset

    def delete_old_segments(self) -> int:
        """Retention (Kafka: UnifiedLog.deleteOldSegments, minibroker_storage.retention): segments wholly below
        the log start offset, then by retention.bytes, then by retention.ms, if cleanup.policy has
        "delete". The active segment too when the rule holds for it (after a roll to an empty one),
        never data at or past the HW. Returns how many went."""
        self._check_open()
        return retention.delete_old_segments(self, self._now_ms())

    def increment_log_start_offset(self, new_start: int, reason: str) -> None:
        """Move the log start offset up (never down), with what hangs on it: the leader epoch
        cache and the producer state (Kafka: UnifiedLog.maybeIncrementLogStartOffset)."""
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            logger.info("Incremented log start offset of %s-%d to %d due to %s", self.topic, self.partition,
                        new_start, reason)
            self.leader_epoch_cache.truncate_from_start(new_start)
            self.producer_state.on_log_start_offset_incremented(new_start)

    def remove_and_delete_segments(self, segs: list[LogSegment]) -> None:
        """Take segments out of the log and rename their files `.deleted`; the descriptors stay
        open until `cleanup_deleted` runs `file.delete.delay.ms` later (Kafka: asyncDelete)."""
        due = self._now_ms() + self.config.file_delete_delay_ms
        for seg in segs:
            self.segments.remove(seg.base_offset)
            seg.change_file_suffixes("", DELETED_FILE_SUFFIX)
            self._pending_deletes.append((due, seg))
            # the producer snapshot taken when this segment started is of no use any more (Kafka
            # renames it .deleted first; nothing reads a snapshot but the loader, so it goes now)
            self.producer_state.delete_snapshot(seg.base_offset)

    def replace_segments(self, new: list[LogSegment], old: list[LogSegment], suffix: str) -> None:
        """Swap cleaned segments in for `old` (Kafka: LocalLog.replaceSegments). The new files
        already carry `suffix` (".swap"), which marks them complete: the old segments leave the
        map and get `.deleted`, then the new ones lose the suffix. A crash at any point recovers
        to the old set (no .swap yet) or the new one (the loader completes a .swap)."""
        self._check_open()
        for seg in new:
            self.segments.add(seg)  # replaces an old segment with the same base offset
        due = self._now_ms() + self.config.file_delete_delay_ms
        kept = {id(s) for s in new}
        for seg in old:
            if self.segments.get(seg.base_offset) is seg:
                self.segments.remove(seg.base_offset)
            if id(seg) not in kept:
                seg.change_file_suffixes("", DELETED_FILE_SUFFIX)
                self._pending_deletes.append((due, seg))
        for seg in new:
            seg.change_file_suffixes(suffix, "")
        fsync_dir(self.dir)

    def cleanup_deleted(self, now: int | None = None) -> int:
        """Close and remove the `.deleted` segments whose delay has passed; returns how many."""
        now = self._now_ms() if now is None else now
        ready = [s for due, s in self._pending_deletes if due <= now]
        if not ready:
            return 0
        self._pending_deletes = [(due, s) for due, s in self._pending_deletes if due > now]
        with self._flush_lock:  # not while a flush may be fsyncing these descriptors
            for seg in ready:
                seg.delete_if_exists()
        return len(ready)

    # -- durability ----------------------------------------------------------------------------
    def flush(self, up_to: int | None = None) -> None:
        """fsync segments holding offsets below `up_to` (default: the LEO) and move the recovery
        point there. Safe to call from another thread while appends go on."""
        with self._flush_lock:
            if self._closed:
                return
            offset = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            current = self.recovery_point
            if offset <= current:
                return
            to_flush = self.segments.values(current, offset)
            for seg in to_flush:
                seg.flush()
            self._flush_producer_snapshots()
            if any(seg.base_offset >= current for seg in to_flush):
                try:
                    fsync_dir(self.dir)  # a segment created since the last flush: make its name durable
                except FileNotFoundError:
                    pass  # the directory was renamed for deletion meanwhile (Kafka: flushDirIfExists)
            self.recovery_point = offset
            self.last_flush_time = self._now_ms()

    def _flush_producer_snapshots(self) -> None:
        with self._snapshot_lock:
            pending, self._unflushed_snapshots = self._unflushed_snapshots, []
        for path in pending:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # deleted with its segment meanwhile
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    def needs_flush(self, now: int | None = None) -> bool:
        """Whether `maybe_flush` would fsync: flush.messages, flush.ms, or a roll since the last
        flush. Cheap, for a periodic task that then runs `maybe_flush` off the loop."""
        if self.log_end_offset <= self.recovery_point:
            return False
        now = self._now_ms() if now is None else now
        return (self.unflushed_messages() >= self.config.flush_messages
                or now - self.last_flush_time >= self.config.flush_ms
                or self._roll_flush_offset > self.recovery_point)

    def maybe_flush(self) -> None:
        """Flush as flush.messages / flush.ms require, or up to the last rolled segment."""
        if self._closed or self.log_end_offset <= self.recovery_point:
            return
        now = self._now_ms()
        if (self.unflushed_messages() >= self.config.flush_messages
                or now - self.last_flush_time >= self.config.flush_ms):
            self.flush()
        elif self._roll_flush_offset > self.recovery_point:
            self.flush(self._roll_flush_offset)

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close every segment (trimming the indexes); pending deletions are done now."""
        with self._flush_lock:
            if self._closed:
                return
            # a snapshot at the log end spares the next start any replay (UnifiedLog.close)
            try:
                self.producer_state.update_map_end_offset(self.log_end_offset)
                self.producer_state.take_snapshot()
            except OSError as e:
                logger.warning("could not write the producer snapshot of %s: %s", self.dir.name, e)
            self._closed = True
            for seg in self.segments.values():
                seg.close()
            for _, seg in self._pending_deletes:
                seg.delete_if_exists()
            self._pending_deletes = []

    def close_handlers(self) -> None:
        """Close the descriptors without writing anything (the directory is going away)."""
        with self._flush_lock:
            self._closed = True
            for seg in self.segments.values():
                seg.close_handlers()
            for _, seg in self._pending_deletes:
                seg.close_handlers()

    def delete(self) -> None:
        """Remove the partition directory and everything in it."""
        self.close_handlers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def rename_dir(self, new_dir: Path) -> None:
        """Move the partition directory (topic deletion renames it `...-delete` first); the open
        descriptors keep working and later file operations use the new paths."""
        self.dir.rename(new_dir)
        self.dir = new_dir
        for seg in self.segments.values() + [s for _, s in self._pending_deletes]:
            seg.log.path = new_dir / seg.log.path.name
            seg.offset_index.path = new_dir / seg.offset_index.path.name
            seg.time_index.path = new_dir / seg.time_index.path.name
            seg.txn_index.path = new_dir / seg.txn_index.path.name
        self.leader_epoch_cache.checkpoint.path = new_dir / self.leader_epoch_cache.checkpoint.path.name
        self.producer_state.update_parent_dir(new_dir)
        with self._snapshot_lock:
            self._unflushed_snapshots = [new_dir / p.name for p in self._unflushed_snapshots]

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"The log for {self.dir.name} is closed")

    def __repr__(self) -> str:
        return (f"Log(dir={self.dir}, logStartOffset={self.log_start_offset}, logEndOffset={self.log_end_offset}, "
                f"highWatermark={self.high_watermark}, segments={len(self.segments)})")
