"""`.txnindex`: the aborted transactions whose abort marker lies in a segment (Kafka:
TransactionIndex, AbortedTxn).

Theory of operation. When an ABORT marker completes a transaction that wrote data to this
partition, the segment the marker goes to gets one 34-byte entry, big-endian:

    0 version int16 (0) | 2 producerId int64 | 10 firstOffset int64 | 18 lastOffset int64
    | 26 lastStableOffset int64

`firstOffset` is the transaction's first data offset here, `lastOffset` the offset of the
marker, `lastStableOffset` the partition's LSO right after the marker (the first offset of the
next still-open transaction of another producer, or lastOffset + 1). Entries are appended in
marker order, so lastOffset increases along the file. Unlike the offset and time indexes this
file is not preallocated, not mmapped and not created until the first abort.

A read_committed fetch from `fetchOffset` whose data ends before `upperBound` needs every
aborted transaction overlapping [fetchOffset, upperBound): entries with lastOffset >=
fetchOffset and firstOffset < upperBound, from the segment holding fetchOffset onwards. The
search can stop at the first entry whose lastStableOffset >= upperBound: when that marker was
written no transaction starting below upperBound was still open, so every overlapping one has
its marker at or before that entry (TransactionIndex.collectAbortedTxns).
"""

from __future__ import annotations

import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from minibroker_storage.index import CorruptIndex

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One `.txnindex` entry. `producer_id` and `first_offset` are what a Fetch response's
    aborted_transactions list carries, so an AbortedTxn can stand in for that struct."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def from_bytes(cls, buf: bytes | memoryview, pos: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(buf, pos)
        return cls(pid, first, last, lso, version)


class TxnIndexSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    is_complete: bool  # True: no later segment can hold an overlapping transaction


class TransactionIndex:
    """The `.txnindex` of one segment (`start_offset` = the segment's base offset)."""

    def __init__(self, start_offset: int, path: Path):
        self.start_offset = start_offset
        self.path = path
        self._fd: int | None = None
        self._size = 0
        self._lock = threading.Lock()  # flush may run on an executor thread
        self._last_offset: int | None = None
        if path.exists():
            self._open()
            entries = self._read_all()
            self._last_offset = entries[-1].last_offset if entries else None

    # -- file ----------------------------------------------------------------------------------
    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._size = os.fstat(self._fd).st_size
        return self._fd

    @property
    def exists(self) -> bool:
        return self._fd is not None

    @property
    def size(self) -> int:
        return self._size

    @property
    def last_offset(self) -> int | None:
        return self._last_offset

    # -- writes --------------------------------------------------------------------------------
    def append(self, txn: AbortedTxn) -> None:
        if self._last_offset is not None and self._last_offset >= txn.last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset {self._last_offset} "
                             f"of index {self.path}")
        fd = self._open()
        data = txn.to_bytes()
        written = os.pwrite(fd, data, self._size)
        if written != len(data):
            os.ftruncate(fd, self._size)
            raise OSError(f"short write to {self.path}")
        self._size += written
        self._last_offset = txn.last_offset

    def reset(self) -> None:
        """Remove every entry (a recovered segment rebuilds its index from the log)."""
        with self._lock:
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
            self._size = 0
            self._last_offset = None

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of transactions whose marker is at `offset` or later."""
        keep = 0
        last = None
        for txn in self._read_all():
            if txn.last_offset >= offset:
                break
            keep += ENTRY_SIZE
            last = txn.last_offset
        with self._lock:
            if self._fd is not None and keep < self._size:
                os.ftruncate(self._fd, keep)
                self._size = keep
        self._last_offset = last

    def flush(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False

    def rename_to(self, path: Path) -> None:
        """Rename the file if it exists; later operations use `path` either way."""
        try:
            if self.path.exists():
                os.replace(self.path, path)
        finally:
            self.path = path

    # -- reads ---------------------------------------------------------------------------------
    def _read_all(self) -> list[AbortedTxn]:
        if self._fd is None:
            return []
        data = os.pread(self._fd, self._size, 0)
        out = []
        # a partial entry at the end (a torn write) is not an entry (Kafka's iterator stops there)
        for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            txn = AbortedTxn.from_bytes(data, pos)
            if txn.version > CURRENT_VERSION:
                raise CorruptIndex(f"Unexpected aborted transaction version {txn.version} in transaction index "
                                   f"{self.path}, current version is {CURRENT_VERSION}")
            out.append(txn)
        return out

    def all_aborted_txns(self) -> list[AbortedTxn]:
        return self._read_all()

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """The entries overlapping [fetch_offset, upper_bound_offset), and whether the search
        may stop here."""
        found = []
        for txn in self._read_all():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def sanity_check(self) -> None:
        for txn in self._read_all():
            if txn.last_offset < self.start_offset:
                raise CorruptIndex(f"Last offset of aborted transaction {txn} in index {self.path} is less "
                                   f"than start offset {self.start_offset}")

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path}, entries={self._size // ENTRY_SIZE})"
