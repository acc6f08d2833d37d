"""One segment of a partition: `.log` + `.index` + `.timeindex` named by the base offset
(Kafka: LogSegment).

Theory of operation. `append` writes a run of already-validated batches with one write and
then walks their headers (given by the caller, who parsed them while validating): each batch
whose start lies more than `index.interval.bytes` after the last indexed batch's start gets an
offset-index entry (its last offset -> its start position) and, if the segment's maximum
timestamp grew, a time-index entry. `recover` rebuilds both indexes from the `.log` with the
same rule, checking every batch (length, magic, CRC, counts, increasing offsets), and cuts the
file at the first batch that fails; so an index written by appends and one rebuilt by recovery
are identical. Reads translate an offset to the start of the batch holding it: index lookup,
then a short scan of batch headers.

Threads: everything runs on the loop thread except `flush` (and `close_handlers` at deletion),
which the file and index objects guard with their own locks.

The `.txnindex` (aborted transactions whose marker is in this segment, storage/txn_index.py)
belongs to the same file set: renamed, flushed, closed and deleted with the others, reset by
`recover` (the loader rebuilds it while replaying producer state) and cut by `truncate_to`. The
file exists only once the segment holds an abort marker.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from minibroker_protocol.records.batch import LOG_OVERHEAD, BatchView, InvalidBatch
from minibroker_storage.config import LogConfig
from minibroker_storage.file_records import FileRecords
from minibroker_storage.index import IndexOffsetOverflow
from minibroker_storage.log_files import (
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    segment_file,
)
from minibroker_storage.offset_index import OffsetIndex
from minibroker_storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from minibroker_storage.txn_index import AbortedTxn, TransactionIndex, TxnIndexSearchResult

logger = logging.getLogger("minibroker_storage.segment")

_RECOVERY_CHUNK = 1 << 20


class BatchInfo(NamedTuple):
    """What the log learned from one batch header while validating an append."""

    last_offset: int
    max_timestamp: int
    size: int


class RollParams(NamedTuple):
    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    num_batches: int
    now: int


class LogSegment:
    def __init__(self, log: FileRecords, offset_index: OffsetIndex, time_index: TimeIndex, base_offset: int,
                 index_interval_bytes: int, roll_jitter_ms: int, now_ms: Callable[[], int],
                 txn_index: TransactionIndex | None = None):
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index or TransactionIndex(
            base_offset, log.path.with_name(log.path.name.replace(LOG_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX, 1)))
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._now_ms = now_ms
        self.created = now_ms()
        self._rolling_based_timestamp: int | None = None  # max timestamp of the first batch
        self._max_ts_and_offset: TimestampOffset | None = None  # None: not read from the time index yet
        # None: not known yet; counted from the file at the first append (an opened segment is
        # usually an inactive one, which never needs it)
        self._bytes_since_last_index_entry: int | None = 0
        # The last batch appended through this object: (its position, the last offset of the
        # batch before it; -1 if none) and its own last offset. A fetch at the log end asks for an
        # offset in that batch or past it, so the header scan can start there instead of at the
        # index entry below it (up to index.interval.bytes of headers; issue 22, end-to-end
        # latency). None when not known: opened from disk, recovered, truncated.
        self._tail: tuple[int, int] | None = None
        self._tail_last: int | None = None

    @classmethod
    def open(cls, dir: Path, base_offset: int, config: LogConfig, now_ms: Callable[[], int],
             *, suffix: str = "") -> LogSegment:
        """Open (or create) the segment's files; an existing index is trusted until checked."""
        log = FileRecords.open(segment_file(dir, base_offset, LOG_FILE_SUFFIX, suffix))
        oi = OffsetIndex(segment_file(dir, base_offset, INDEX_FILE_SUFFIX, suffix), base_offset,
                         config.segment_index_bytes)
        ti = TimeIndex(segment_file(dir, base_offset, TIME_INDEX_FILE_SUFFIX, suffix), base_offset,
                       config.segment_index_bytes)
        txi = TransactionIndex(base_offset, segment_file(dir, base_offset, TXN_INDEX_FILE_SUFFIX, suffix))
        jitter = random.randrange(min(config.segment_jitter_ms, config.segment_ms)) if config.segment_jitter_ms else 0
        seg = cls(log, oi, ti, base_offset, config.index_interval_bytes, jitter, now_ms, txi)
        seg._bytes_since_last_index_entry = None
        return seg

    def _resume_index_interval(self) -> int:
        # Continue the interval count where the file left it, so that appends after a restart
        # index the same batches a rebuild would.
        start = self.offset_index.lookup(self.offset_index.last_offset).position if self.offset_index.entries else 0
        self._bytes_since_last_index_entry = n = self.log.size - start
        return n

    # -- facts -----------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.log.size

    def files(self) -> list[Path]:
        return [self.log.path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    @property
    def max_timestamp_and_offset(self) -> TimestampOffset:
        """(largest timestamp, last offset of the batch that has it); read from the time index's
        last entry the first time (Kafka: readMaxTimestampAndOffsetSoFar)."""
        if self._max_ts_and_offset is None:
            self._max_ts_and_offset = self.time_index.last_entry
        return self._max_ts_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset.timestamp

    def largest_timestamp(self) -> int:
        """What retention.ms compares: the largest timestamp, or the file's mtime if none."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.log.last_modified_ms()

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return self.offset_index.can_append_offset(offset)

    def should_roll(self, p: RollParams) -> bool:
        """Kafka's LogSegment.shouldRoll: full by bytes, old by segment.ms, a full index, or an
        offset that does not fit 4 relative bytes."""
        reached_roll_ms = self.time_waited_for_roll(p.now, p.max_timestamp_in_messages) > p.max_segment_ms - self.roll_jitter_ms
        size = self.size
        oi, ti = self.offset_index, self.time_index
        return (size > p.max_segment_bytes - p.messages_size
                or (size > 0 and reached_roll_ms)
                or oi.entries + p.num_batches > oi.max_entries
                or ti.entries + p.num_batches > ti.max_entries - 1
                or not self.can_convert_to_relative_offset(p.max_offset_in_messages))

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Since the first batch's timestamp if it has one, else since the segment was created."""
        if self._rolling_based_timestamp is None:
            first = self.log.header_at(0)
            if first is not None:
                self._rolling_based_timestamp = first.max_timestamp
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now - self.created

    # -- append ------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: list[BatchInfo]) -> None:
        """Write validated batches (offsets already assigned) and index them."""
        if not batches:
            return
        position = self.log.size
        last_offset = batches[-1].last_offset
        if not self.can_convert_to_relative_offset(last_offset):
            raise IndexOffsetOverflow(f"offset {last_offset} does not fit segment {self.base_offset}")
        if position == 0:
            self._rolling_based_timestamp = max(b.max_timestamp for b in batches)
        since = self._bytes_since_last_index_entry
        if since is None:
            since = self._resume_index_interval()
        self.log.append(data)
        before = -1 if position == 0 else self._tail_last
        for b in batches:
            since = self._index_batch(b.last_offset, b.max_timestamp, position, since) + b.size
            self._tail = None if before is None else (position, before)
            before = b.last_offset
            position += b.size
        self._tail_last = before
        self._bytes_since_last_index_entry = since

    def _index_batch(self, last_offset: int, max_timestamp: int, position: int, since: int) -> int:
        """Index one appended batch if `since` (bytes since the last entry) passed the interval;
        returns the new count."""
        if max_timestamp > self.max_timestamp_so_far:
            self._max_ts_and_offset = TimestampOffset(max_timestamp, last_offset)
        if since > self.index_interval_bytes and not self.offset_index.is_full():
            self.offset_index.append(last_offset, position)
            if not self.time_index.is_full():
                self.time_index.maybe_append(*self.max_timestamp_and_offset)
            return 0
        return since

    def update_txn_index(self, producer_id: int, first_offset: int, last_offset: int, is_aborted: bool,
                         last_stable_offset: int) -> None:
        """Record a completed transaction whose marker is in this segment; only aborted ones
        are indexed (Kafka: LogSegment.updateTxnIndex)."""
        if is_aborted:
            self.txn_index.append(AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset))

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    # -- reads -------------------------------------------------------------------------------
    def translate_offset(self, offset: int, starting_position: int = 0) -> tuple[int, BatchView] | None:
        """(position, header) of the batch holding `offset` (or the first after it)."""
        tail = self._tail
        if tail is not None and offset > tail[1]:
            # every batch before the last one ends at or below tail[1] < offset, and no index
            # entry lies past the last batch: no index lookup needed
            return self.log.search_for_offset_with_size(offset, max(tail[0], starting_position))
        position = max(self.offset_index.lookup(offset).position, starting_position)
        return self.log.search_for_offset_with_size(offset, position)

    def whole_batches_end(self, start: int, limit: int) -> int:
        """The end of the last whole batch that starts at `start` or later and ends by `limit`
        (`start` itself if none fits). An index entry at or before `limit` is a batch start, so
        the header scan begins there instead of at `start`."""
        tail = self._tail
        if tail is not None and start <= tail[0] < limit:
            # the last batch's start: past any index entry, and a walk from `start` passes it
            return self.log.whole_batches_end(tail[0], limit)
        pos = start
        hint = self.offset_index.lookup_position(limit)
        if hint is not None and hint.position > pos:
            pos = hint.position
        return self.log.whole_batches_end(pos, limit)

    def read_next_offset(self) -> int:
        """The offset after the last batch: scan from the last index entry to the end."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position if self.offset_index.entries else 0
        next_offset = self.base_offset
        for _, view in self.log.batches_from(start):
            next_offset = view.last_offset + 1
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, BatchView] | None:
        """The first batch with a max timestamp >= `timestamp` and a last offset >= starting_offset:
        time index -> offset index -> header scan (Kafka: LogSegment.findOffsetByTimestamp)."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    # -- recovery ----------------------------------------------------------------------------
    def recover(self, start_offset: int | None = None, on_batch: Callable[[BatchView], None] | None = None
                ) -> tuple[int, str | None]:
        """Rebuild the indexes from the `.log`, checking each batch, and cut the file at the first
        bad one. Returns (bytes truncated, why). `start_offset`: the lowest offset the first batch
        may have (the previous segment's end). `on_batch` sees each valid batch header (leader
        epochs; producer state later)."""
        self._tail = self._tail_last = None
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()  # rebuilt by the loader's producer-state replay
        self._max_ts_and_offset = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        expected = self.base_offset if start_offset is None else max(start_offset, self.base_offset)
        size = self.log.size
        valid = 0
        last_index_entry = 0
        reason: str | None = None
        buf = b""
        buf_start = 0
        while valid < size:
            rel = valid - buf_start
            if len(buf) - rel < LOG_OVERHEAD + 5:
                buf, buf_start, rel = os.pread(self.log.fd, _RECOVERY_CHUNK, valid), valid, 0
            if len(buf) - rel < LOG_OVERHEAD + 5:
                reason = f"{len(buf) - rel} bytes at the end are too few for a batch header"
                break
            length = int.from_bytes(buf[rel + 8:rel + 12], "big", signed=True)
            if length < 0 or valid + LOG_OVERHEAD + length > size:
                reason = f"batch of {length} bytes runs past the end of the file"
                break
            if len(buf) - rel < LOG_OVERHEAD + length:
                buf, buf_start, rel = os.pread(self.log.fd, max(_RECOVERY_CHUNK, LOG_OVERHEAD + length), valid), valid, 0
            try:
                view = BatchView(buf, rel)
                view.validate(producer_batch=False)  # cleaned batches have gaps in their offsets
            except InvalidBatch as e:
                reason = str(e)
                break
            if view.base_offset < expected:
                reason = f"batch offset {view.base_offset} is below the expected next offset {expected}"
                break
            if not self.can_convert_to_relative_offset(view.last_offset):
                reason = f"offset {view.last_offset} overflows the segment's 4-byte relative offsets"
                break
            if view.max_timestamp > self._max_ts_and_offset.timestamp:
                self._max_ts_and_offset = TimestampOffset(view.max_timestamp, view.last_offset)
            if valid - last_index_entry > self.index_interval_bytes:
                self.offset_index.append(view.last_offset, valid)
                self.time_index.maybe_append(*self._max_ts_and_offset)
                last_index_entry = valid
            if on_batch is not None:
                on_batch(view)
            valid += view.size
            expected = view.last_offset + 1
        truncated = self.log.truncate_to(valid)
        self.offset_index.trim_to_valid_size()
        # a closed segment always ends its time index with its largest timestamp; so does a recovered one
        self.time_index.maybe_append(*self._max_ts_and_offset, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        self._bytes_since_last_index_entry = valid - last_index_entry
        self._rolling_based_timestamp = None
        return truncated, reason

    def sanity_check(self) -> None:
        """Kafka's cheap index checks (plus: the last entry lies inside the log)."""
        self.offset_index.sanity_check(self.log.size)
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def truncate_to(self, offset: int) -> int:
        """Remove every batch from the one holding `offset` on; returns the bytes removed."""
        mapping = self.translate_offset(offset)
        self._tail = self._tail_last = None
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.resize_indexes(self.offset_index.max_index_size)
        removed = self.log.truncate_to(mapping[0]) if mapping is not None else 0
        if self.log.size == 0:
            self.created = self._now_ms()
        self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = None
        last = self.time_index.last_entry
        start = self.offset_index.lookup(last.offset).position
        ts, off = self.log.largest_timestamp_after(start)
        self._max_ts_and_offset = TimestampOffset(ts, off) if ts > last.timestamp else last
        return removed

    # -- lifecycle ---------------------------------------------------------------------------
    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def on_become_inactive(self) -> None:
        """At roll: record the final max timestamp in the time index, trim both indexes."""
        self.time_index.maybe_append(*self.max_timestamp_and_offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if self._max_ts_and_offset is not None:
            try:
                self.time_index.maybe_append(*self._max_ts_and_offset, skip_full_check=True)
            except (ValueError, IndexError) as e:
                logger.warning("could not append the final time index entry of %s: %s", self, e)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        """Close without trimming or writing (the files are about to go)."""
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.txn_index.close()
        self.log.close()

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Rename the segment's files, e.g. "" -> ".deleted" (the open descriptors stay valid)."""
        for obj in (self.log, self.offset_index, self.time_index):
            name = obj.path.name
            if not name.endswith(old):
                raise ValueError(f"{name} does not end with {old!r}")
            obj.rename_to(obj.path.with_name(name[: len(name) - len(old)] + new))
        name = self.txn_index.path.name
        if name.endswith(old):
            self.txn_index.rename_to(self.txn_index.path.with_name(name[: len(name) - len(old)] + new))

    def delete_if_exists(self) -> None:
        self.log.delete_if_exists()
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        self.txn_index.delete_if_exists()

    def __repr__(self) -> str:
        ts = self._max_ts_and_offset.timestamp if self._max_ts_and_offset else "?"
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size}, largestRecordTimestamp={ts})"
