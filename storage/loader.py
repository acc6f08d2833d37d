"""Open a partition directory and bring it to a consistent state (Kafka: LogLoader).

Theory of operation, in Kafka's order:

1. Clean up leftovers: `*.deleted` files (a deletion the crash interrupted) go; `*.cleaned`
   files (an unfinished compaction) go; `*.swap` files (a finished compaction not yet swapped
   in) replace the segments they cover.
2. Open every `<base>.log` with its indexes. An index with no `.log` is an orphan and goes. A
   segment whose index is missing or fails the sanity check is recovered (indexes rebuilt).
3. Recovery: unless the data directory had a clean shutdown, every segment from the one holding
   the recovery point on is scanned batch by batch (length, magic, CRC, counts, offsets above
   the previous batch's). At the first bad batch the segment is cut and every later segment
   deleted: what follows a torn write cannot be trusted to be contiguous. The log line says how
   many bytes went and from which offset.
4. Log end offset = the offset after the last batch; the recovery point becomes the LEO after a
   clean shutdown, else min(checkpoint, LEO) — it only advances when data is flushed.
5. The active segment's indexes get their full preallocated size back.
6. Producer state (storage/producer_state.py; Kafka: UnifiedLog.rebuildProducerState): snapshots
   that match no segment are removed (except a newer one above every segment, which a clean
   shutdown wrote at the log end), and snapshots above the log end go. The state is loaded from
   the newest snapshot left and the log is replayed from there to the log end, batch headers
   only (a control batch's one record is read for its marker). If segments were recovered in
   step 2 or 3, their `.txnindex` was reset, so the replay starts from the newest snapshot at or
   below the first of them and writes their aborted transactions back. A clean shutdown with no
   snapshot at all (a log written before producer state existed) replays nothing, as in Kafka.
   A snapshot at the log end is written when the replay is done.

A clean shutdown therefore scans nothing but the tail of the active segment's last index entry,
and reads the producer state from the snapshot written at close.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from minibroker_protocol.records.batch import BatchView
from minibroker_protocol.records.v2 import last_sequence
from minibroker_storage.config import LogConfig
from minibroker_storage.index import CorruptIndex
from minibroker_storage.leader_epoch import LeaderEpochFileCache
from minibroker_storage.log_files import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    INDEX_FILE_SUFFIXES,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    is_segment_file_name,
    offset_from_file,
    segment_file,
)
from minibroker_storage.producer_state import ProducerStateManager, end_txn_marker
from minibroker_storage.segment import LogSegment
from minibroker_storage.segments import LogSegments

logger = logging.getLogger("minibroker_storage.loader")


@dataclass
class LoadedLog:
    segments: LogSegments
    log_start_offset: int
    recovery_point: int
    next_offset: int


def load_log(dir: Path, config: LogConfig, *, log_start_offset: int, recovery_point: int,
             clean_shutdown: bool, now_ms: Callable[[], int],
             epoch_cache: LeaderEpochFileCache | None = None,
             producer_state: ProducerStateManager | None = None) -> LoadedLog:
    name = dir.name
    swap_files = _remove_temp_files_and_collect_swap_files(dir)
    _complete_swaps(dir, config, now_ms, swap_files)
    recovered: set[int] = set()  # base offsets of segments whose indexes were rebuilt
    segments = _load_segment_files(dir, config, now_ms, recovery_point, clean_shutdown, epoch_cache, recovered)

    if not clean_shutdown:
        _recover_unflushed(name, segments, recovery_point, epoch_cache, recovered)

    next_offset = segments.active.read_next_offset() if segments else None
    if next_offset is not None and next_offset < log_start_offset:
        logger.warning("[%s] Deleting all segments because logEndOffset (%d) is smaller than logStartOffset %d. "
                       "This could happen if segment files were deleted from the file system.",
                       name, next_offset, log_start_offset)
        for seg in segments.values():
            segments.remove(seg.base_offset)
            seg.delete_if_exists()
        if epoch_cache is not None:
            epoch_cache.clear()
        if producer_state is not None:
            producer_state.truncate_fully_and_start_at(log_start_offset)
        next_offset = None
    if not segments:
        segments.add(LogSegment.open(dir, log_start_offset, config, now_ms))
        next_offset = log_start_offset
    assert next_offset is not None

    new_recovery_point = next_offset if clean_shutdown else min(recovery_point, next_offset)
    segments.active.resize_indexes(config.segment_index_bytes)
    new_log_start = max(log_start_offset, segments.first.base_offset)  # type: ignore[union-attr]
    if epoch_cache is not None:
        epoch_cache.truncate_from_end(next_offset)
        epoch_cache.truncate_from_start(log_start_offset)
    if producer_state is not None:
        rebuild_producer_state(producer_state, segments, new_log_start, next_offset, now_ms(),
                               clean_shutdown=clean_shutdown,
                               recovered={b for b in recovered if segments.contains(b)})
    return LoadedLog(segments, new_log_start, new_recovery_point, next_offset)


def rebuild_producer_state(psm: ProducerStateManager, segments: LogSegments, log_start_offset: int,
                           last_offset: int, now: int, *, clean_shutdown: bool, recovered: set[int]) -> None:
    """Bring `psm` to `last_offset` from its snapshots and the log (step 6 above)."""
    psm.remove_stray_snapshots(segments.base_offsets())
    if clean_shutdown and psm.latest_snapshot_offset() is None and not recovered:
        psm.update_map_end_offset(last_offset)  # nothing to replay: start with an empty state here
        psm.take_snapshot()
        return
    psm.truncate_and_reload(log_start_offset, last_offset, now)
    if recovered:
        first = min(recovered)
        if psm.map_end_offset > first:
            psm.reload_at_or_below(first, log_start_offset, now)
    for seg in segments.values(psm.map_end_offset, last_offset):
        start = max(seg.base_offset, psm.map_end_offset, log_start_offset)
        psm.update_map_end_offset(start)
        found = seg.translate_offset(start)
        if found is None:
            continue
        index_txns = seg.base_offset in recovered
        for pos, view in seg.log.batches_from(found[0]):
            if view.base_offset >= last_offset:
                break
            if view.last_offset >= start:
                _replay(psm, seg, pos, view, index_txns)
    psm.update_map_end_offset(last_offset)
    psm.take_snapshot()


def _replay(psm: ProducerStateManager, seg: LogSegment, pos: int, view: BatchView, index_txns: bool) -> None:
    if view.magic >= 2 and view.has_producer_id:
        marker = end_txn_marker(seg.log.read(pos, view.size)) if view.is_control else None
        completed = psm.replay_batch(view.producer_id, view.producer_epoch, view.base_sequence,
                                     last_sequence(view.base_sequence, view.last_offset_delta), view.base_offset,
                                     view.last_offset, view.max_timestamp, view.is_transactional, marker,
                                     view.is_control)
        if completed is not None:
            lso = psm.last_stable_offset(completed)
            if index_txns:
                seg.update_txn_index(completed.producer_id, completed.first_offset, completed.last_offset,
                                     completed.is_aborted, lso)
            psm.complete_txn(completed)
    psm.update_map_end_offset(view.last_offset + 1)


def _remove_temp_files_and_collect_swap_files(dir: Path) -> list[Path]:
    swap_files: list[Path] = []
    cleaned: list[Path] = []
    min_cleaned = None
    for path in sorted(dir.iterdir()):
        if not path.is_file():
            continue
        fname = path.name
        if fname.endswith(DELETED_FILE_SUFFIX):
            logger.debug("Deleting stray temporary file %s", path)
            path.unlink(missing_ok=True)
        elif fname.endswith(CLEANED_FILE_SUFFIX):
            off = offset_from_file(path)
            min_cleaned = off if min_cleaned is None else min(min_cleaned, off)
            cleaned.append(path)
        elif fname.endswith(SWAP_FILE_SUFFIX):
            swap_files.append(path)
    valid = []
    for path in swap_files:
        # a .swap above an unfinished .cleaned belongs to an interrupted split (KAFKA-6264)
        if min_cleaned is not None and offset_from_file(path) >= min_cleaned:
            logger.debug("Deleting invalid swap file %s minCleanedFileOffset: %d", path, min_cleaned)
            path.unlink(missing_ok=True)
        else:
            valid.append(path)
    for path in cleaned:
        path.unlink(missing_ok=True)
    return valid


def _complete_swaps(dir: Path, config: LogConfig, now_ms: Callable[[], int], swap_files: list[Path]) -> None:
    if not swap_files:
        return
    lo, hi = None, None
    for path in swap_files:
        if not path.name.endswith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX):
            continue
        base = offset_from_file(path)
        seg = LogSegment.open(dir, base, config, now_ms, suffix=SWAP_FILE_SUFFIX)
        nxt = seg.read_next_offset()
        seg.close_handlers()
        logger.info("Found log file %s from interrupted swap operation, which is recoverable from .swap files "
                    "by renaming.", path)
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None and hi is not None:
        for path in dir.iterdir():
            if path.is_file() and not path.name.endswith(SWAP_FILE_SUFFIX):
                try:
                    off = offset_from_file(path)
                except ValueError:
                    continue
                if lo <= off < hi:
                    logger.info("Deleting segment files %s that is compacted but has not been deleted yet.", path.name)
                    path.unlink(missing_ok=True)
    for path in dir.iterdir():
        if path.is_file() and path.name.endswith(SWAP_FILE_SUFFIX):
            logger.info("Recovering file %s by renaming from .swap files.", path.name)
            os.replace(path, path.with_name(path.name[: -len(SWAP_FILE_SUFFIX)]))


def _load_segment_files(dir: Path, config: LogConfig, now_ms: Callable[[], int], recovery_point: int,
                        clean_shutdown: bool, epoch_cache: LeaderEpochFileCache | None,
                        recovered: set[int]) -> LogSegments:
    files = sorted(p for p in dir.iterdir() if p.is_file())
    log_bases = sorted(offset_from_file(p) for p in files if is_segment_file_name(p.name, LOG_FILE_SUFFIX))
    for path in files:
        for suffix in INDEX_FILE_SUFFIXES:
            if is_segment_file_name(path.name, suffix) and offset_from_file(path) not in log_bases:
                logger.warning("Found an orphaned index file %s, with no corresponding log file.", path)
                path.unlink(missing_ok=True)
    # the segments recovery will scan anyway need no sanity check
    floor = max((b for b in log_bases if b <= recovery_point), default=log_bases[0] if log_bases else 0)
    segments = LogSegments()
    for base in log_bases:
        missing = [s for s in (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX) if not segment_file(dir, base, s).exists()]
        seg = LogSegment.open(dir, base, config, now_ms)
        if not clean_shutdown and base >= floor:
            segments.add(seg)
            continue  # _recover_unflushed scans it
        problem = None
        if missing:
            problem = f"missing {' and '.join(missing)}"
        else:
            try:
                seg.sanity_check()
            except CorruptIndex as e:
                problem = str(e)
        if problem is not None:
            logger.warning("[%s] Found a missing or corrupt index for log file %s (%s), recovering segment and "
                           "rebuilding index files...", dir.name, seg.log.path, problem)
            previous = segments.values()[-1].read_next_offset() if segments else None
            truncated, reason = seg.recover(previous, _epoch_hook(epoch_cache))
            recovered.add(base)
            if truncated:
                logger.warning("[%s] Truncated %d invalid bytes at the end of segment %d, from offset %d (%s)",
                               dir.name, truncated, base, seg.read_next_offset(), reason)
        segments.add(seg)
    return segments


def _recover_unflushed(name: str, segments: LogSegments, recovery_point: int,
                       epoch_cache: LeaderEpochFileCache | None, recovered: set[int]) -> None:
    unflushed = segments.values(recovery_point, None)
    if not unflushed:
        return
    all_segs = segments.values()
    first = all_segs.index(unflushed[0])
    previous_next = all_segs[first - 1].read_next_offset() if first > 0 else None
    hook = _epoch_hook(epoch_cache)
    for i, seg in enumerate(unflushed):
        logger.info("[%s] Recovering unflushed segment %d. %d/%d recovered.", name, seg.base_offset, i, len(unflushed))
        truncated, reason = seg.recover(previous_next, hook)
        recovered.add(seg.base_offset)
        previous_next = seg.read_next_offset()
        if truncated > 0:
            rest = unflushed[i + 1:]
            logger.warning("[%s] Corruption found in segment %d: truncated %d bytes from offset %d (%s)%s",
                           name, seg.base_offset, truncated, previous_next, reason,
                           f"; deleting {len(rest)} later segment(s)" if rest else "")
            for later in rest:
                segments.remove(later.base_offset)
                later.delete_if_exists()
            break


def _epoch_hook(epoch_cache: LeaderEpochFileCache | None) -> Callable[[BatchView], None] | None:
    if epoch_cache is None:
        return None

    def on_batch(view: BatchView) -> None:
        epoch = view.partition_leader_epoch
        latest = epoch_cache.latest_epoch
        if view.magic >= 2 and epoch >= 0 and (latest is None or epoch > latest):
            epoch_cache.assign(epoch, view.base_offset)
    return on_batch
