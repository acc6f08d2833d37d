"""Log compaction for `cleanup.policy=compact` (Kafka: LogCleaner, Cleaner, LogCleanerManager).

Theory of operation.

What may be cleaned. A compacted log is split at two offsets: the *first dirty offset* (the
cleaner's checkpoint for the log, `cleaner-offset-checkpoint`; below it everything was cleaned
before) and the *first uncleanable offset*: the active segment's base offset, lowered to the
segment holding the last stable offset (no open transaction is touched) and to the first segment
whose newest record is younger than `min.compaction.lag.ms`. The *dirty ratio* is the bytes of
the segments in [first dirty, first uncleanable) over the bytes of all segments below the first
uncleanable offset. A log is cleaned when the ratio reaches `min.cleanable.dirty.ratio`, when its
oldest dirty record is older than `max.compaction.lag.ms`, or when a tombstone's delete horizon
has passed; the log with the highest ratio goes first (`grab_filthiest`).

One cleaning (`clean`), on an executor thread — it reads and decodes records, writes files:
1. Aborted transactions: every transactional batch whose producer's next marker in the range is
   an ABORT is aborted. Their records are dropped and never enter the offset map.
2. The offset map: key -> offset of its newest record in the dirty range.
3. Segments from the log start to the first uncleanable offset are grouped so that one group
   fits one segment (segment.bytes, index sizes, 32-bit relative offsets) and each group is
   rewritten into `<base of its first segment>.log.cleaned`. A record survives if it has a key
   and no newer record of that key exists in the map. A tombstone (null value) survives until its
   batch's delete horizon: the first cleaning that keeps a tombstone or a transaction marker
   stamps the batch with horizon = now + delete.retention.ms (KIP-534: the horizon is the
   batch's base timestamp, flagged in its attributes); a later cleaning after the horizon drops
   it. A batch that keeps all its records is copied byte for byte; a batch that keeps some is
   rebuilt in the same format (same base offset, producer fields, codec, leader epoch; records
   keep their offsets and timestamps); a batch that keeps none goes.
4. Each cleaned segment is flushed, then renamed `.cleaned` -> `.swap` (now it is complete).

The swap (`swap_in`), on the loop thread: if the log still has exactly the segments that were
cleaned, `Log.replace_segments` puts the new ones in the map, renames the old ones `.deleted`
(removed after file.delete.delay.ms, so open fetch regions stay readable) and renames `.swap` ->
live. A crash before the `.swap` rename leaves the old set (the loader deletes `.cleaned`
files); after it, the loader completes the swap. The checkpoint then moves to the first
uncleanable offset.

Records are only ever decoded here, never on the produce or fetch path.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from minibroker_protocol.errors import KafkaError
from minibroker_protocol.records.batch import DELETE_HORIZON_BIT, BatchView, InvalidBatch
from minibroker_protocol.records.v2 import (
    ControlType,
    DecodedBatch,
    DecodedRecord,
    Record,
    build_batch,
    decode_batch,
    parse_control_record,
)
from minibroker_storage.log import Log
from minibroker_storage.log_files import (
    CLEANED_FILE_SUFFIX,
    SEGMENT_FILE_SUFFIXES,
    SWAP_FILE_SUFFIX,
    fsync_dir,
    segment_file,
)
from minibroker_storage.segment import BatchInfo, LogSegment

logger = logging.getLogger("minibroker_storage.cleaner")

INT_MAX = 2**31 - 1


class CleanerAborted(Exception):
    """The log changed under the cleaner (deleted, closed, segments retired); try again later."""


class UncleanableLog(CleanerAborted):
    """The log holds what this cleaner does not rewrite (MessageSet v0/v1 entries); Kafka marks
    such a partition uncleanable and stops trying."""


@dataclass
class LogToClean:
    """A compacted log's cleanable state (Kafka: LogToClean)."""

    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    needs_compaction_now: bool = False  # max.compaction.lag.ms passed, or a delete horizon did

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.dirty_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.dirty_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass
class CleanResult:
    log: Log
    old_groups: list[list[LogSegment]]
    new_segments: list[LogSegment]
    end_offset: int  # the new first dirty offset
    earliest_horizon: int | None  # the earliest delete horizon still pending in the cleaned log
    stats: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------------------- choosing


