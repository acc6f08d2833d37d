"""The shared base of the offset and time indexes: fixed-size entries in a memory-mapped file.

Theory of operation (Kafka: AbstractIndex). An index file is created at `segment.index.bytes`
(rounded down to whole entries: 10 MiB -> 1,310,720 offset entries) so that appends are stores
into the map, with no file growth. The file is sparse, so the unwritten tail costs no disk. When
the segment stops being the active one, or the log closes, the file is trimmed to its entries;
when a log loads, the active segment's indexes get their full size back. An existing file opens
with every slot counted as an entry (a trimmed file is all entries); the segments a crash could
leave untrimmed are the ones past the recovery point, and recovery rebuilds those.

Lookups are a binary search for the largest entry <= the target. Most lookups come from
consumers near the end of the log, so the search first checks the last `8192 / entry size`
entries (the "warm" section, one or two pages that every tail lookup touches and so stay in the
page cache) before searching the rest; a plain binary search over a growing file keeps touching
cold middle pages (see the comment on AbstractIndex.warmEntries in Kafka).

No checksum: an index is a cache of the log and is rebuilt from it when in doubt.

Threads: appends and lookups run on the event-loop thread; `flush` may run on an executor
thread (fsync of a flush). `_lock` serialises the operations that flush, replace or close the
map (flush, resize, close) so a flush never touches a closed map.
"""

from __future__ import annotations

import mmap
import os
import threading
from abc import ABC, abstractmethod
from pathlib import Path


class CorruptIndex(Exception):
    """An index failed its sanity check; the segment is recovered and the index rebuilt."""


class IndexOffsetOverflow(Exception):
    """The offset does not fit a 4-byte offset relative to the segment's base offset."""


class AbstractIndex(ABC):
    ENTRY_SIZE: int = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int = -1, *, writable: bool = True):
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._lock = threading.Lock()
        self._mmap: mmap.mmap | None = None
        newly_created = not path.exists()
        fd = os.open(path, (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY, 0o644)
        try:
            if newly_created:
                if max_index_size < self.ENTRY_SIZE:
                    raise ValueError(f"Invalid max index size: {max_index_size}")
                os.ftruncate(fd, self._round_down(max_index_size))
            length = os.fstat(fd).st_size
            self._map(fd, length)
        finally:
            os.close(fd)
        self._length = length
        self._max_entries = length // self.ENTRY_SIZE
        # a pre-existing index is assumed valid and full (it was trimmed when closed)
        self._entries = 0 if newly_created else length // self.ENTRY_SIZE

    # -- size and state ----------------------------------------------------------------------
    def _round_down(self, n: int) -> int:
        return n - n % self.ENTRY_SIZE

    def _map(self, fd: int, length: int) -> None:
        if length == 0:
            self._mmap = None  # mmap refuses empty files; an empty index needs no map
        else:
            access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
            self._mmap = mmap.mmap(fd, length, access=access)
            # Index access is random (binary search, appends at the tail), and the preallocated
            # file is a hole: without this, each first touch of a page makes the kernel read ahead
            # (zero-fill) a large window of the hole, which cost most of the broker's CPU time under
            # many-partition produce (perf: filemap_fault -> page_cache_ra_order -> memset).
            self._mmap.madvise(mmap.MADV_RANDOM)

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def length(self) -> int:
        """Bytes of the file, including unused preallocated slots."""
        return self._length

    def size_in_bytes(self) -> int:
        """Bytes of the entries."""
        return self._entries * self.ENTRY_SIZE

    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def relative_offset(self, offset: int) -> int:
        rel = offset - self.base_offset
        if rel < 0 or rel > 0x7FFFFFFF:
            raise IndexOffsetOverflow(f"Integer overflow for offset: {offset} ({self.path})")
        return rel

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= 0x7FFFFFFF

    def resize(self, new_size: int) -> bool:
        """Set the file (and map) to `new_size` rounded down to whole entries. Used to trim on
        roll/close and to give the active segment's index its full size back on load."""
        with self._lock:
            size = self._round_down(max(new_size, self._entries * self.ENTRY_SIZE))
            if size == self._length:
                return False
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.ftruncate(fd, size)
                self._map(fd, size)
            finally:
                os.close(fd)
            self._length = size
            self._max_entries = size // self.ENTRY_SIZE
            return True

    def trim_to_valid_size(self) -> None:
        self.resize(self._entries * self.ENTRY_SIZE)

    def reset(self) -> None:
        """Drop every entry and give the file its maximum size again (before a rebuild)."""
        self._truncate_to_entries(0)
        self.resize(self.max_index_size)

    def flush(self) -> None:
        """msync the entries, then fsync the file so that a trim (a size change) is durable too."""
        with self._lock:
            if self._mmap is not None:
                self._mmap.flush()
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return  # renamed or deleted underneath (a deletion in progress): nothing to keep
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        if self.writable:
            self.trim_to_valid_size()
        self.close_handler()

    def close_handler(self) -> None:
        with self._lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def delete_if_exists(self) -> bool:
        self.close_handler()
        try:
            os.unlink(self.path)
            return True
        except FileNotFoundError:
            return False

    def _truncate_to_entries(self, n: int) -> None:
        self._entries = n

    def _truncate_to_offset(self, offset: int, *, offset_is_value: bool) -> None:
        """Drop every entry for `offset` or later (Kafka: truncateTo). The offset is the entry's
        key in an offset index and its value in a time index."""
        slot = self._slot_for(offset, by_value=offset_is_value)
        if slot < 0:
            n = 0
        elif (self._value(slot) if offset_is_value else self._key(slot)) == offset:
            n = slot
        else:
            n = slot + 1
        self._truncate_to_entries(n)

    # -- search --------------------------------------------------------------------------------
    @abstractmethod
    def _key(self, n: int) -> int:
        """The search key of entry n (an offset, or a timestamp)."""

    @abstractmethod
    def _value(self, n: int) -> int:
        """The value of entry n (a position, or an offset)."""

    def _warm_entries(self) -> int:
        return 8192 // self.ENTRY_SIZE

    def _slot_for(self, target: int, by_value: bool, smallest_upper: bool = False) -> int:
        """Slot of the largest entry <= target (or, with smallest_upper, of the smallest entry
        >= target), comparing keys or values; -1 if there is none."""
        n = self._entries
        if n == 0:
            return -1
        get = self._value if by_value else self._key
        first_hot = max(0, n - 1 - self._warm_entries())
        if get(first_hot) < target:  # the target is in the warm tail: search only there
            return self._binary_search(get, target, first_hot, n - 1, smallest_upper)
        if get(0) > target:
            return 0 if smallest_upper else -1
        return self._binary_search(get, target, 0, first_hot, smallest_upper)

    def _binary_search(self, get, target: int, lo: int, hi: int, smallest_upper: bool) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = get(mid)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        if not smallest_upper:
            return lo
        return -1 if lo == self._entries - 1 else lo + 1

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path.name}, entries={self._entries}/{self._max_entries})"
