"""Per-partition producer state: idempotence and transactions (Kafka: ProducerStateManager,
ProducerStateEntry, ProducerAppendInfo, BatchMetadata, TxnMetadata, CompletedTxn).

Theory of operation.

Every batch written with a producer id updates that producer's entry in the partition: its
epoch, the metadata (last sequence, last offset, offset delta, max timestamp) of its last five
batches, the epoch of the transaction coordinator that last wrote a marker for it, and, while a
transaction of it is open here, the offset of the transaction's first batch.

Appends from clients are checked against the entry before anything is written:
- a batch whose epoch and exact sequence range match one of the five cached batches is a retry
  of a batch already in the log: the log answers with that batch's offsets and writes nothing
  (how Kafka answers a duplicate: success, original offsets);
- an epoch below the entry's is INVALID_PRODUCER_EPOCH (since Kafka 2.7 rather than
  PRODUCER_FENCED, so that the client can abort and go on);
- a new epoch must start at sequence 0, and within an epoch the first sequence must follow the
  last one (wrapping at Int32.MAX), else OUT_OF_ORDER_SEQUENCE_NUMBER. A producer with no entry
  (expired, or its data deleted by retention) may start at any sequence: Kafka stopped answering
  UNKNOWN_PRODUCER_ID for this when KIP-360 let clients recover by bumping their epoch.
The coordinators' appends (transactional offset commits, markers) only have their epoch
checked; recovery and loading check nothing.

A transactional data batch with no open transaction opens one at its offset; a COMMIT/ABORT
marker closes it and yields a CompletedTxn (producer id, first offset, marker offset, aborted?).
The open transactions, ordered by first offset, give the first unstable offset and so the last
stable offset (LSO) that read_committed consumers read up to. An aborted transaction goes to
the `.txnindex` of the segment holding its marker, with the LSO after it.

Snapshots. The state is written to `<20-digit offset>.snapshot` in the partition directory at
each segment roll and at close, in Kafka's ProducerSnapshot v1 format (all big-endian):

    0 version int16 (1) | 2 crc uint32 (CRC-32C of bytes 6..end) | 6 entry count int32
    | entries of 46 bytes: producerId int64, epoch int16, lastSequence int32, lastOffset int64,
      offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64

Only the last batch of each producer is kept in a snapshot (as in Kafka), so after a restart a
retry of an older batch is no longer recognised. Loading takes the newest snapshot at or below
the log end offset and replays the log from its offset; a snapshot that fails its CRC is
deleted and the next older one tried.

Producers whose last write is older than producer.id.expiration.ms and that have no open
transaction are forgotten (`remove_expired_producers`, and when a snapshot is loaded).

Single replica: the high watermark reaches the log end as soon as an append is written, so a
completed transaction is never "unreplicated" here (Kafka keeps those in the first unstable
offset until the HW passes their marker); completing a transaction removes it at once.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from minibroker_protocol.errors import ErrorCode, KafkaError
from minibroker_protocol.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    crc32c,
)
from minibroker_protocol.records.v2 import ControlType, decode_batch, parse_control_record
from minibroker_storage.append_origin import AppendOrigin
from minibroker_storage.log_files import PRODUCER_SNAPSHOT_FILE_SUFFIX, filename_prefix_from_offset, fsync_dir

logger = logging.getLogger("minibroker_storage.producer_state")

NUM_BATCHES_TO_RETAIN = 5  # Kafka: ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86400000  # producer.id.expiration.ms

SNAPSHOT_VERSION = 1
_SNAP_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes
_CRC_OFFSET = 2
_ENTRIES_OFFSET = 6


class CorruptSnapshot(Exception):
    pass


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Sequences wrap from Int32.MAX to 0 (DefaultRecordBatch.decrementSequence)."""
    return (sequence - decrement) % (INT32_MAX + 1)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class TxnMetadata:
    producer_id: int
    first_offset: int
    last_offset: int | None = None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a marker: `last_offset` is the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    control_type: int
    coordinator_epoch: int

    @property
    def is_abort(self) -> bool:
        return self.control_type == ControlType.ABORT