def first_uncleanable_offset(log: Log, now: int) -> int:
    """Kafka's LogCleanerManager.cleanableOffsets, upper bound."""
    segments = log.segments.values()
    bound = log.active_segment.base_offset
    lso = log.last_stable_offset
    if lso < log.log_end_offset:
        holder = log.segments.floor_segment(lso)
        if holder is not None:
            bound = min(bound, holder.base_offset)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for seg in segments[:-1]:
            if seg.base_offset >= bound:
                break
            if seg.largest_timestamp() > now - lag:
                bound = min(bound, seg.base_offset)
                break
    return bound


def log_to_clean(log: Log, checkpoint: int | None, now: int, horizon: int | None = None) -> LogToClean:
    start = log.log_start_offset
    first_dirty = start if checkpoint is None or checkpoint < start or checkpoint > log.log_end_offset else checkpoint
    end = first_uncleanable_offset(log, now)
    first_dirty = min(first_dirty, end)
    clean = dirty = 0
    earliest_dirty_ts: int | None = None
    for seg in log.segments.values():
        if seg.base_offset >= end:
            break
        nxt = log.segments.higher_segment(seg.base_offset)
        seg_end = nxt.base_offset if nxt is not None else log.log_end_offset
        if seg_end <= first_dirty:
            clean += seg.size
        else:
            dirty += seg.size
            if earliest_dirty_ts is None:
                first = seg.log.header_at(0)
                if first is not None and first.max_timestamp >= 0:
                    earliest_dirty_ts = first.max_timestamp
    max_lag = log.config.max_compaction_lag_ms
    now_needed = (dirty > 0 and earliest_dirty_ts is not None and max_lag < 2**62
                  and now - earliest_dirty_ts > max_lag)
    if horizon is not None and now >= horizon and clean + dirty > 0:
        now_needed = True
    return LogToClean(log, first_dirty, end, clean, dirty, now_needed)


def grab_filthiest(candidates: list[LogToClean]) -> LogToClean | None:
    """The log that most needs cleaning, or None (Kafka: grabFilthiestCompactedLog)."""
    ready = [c for c in candidates
             if (c.needs_compaction_now and c.total_bytes > 0)
             or (c.dirty_bytes > 0 and c.cleanable_ratio >= c.log.config.min_cleanable_dirty_ratio)]
    if not ready:
        return None
    return max(ready, key=lambda c: (c.needs_compaction_now, c.cleanable_ratio))


# ------------------------------------------------------------------------------- reading


def _batches(seg: LogSegment) -> Iterator[tuple[BatchView, bytes]]:
    for pos, view in seg.log.batches_from(0):
        yield view, seg.log.read(pos, view.size)


def _decode(raw: bytes) -> DecodedBatch:
    return decode_batch(raw, 0)


def _aborted_batches(segments: list[LogSegment]) -> set[int]:
    """Base offsets of transactional data batches whose transaction ended in an ABORT marker."""
    open_batches: dict[int, list[int]] = {}
    aborted: set[int] = set()
    for seg in segments:
        for view, raw in _batches(seg):
            if not view.is_transactional:
                continue
            pid = view.producer_id
            if view.is_control:
                batch = _decode(raw)
                kind = parse_control_record(batch.records[0]).type if batch.records else None
                pending = open_batches.pop(pid, [])
                if kind == ControlType.ABORT:
                    aborted.update(pending)
            else:
                open_batches.setdefault(pid, []).append(view.base_offset)
    return aborted


def build_offset_map(segments: list[LogSegment], start: int, end: int, aborted: set[int]) -> dict[bytes, int]:
    """key -> offset of its newest record with start <= offset < end (Kafka: buildOffsetMap)."""
    offsets: dict[bytes, int] = {}
    for seg in segments:
        for view, raw in _batches(seg):
            if view.magic != 2:
                raise UncleanableLog(f"batch at offset {view.base_offset} is magic {view.magic}; only v2 batches "
                                     "are compacted")
            if view.last_offset < start or view.is_control or view.base_offset in aborted:
                continue
            if view.base_offset >= end:
                break
            for r in _decode(raw).records:
                if start <= r.offset < end and r.key is not None:
                    offsets[r.key] = r.offset
    return offsets


# ------------------------------------------------------------------------------- grouping


