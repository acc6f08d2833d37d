"""Retention: which old segments of a log go (Kafka: UnifiedLog.deleteOldSegments and its
predicates deleteLogStartOffsetBreachedSegments, deleteRetentionSizeBreachedSegments,
deleteRetentionMsBreachedSegments, and deletableSegments/deleteSegments).

Theory of operation. Each rule is a predicate over the oldest segments, applied from the oldest
on while it holds: a segment wholly below the log start offset (DeleteRecords moved it); the
oldest segments whose removal keeps the log at or above retention.bytes; segments whose largest
timestamp is older than retention.ms. No segment goes whose end (its successor's base offset,
or the log end offset for the active segment) is past the high watermark, so the log start
offset never passes it. The active segment goes too when the rule holds for it and it is not
empty (all its records past retention.ms, say): as in Kafka 4.4 the log first rolls a new, empty
active segment at the log end offset, so a log always has one, and the log start offset moves
to the log end. Otherwise the log start offset moves to the first kept segment. The deleted
segments' files are renamed `.deleted` and removed after file.delete.delay.ms
(Log.remove_and_delete_segments).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from minibroker_storage.config import LogConfig
from minibroker_storage.segment import LogSegment
from minibroker_storage.segments import LogSegments


class Log(Protocol):
    """What retention reads and changes of a partition log (minibroker_storage.log.Log; a Protocol, so that
    the log can call into this module without a cycle)."""

    topic: str
    partition: int
    config: LogConfig
    segments: LogSegments
    high_watermark: int
    log_start_offset: int
    log_end_offset: int

    def size_in_bytes(self) -> int: ...

    def roll(self, expected_next_offset: int | None = None) -> LogSegment: ...

    def increment_log_start_offset(self, new_start: int, reason: str) -> None: ...

    def remove_and_delete_segments(self, segs: list[LogSegment]) -> None: ...

logger = logging.getLogger("minibroker_storage.log")

SegmentPredicate = Callable[[LogSegment, LogSegment | None], bool]
"""(segment, the segment after it) -> whether the segment may go."""


def delete_old_segments(log: Log, now_ms: int) -> int:
    """Every rule, as cleanup.policy allows: the log start offset always, size and time only
    with "delete". Returns how many segments went."""
    n = delete_log_start_offset_breached_segments(log)
    if log.config.delete:
        n += _delete_retention_size_breached_segments(log)
        n += _delete_retention_ms_breached_segments(log, now_ms)
    return n


def delete_log_start_offset_breached_segments(log: Log) -> int:
    """Segments whose successor starts at or below the log start offset (DeleteRecords, retention)."""
    start = log.log_start_offset
    return _delete_old_segments(log, lambda seg, nxt: nxt is not None and nxt.base_offset <= start,
                                "LogStartOffsetBreach")


def _delete_retention_size_breached_segments(log: Log) -> int:
    limit = log.config.retention_bytes
    size = log.size_in_bytes()
    if limit < 0 or size < limit:
        return 0
    diff = size - limit

    def should_delete(seg: LogSegment, nxt: LogSegment | None) -> bool:
        nonlocal diff
        if diff - seg.size >= 0:  # only whole segments, and never below the limit
            diff -= seg.size
            return True
        return False
    return _delete_old_segments(log, should_delete, f"RetentionSizeBreach(retention.bytes={limit})")


def _delete_retention_ms_breached_segments(log: Log, now: int) -> int:
    retention = log.config.retention_ms
    if retention < 0:
        return 0
    return _delete_old_segments(log, lambda seg, nxt: now - seg.largest_timestamp() > retention,
                                f"RetentionMsBreach(retention.ms={retention})")


def _delete_old_segments(log: Log, predicate: SegmentPredicate, reason: str) -> int:
    segs = log.segments.values()
    deletable: list[LogSegment] = []
    for i, seg in enumerate(segs):
        nxt = segs[i + 1] if i + 1 < len(segs) else None
        if nxt is None and seg.size == 0:
            break  # an empty active segment has nothing to delete
        # the HW bound keeps the log start offset from passing the high watermark
        upper = nxt.base_offset if nxt is not None else log.log_end_offset
        if log.high_watermark >= upper and predicate(seg, nxt):
            deletable.append(seg)
        else:
            break
    if not deletable:
        return 0
    if len(deletable) == len(segs):
        # every segment goes, the active one too: a log always keeps one, so roll an empty one at
        # the log end first (Kafka: UnifiedLog.deleteSegments)
        log.roll()
        new_start = log.log_end_offset
    else:
        new_start = segs[len(deletable)].base_offset
    log.increment_log_start_offset(new_start, "SegmentDeletion")
    logger.info("Deleting segments of %s-%d due to %s: %s", log.topic, log.partition, reason, deletable)
    log.remove_and_delete_segments(deletable)
    return len(deletable)