def end_txn_marker(batch: bytes | bytearray | memoryview) -> EndTxnMarker | None:
    """The marker in one whole control batch; None for an empty one (all cleaned away) or a
    control record that is not a transaction marker."""
    decoded = decode_batch(batch)
    if not decoded.records:
        return None
    rec = parse_control_record(decoded.records[0])
    if rec.type not in (ControlType.ABORT, ControlType.COMMIT) or rec.coordinator_epoch is None:
        return None
    return EndTxnMarker(rec.type, rec.coordinator_epoch)


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def copy_without_batches(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset)

    def maybe_update_producer_epoch(self, epoch: int) -> bool:
        if self.producer_epoch != epoch:
            self.batches.clear()  # sequences restart with a new epoch
            self.producer_epoch = epoch
            return True
        return False

    def _add_batch_metadata(self, batch: BatchMetadata) -> None:
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(batch)

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_producer_epoch(epoch)
        self._add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, nxt: ProducerStateEntry) -> None:
        """Take over what an append built on top of this entry (ProducerStateEntry.update)."""
        self.maybe_update_producer_epoch(nxt.producer_epoch)
        for b in nxt.batches:
            self._add_batch_metadata(b)
        self.coordinator_epoch = nxt.coordinator_epoch
        self.current_txn_first_offset = nxt.current_txn_first_offset
        self.last_timestamp = nxt.last_timestamp

    def find_duplicate_batch(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


class ProducerAppendInfo:
    """The changes one append makes to one producer's entry, validated batch by batch and
    applied to the manager only once the write succeeded."""

    def __init__(self, partition: str, producer_id: int, current: ProducerStateEntry, origin: str):
        self.partition = partition
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.copy_without_batches()
        self.started_transactions: list[TxnMetadata] = []

    # -- checks --------------------------------------------------------------------------------
    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch and self.origin != AppendOrigin.REPLICATION:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"Epoch of producer {self.producer_id} at offset {offset} in {self.partition} is "
                             f"{epoch}, which is smaller than the last seen epoch {self.updated.producer_epoch}")

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"Invalid sequence number for new epoch of producer {self.producer_id} at offset "
                                 f"{offset} in partition {self.partition}: {epoch} (request epoch), {first_seq} "
                                 f"(seq. number), {updated.producer_epoch} (current producer epoch)")
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # No epoch known (new producer, or its records all deleted): any sequence is accepted.
        if current.producer_epoch != NO_PRODUCER_EPOCH and not _in_sequence(last_seq, first_seq):
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"Out of order sequence number for producer {self.producer_id} at offset {offset} in "
                             f"partition {self.partition}: {first_seq} (incoming seq. number), {last_seq} "
                             "(current end sequence number)")

    # -- appends -------------------------------------------------------------------------------
    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int,
                          first_offset: int, last_offset: int, is_transactional: bool) -> None:
        self._check_producer_epoch(epoch, first_offset)
        if self.origin == AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        self.updated.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        txn_first = self.updated.current_txn_first_offset
        if txn_first is not None and not is_transactional:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"Expected transactional write from producer {self.producer_id} at offset "
                             f"{first_offset} in partition {self.partition}")
        if txn_first is None and is_transactional:
            self.updated.current_txn_first_offset = first_offset
            self.started_transactions.append(TxnMetadata(self.producer_id, first_offset))

    def append_end_txn_marker(self, marker: EndTxnMarker, epoch: int, offset: int,
                              timestamp: int) -> CompletedTxn | None:
        self._check_producer_epoch(epoch, offset)
        if self.updated.coordinator_epoch > marker.coordinator_epoch and self.origin != AppendOrigin.REPLICATION:
            raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                             f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in "
                             f"partition {self.partition}: {marker.coordinator_epoch} (zombie), "
                             f"{self.updated.coordinator_epoch} (current)")
        first = self.updated.current_txn_first_offset
        # A marker for a transaction with no data here changes neither the LSO nor the index.
        completed = CompletedTxn(self.producer_id, first, offset, marker.is_abort) if first is not None else None
        self.updated.maybe_update_producer_epoch(epoch)
        self.updated.coordinator_epoch = marker.coordinator_epoch
        self.updated.current_txn_first_offset = None
        self.updated.last_timestamp = timestamp
        return completed


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def snapshot_file(dir: Path, offset: int) -> Path:
    return dir / (filename_prefix_from_offset(offset) + PRODUCER_SNAPSHOT_FILE_SUFFIX)