def group_segments_by_size(segments: list[LogSegment], max_size: int, max_index_size: int,
                           next_offsets: dict[int, int]) -> list[list[LogSegment]]:
    """Runs of consecutive segments whose sum fits one segment (Kafka: groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        size = group[0].size
        index_size = _index_bytes(group[0])
        while rest:
            seg = rest[0]
            last = next_offsets[seg.base_offset] - 1
            if (size + seg.size > max_size or last - group[0].base_offset > INT_MAX
                    or index_size + _index_bytes(seg) > max_index_size):
                break
            size += seg.size
            index_size += _index_bytes(seg)
            group.append(rest.pop(0))
        groups.append(group)
    return groups


def _index_bytes(seg: LogSegment) -> int:
    return seg.offset_index.entries * 8


# ------------------------------------------------------------------------------- cleaning


@dataclass
class _Filter:
    offsets: dict[bytes, int]
    aborted: set[int]
    now: int
    delete_retention_ms: int
    earliest_horizon: int | None = None
    # producer id -> whether its current transaction still has records in the cleaned log
    txn_has_data: dict[int, bool] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: {"read": 0, "kept": 0, "tombstones_removed": 0,
                                                          "aborted_removed": 0, "markers_removed": 0})

    def filter_batch(self, view: BatchView, raw: bytes) -> bytes | None:
        """The batch as it is to be written in the cleaned segment, or None to drop it."""
        batch = _decode(raw)
        horizon = batch.base_timestamp if batch.has_delete_horizon else None
        self.stats["read"] += len(batch.records)
        if batch.is_control:
            # A marker goes once its horizon passed and its transaction has no record left (an
            # aborted one never has); a commit marker of surviving records stays, or reloading
            # producer state would see a transaction that never ended (Kafka: Cleaner's
            # CleanedTransactionMetadata).
            has_data = self.txn_has_data.pop(batch.producer_id, False)
            if horizon is not None and self.now >= horizon and not has_data:
                self.stats["markers_removed"] += len(batch.records)
                return None
            return self._emit(batch, list(batch.records), horizon)
        if view.base_offset in self.aborted:
            self.stats["aborted_removed"] += len(batch.records)
            return None
        keep: list[DecodedRecord] = []
        for r in batch.records:
            if r.key is None:
                continue  # a keyless record cannot survive compaction (Kafka counts it invalid)
            newest = self.offsets.get(r.key)
            if newest is not None and newest > r.offset:
                continue
            if r.value is None and horizon is not None and self.now >= horizon:
                self.stats["tombstones_removed"] += 1
                continue
            keep.append(r)
        if not keep:
            return None
        if batch.is_transactional:
            self.txn_has_data[batch.producer_id] = True
        return self._emit(batch, keep, horizon)

    def _emit(self, batch: DecodedBatch, keep: list[DecodedRecord], horizon: int | None) -> bytes:
        self.stats["kept"] += len(keep)
        needs_horizon = batch.is_control or any(r.value is None for r in keep)
        new_horizon = horizon
        if needs_horizon and horizon is None:
            new_horizon = self.now + self.delete_retention_ms
        if needs_horizon and new_horizon is not None and new_horizon > self.now:  # a past one is done with
            self.earliest_horizon = new_horizon if self.earliest_horizon is None else min(self.earliest_horizon,
                                                                                         new_horizon)
        if len(keep) == len(batch.records) and new_horizon == horizon:
            return b""  # unchanged: the caller copies the original bytes
        base_ts = new_horizon if new_horizon is not None else batch.base_timestamp
        log_append = batch.timestamp_type == 1
        records = [Record(r.attributes, batch.base_timestamp + r.timestamp_delta - base_ts,
                          r.offset - batch.base_offset, r.key, r.value, list(r.headers)) for r in keep]
        max_ts = batch.max_timestamp if log_append else max(batch.base_timestamp + r.timestamp_delta for r in keep)
        return build_batch(records, base_offset=batch.base_offset, compression=batch.compression,
                           timestamp_type=batch.timestamp_type, base_timestamp=base_ts, max_timestamp=max_ts,
                           producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                           base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
                           is_control=batch.is_control, partition_leader_epoch=batch.partition_leader_epoch,
                           last_offset_delta=keep[-1].offset - batch.base_offset,
                           has_delete_horizon=new_horizon is not None)


def _remove_stale(dir: Path, base: int) -> None:
    for suffix in SEGMENT_FILE_SUFFIXES:
        for extra in (CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX):
            segment_file(dir, base, suffix, extra).unlink(missing_ok=True)


def _write_group(log: Log, group: list[LogSegment], f: _Filter, now_ms: Callable[[], int]) -> LogSegment:
    base = group[0].base_offset
    _remove_stale(log.dir, base)
    cleaned = LogSegment.open(log.dir, base, log.config, now_ms, suffix=CLEANED_FILE_SUFFIX)
    try:
        for seg in group:
            for view, raw in _batches(seg):
                if view.magic != 2:
                    raise UncleanableLog(f"{log.dir.name}: batch at offset {view.base_offset} is magic "
                                         f"{view.magic}; only v2 batches are compacted")
                out = f.filter_batch(view, raw)
                if out is None:
                    continue
                data = raw if out == b"" else out
                nv = BatchView(data, 0)
                cleaned.append(data, [BatchInfo(nv.last_offset, nv.max_timestamp, nv.size)])
        cleaned.on_become_inactive()
        cleaned.flush()
        # the cleaned file keeps the group's last modification time, so that time retention of a
        # compact,delete log (which falls back to it for a segment without timestamps) still
        # sees old data as old (Kafka: Cleaner.cleanSegments sets lastModified)
        mtime_ns = max(os.stat(seg.log.path).st_mtime_ns for seg in group)
        os.utime(cleaned.log.path, ns=(mtime_ns, mtime_ns))
        cleaned.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
    except BaseException:
        cleaned.close_handlers()
        _remove_stale(log.dir, base)
        raise
    return cleaned


def clean(log: Log, ltc: LogToClean, now: int, now_ms: Callable[[], int]) -> CleanResult:
    """Steps 1-4 of the module docstring; safe on an executor thread (it only reads the log's
    inactive segments and writes new files). Raises CleanerAborted if the log changes under it."""
    end = ltc.first_uncleanable_offset
    segments = [s for s in log.segments.values() if s.base_offset < end]
    if not segments:
        raise CleanerAborted("nothing to clean")
    all_segs = log.segments.values()
    next_offsets = {}
    for i, seg in enumerate(all_segs):
        next_offsets[seg.base_offset] = all_segs[i + 1].base_offset if i + 1 < len(all_segs) else log.log_end_offset
    try:
        aborted = _aborted_batches(segments)
        offsets = build_offset_map(segments, ltc.first_dirty_offset, end, aborted)
        f = _Filter(offsets, aborted, now, log.config.delete_retention_ms)
        groups = group_segments_by_size(segments, log.config.segment_bytes, log.config.segment_index_bytes,
                                        next_offsets)
        new: list[LogSegment] = []
        try:
            for group in groups:
                new.append(_write_group(log, group, f, now_ms))
            fsync_dir(log.dir)
        except BaseException:
            for seg in new:
                seg.close_handlers()
                _remove_stale(log.dir, seg.base_offset)
            raise
    except UncleanableLog:
        raise
    except (OSError, ValueError, InvalidBatch) as e:
        raise CleanerAborted(f"{log.dir.name}: {e}") from e
    logger.info("Cleaned %s: %d segment(s) into %d, offsets [%d, %d) dirty, %s", log.dir.name, len(segments),
                len(new), ltc.first_dirty_offset, end, f.stats)
    return CleanResult(log, groups, new, end, f.earliest_horizon, f.stats)


def pending_delete_horizon(log: Log) -> int | None:
    """The earliest delete horizon stamped on a batch of the log's inactive segments (headers
    only), so that tombstones and markers cleaned before a restart still expire after it."""
    earliest: int | None = None
    for seg in log.segments.values()[:-1]:
        for _, view in seg.log.batches_from(0):
            if view.magic == 2 and view.attributes & DELETE_HORIZON_BIT:
                earliest = view.base_timestamp if earliest is None else min(earliest, view.base_timestamp)
    return earliest


def swap_in(result: CleanResult) -> bool:
    """Put the cleaned segments in place (loop thread). False (and the new files removed) if the
    log no longer holds the segments that were cleaned."""
    log = result.log
    current = {id(s) for s in log.segments.values()}
    if all(id(s) in current for g in result.old_groups for s in g):
        try:
            for group, new in zip(result.old_groups, result.new_segments, strict=True):
                log.replace_segments([new], group, SWAP_FILE_SUFFIX)
            return True
        except KafkaError:  # the log was closed (topic deleted, shutdown)
            pass
    for seg in result.new_segments:
        if seg.log.path.name.endswith(SWAP_FILE_SUFFIX):  # not swapped in
            seg.close_handlers()
            _remove_stale(log.dir, seg.base_offset)
    return False