def _snapshot_offset(path: Path) -> int | None:
    name = path.name
    if not name.endswith(PRODUCER_SNAPSHOT_FILE_SUFFIX):
        return None
    prefix = name[: -len(PRODUCER_SNAPSHOT_FILE_SUFFIX)]
    return int(prefix) if len(prefix) == 20 and prefix.isdigit() else None


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], *, sync: bool) -> None:
    """Write a ProducerSnapshot v1 file (ProducerStateManager.writeSnapshot)."""
    body = bytearray()
    count = 0
    for e in sorted(entries, key=lambda e: e.producer_id):
        body += _SNAP_ENTRY.pack(e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset,
                                 e.last_offset_delta, e.last_timestamp, e.coordinator_epoch,
                                 -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        count += 1
    out = bytearray(_SNAP_HEADER.pack(SNAPSHOT_VERSION, 0, count)) + body
    struct.pack_into(">I", out, _CRC_OFFSET, crc32c(memoryview(out)[_ENTRIES_OFFSET:]))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(out)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    """Read a snapshot file; CorruptSnapshot if its version, layout or CRC is wrong."""
    data = path.read_bytes()
    if len(data) < _SNAP_HEADER.size:
        raise CorruptSnapshot(f"Snapshot failed schema validation: {len(data)} bytes is too short")
    version, crc, count = _SNAP_HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshot(f"Snapshot contained an unknown file version {version}")
    if count < 0 or len(data) != _SNAP_HEADER.size + count * _SNAP_ENTRY.size:
        raise CorruptSnapshot(f"Snapshot failed schema validation: {count} entries in {len(data)} bytes")
    computed = crc32c(memoryview(data)[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshot(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                              f"Computed crc: {computed}")
    out = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, txn_first = _SNAP_ENTRY.unpack_from(
            data, _SNAP_HEADER.size + i * _SNAP_ENTRY.size)
        entry = ProducerStateEntry(pid, epoch, coord_epoch, ts, txn_first if txn_first >= 0 else None)
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, delta, ts))
        out.append(entry)
    return out


class ProducerStateManager:
    """The producer entries, open transactions and snapshot files of one partition."""

    def __init__(self, dir: Path, partition: str = "", *,
                 producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS):
        self.dir = dir
        self.partition = partition or dir.name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, TxnMetadata] = {}  # by first offset
        self.snapshots: dict[int, Path] = self._list_snapshots()
        self.last_map_offset = 0  # the offset up to which the state reflects the log
        self.last_snap_offset = 0

    # -- snapshots on disk -----------------------------------------------------------------------
    def _list_snapshots(self) -> dict[int, Path]:
        found: dict[int, Path] = {}
        if self.dir.is_dir():
            for p in self.dir.iterdir():
                off = _snapshot_offset(p)
                if off is not None and p.is_file():
                    found[off] = p
        return found

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots) if self.snapshots else None

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Delete snapshots that match no segment, except the newest stray one if it lies above
        every segment base (the snapshot a clean shutdown wrote at the log end)."""
        bases = set(segment_base_offsets)
        self.snapshots = self._list_snapshots()
        strays = sorted(off for off in self.snapshots if off not in bases)
        keep = strays[-1] if strays and (not bases or strays[-1] >= max(bases)) else None
        for off in strays:
            if off != keep:
                self._remove_and_delete_snapshot(off)

    def _remove_and_delete_snapshot(self, offset: int) -> None:
        path = self.snapshots.pop(offset, None)
        if path is not None:
            try:
                path.unlink()
                logger.info("Deleted producer state snapshot %s", path)
            except FileNotFoundError:
                pass

    def delete_snapshot(self, offset: int) -> None:
        """Remove the snapshot taken at `offset`, if any (its segment is being deleted)."""
        self._remove_and_delete_snapshot(offset)

    def take_snapshot(self, sync: bool = True) -> Path | None:
        """Write a snapshot at the map end offset unless one is already there; returns its path."""
        if self.last_map_offset <= self.last_snap_offset:
            return None
        path = snapshot_file(self.dir, self.last_map_offset)
        write_snapshot(path, self.producers.values(), sync=sync)
        if sync:
            fsync_dir(self.dir)
        logger.debug("Wrote producer snapshot at offset %d with %d producer ids for %s", self.last_map_offset,
                     len(self.producers), self.partition)
        self.snapshots[self.last_map_offset] = path
        self.last_snap_offset = self.last_map_offset
        return path

    def update_parent_dir(self, dir: Path) -> None:
        self.dir = dir
        self.snapshots = {off: dir / p.name for off, p in self.snapshots.items()}

    # -- loading -------------------------------------------------------------------------------
    def _is_expired(self, now: int, entry: ProducerStateEntry) -> bool:
        return entry.current_txn_first_offset is None and now - entry.last_timestamp >= self.producer_id_expiration_ms

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self.ongoing_txns[entry.current_txn_first_offset] = TxnMetadata(entry.producer_id,
                                                                            entry.current_txn_first_offset)

    def _load_from_snapshot(self, log_start_offset: int, now: int, at_most: int | None = None) -> None:
        while True:
            candidates = [o for o in self.snapshots if at_most is None or o <= at_most]
            if not candidates:
                self.last_snap_offset = self.last_map_offset = log_start_offset
                return
            off = max(candidates)
            path = self.snapshots[off]
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshot, OSError) as e:
                logger.warning("Failed to load producer snapshot from '%s': %s", path, e)
                self._remove_and_delete_snapshot(off)
                continue
            logger.debug("Loading producer state from snapshot file '%s'", path)
            for entry in entries:
                if not self._is_expired(now, entry):
                    self.load_producer_entry(entry)
            self.last_snap_offset = self.last_map_offset = off
            return

    def _clear(self) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now: int) -> None:
        """Drop snapshots outside (log start, log end], and if the state does not end at the log
        end, reload it from the newest remaining snapshot (ProducerStateManager.truncateAndReload)."""
        for off in list(self.snapshots):
            if off > log_end_offset or off <= log_start_offset:
                self._remove_and_delete_snapshot(off)
        if log_end_offset != self.last_map_offset:
            self._clear()
            self._load_from_snapshot(log_start_offset, now)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def reload_at_or_below(self, offset: int, log_start_offset: int, now: int) -> None:
        """Start over from the newest snapshot at or below `offset` (for replaying a recovered
        segment from its start); later snapshots stay on disk."""
        self._clear()
        self._load_from_snapshot(log_start_offset, now, at_most=offset)
        if self.last_map_offset > offset:  # only the log start is left and it lies above `offset`
            self.last_map_offset = max(offset, log_start_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._clear()
        for off in list(self.snapshots):
            self._remove_and_delete_snapshot(off)
        self.last_snap_offset = 0
        self.last_map_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = latest if latest is not None else log_start_offset

    # -- appends -------------------------------------------------------------------------------
    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: str) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(self.partition, producer_id, current, origin)

    def update(self, info: ProducerAppendInfo) -> None:
        if info.producer_id == NO_PRODUCER_ID:
            raise ValueError(f"Invalid producer id {info.producer_id} passed to update for {self.partition}")
        current = self.producers.get(info.producer_id)
        if current is not None:
            current.update(info.updated)
        else:
            self.producers[info.producer_id] = info.updated
        for txn in info.started_transactions:
            self.ongoing_txns[txn.first_offset] = txn

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    @property
    def map_end_offset(self) -> int:
        return self.last_map_offset

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO right after `completed`'s marker: the first offset of the oldest transaction of
        another producer still open, else the marker's offset + 1."""
        for first in sorted(self.ongoing_txns):
            txn = self.ongoing_txns[first]
            if txn.producer_id != completed.producer_id:
                return first
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            raise ValueError(f"Attempted to complete transaction {completed} on partition {self.partition} "
                             "which was not started")
        txn.last_offset = completed.last_offset

    # -- queries -------------------------------------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """Whether the producer has a transaction open here, of `producer_epoch` when given (Kafka's
        UnifiedLog.hasOngoingTransaction(producerId, producerEpoch)): with transactions v2 the next
        transaction comes with the epoch its predecessor's end bumped, possibly before that
        predecessor's marker is written here, and must be verified with the coordinator then."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None and (
            producer_epoch is None or entry.producer_epoch == producer_epoch)

    @property
    def is_empty(self) -> bool:
        return not self.producers

    def active_producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self.producers)

    def remove_expired_producers(self, now: int) -> int:
        expired = [pid for pid, e in self.producers.items() if self._is_expired(now, e)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # -- replay of stored batches --------------------------------------------------------------
    def replay_batch(self, producer_id: int, epoch: int, base_sequence: int, last_sequence: int,
                     base_offset: int, last_offset: int, max_timestamp: int, is_transactional: bool,
                     marker: EndTxnMarker | None, is_control: bool) -> CompletedTxn | None:
        """Apply one batch read back from the log (REPLICATION origin: nothing checked), as
        loading and recovery do; the caller completes the returned transaction after indexing it."""
        info = self.prepare_update(producer_id, AppendOrigin.REPLICATION)
        completed = None
        if is_control:
            if marker is not None:
                completed = info.append_end_txn_marker(marker, epoch, base_offset, max_timestamp)
        else:
            info.append_data_batch(epoch, base_sequence, last_sequence, max_timestamp, base_offset, last_offset,
                                   is_transactional)
        self.update(info)
        return completed

    def __repr__(self) -> str:
        return (f"ProducerStateManager({self.partition}, producers={len(self.producers)}, "
                f"ongoing={len(self.ongoing_txns)}, mapEndOffset={self.last_map_offset})")
