"""The shared base of the offset and time indexes: fixed-size entries, Kafka's file format.

Theory of operation (Kafka: AbstractIndex and LazyIndex). On disk an index is what Kafka writes:
created at `segment.index.bytes` (rounded down to whole entries: 10 MiB -> 1,310,720 offset
entries), a sparse file, trimmed to its entries when the segment stops being the active one or
the log closes; when a log loads, the active segment's index gets its full size back. An
existing file opens with every slot counted as an entry (a trimmed file is all entries); the
segments a crash could leave untrimmed are the ones past the recovery point, and recovery
rebuilds those.

In memory an index is in one of two states, so that a partition costs one descriptor (its
`.log`) and not three: CPython's `mmap` keeps a duplicate of the file's descriptor for the map's
life (until 3.13's `trackfd=False`), so mapping every index as Kafka does cost 3.3 descriptors
per one-segment partition (docs/differences.md, `fds-per-partition`).

* **in memory** (the active segment's indexes, and any index being rebuilt or truncated): the
  entries live in a `bytearray`, which lookups read. Each new entry is also written through to
  the file with `pwrite` at once, so the file holds what Kafka's mmapped file holds (a tool
  reading a live segment's index, `dump-log`, sees every entry), and a crash loses no more than
  it does in Kafka: the entries are in the page cache; `flush` fsyncs. The descriptor for those
  writes comes from the bounded set below, so a broker appending to more partitions than it
  keeps descriptors for reopens the file for an entry now and then (once per
  `index.interval.bytes` of appends to the partition). A trim (roll, close) writes anything a
  failed write left behind, cuts the file, and the index goes to the second state.
* **on file** (inactive segments): nothing open. A lookup maps the file read-only. The last
  entry and the sanity checks read the file with `pread`, without a map, so loading a log maps
  nothing. Kafka opens an inactive index lazily too (LazyIndex) but keeps it mapped until the
  segment closes; a JVM map holds no descriptor.

The descriptors and maps of all indexes are held in one bounded least-recently-used set
(`OPEN_FILES`, `MAX_OPEN_FILES`): a consumer reading old segments of many partitions, or a
producer writing to many, keeps at most that many open; the least recently used is closed to
make room.

Lookups are a binary search for the largest entry <= the target. Most lookups come from
consumers near the end of the log, so the search first checks the last `8192 / entry size`
entries (the "warm" section, one or two pages that every tail lookup touches and so stay in the
page cache) before searching the rest; a plain binary search over a growing file keeps touching
cold middle pages (see the comment on AbstractIndex.warmEntries in Kafka).

No checksum: an index is a cache of the log and is rebuilt from it when in doubt.

Threads: appends, truncation, trims and lookups run on the event-loop thread (the loader's and
the cleaner's on theirs); `flush` may run on an executor thread. `_lock` covers every change of
state (memory <-> file, a descriptor or map opened or closed, entries written or cut) and every
use of a descriptor or map, so that `OPEN_FILES` never closes one that another thread is using:
it only takes an index whose lock it can get at once. Lookups of an in-memory index take no lock:
only the thread that appends to an index changes its buffer, and a flush only copies from it.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

Buffer = bytearray | mmap.mmap | bytes

MAX_OPEN_FILES = 256
"""Index descriptors and maps open at once, across all logs (a map holds a descriptor too)."""


class CorruptIndex(Exception):
    """An index failed its sanity check; the segment is recovered and the index rebuilt."""


class IndexOffsetOverflow(Exception):
    """The offset does not fit a 4-byte offset relative to the segment's base offset."""


class _OpenFiles:
    """The indexes holding a descriptor (an in-memory one's for writes, or an on-file one's map),
    least recently used first; bounded by `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lru: OrderedDict[int, AbstractIndex] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._lru)

    def touch(self, index: AbstractIndex) -> None:
        # no lock: one C call, atomic under the GIL (an index evicted meanwhile is no longer there)
        try:
            self._lru.move_to_end(id(index))
        except KeyError:
            pass

    def add(self, index: AbstractIndex) -> None:
        """Track an index that just opened a descriptor (its lock held by the caller) and close
        the least recently used over the limit, skipping any whose lock is held (in use)."""
        with self._lock:
            self._lru[id(index)] = index
            if len(self._lru) <= self.limit:
                return
            for key in list(self._lru):
                if len(self._lru) <= self.limit:
                    break
                victim = self._lru[key]
                if victim is index or not victim._lock.acquire(blocking=False):
                    continue
                try:
                    victim._close_files()
                finally:
                    victim._lock.release()
                del self._lru[key]

    def discard(self, index: AbstractIndex) -> None:
        with self._lock:
            self._lru.pop(id(index), None)


OPEN_FILES = _OpenFiles(MAX_OPEN_FILES)


class AbstractIndex(ABC):
    ENTRY_SIZE: int = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int = -1):
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._lock = threading.Lock()
        self._mem: bytearray | None = None  # in memory: the entries
        self._written = 0  # in memory: how many of the entries the file already holds
        self._map: mmap.mmap | None = None  # on file: a read-only map while a lookup needs one
        self._fd: int | None = None  # in memory: the descriptor entries are written through, if open
        try:
            length = os.stat(path).st_size
            newly_created = False
        except FileNotFoundError:
            if max_index_size < self.ENTRY_SIZE:
                raise ValueError(f"Invalid max index size: {max_index_size}") from None
            length = self._round_down(max_index_size)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, length)  # preallocated (sparse), as Kafka's file is
            finally:
                os.close(fd)
            newly_created = True
        self._length = length
        self._max_entries = length // self.ENTRY_SIZE
        # a pre-existing index is assumed valid and full (it was trimmed when closed)
        self._entries = 0 if newly_created else length // self.ENTRY_SIZE
        if newly_created:
            self._mem = bytearray()

    # -- size and state ----------------------------------------------------------------------
    def _round_down(self, n: int) -> int:
        return n - n % self.ENTRY_SIZE

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

    @property
    def in_memory(self) -> bool:
        """Whether the entries are held in memory (the active segment's index) rather than read
        from the file on demand."""
        return self._mem is not None

    @property
    def mapped(self) -> bool:
        return self._map is not None

    @property
    def holds_descriptor(self) -> bool:
        return self._map is not None or self._fd is not None

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

    # -- state changes (self._lock held) -----------------------------------------------------------
    def _close_files(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _release(self) -> None:
        if self._map is not None or self._fd is not None:
            OPEN_FILES.discard(self)
            self._close_files()

    def _load(self, keep: int | None = None) -> bytearray:
        """Into memory: the first `keep` entries (default: all) read from the file or its map."""
        mem = self._mem
        if mem is not None:
            return mem
        n = self._entries if keep is None else min(keep, self._entries)
        size = n * self.ENTRY_SIZE
        if size == 0:
            data = b""
        elif self._map is not None:
            data = self._map[:size]
        else:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                data = os.pread(fd, size, 0)
            finally:
                os.close(fd)
            if len(data) != size:
                raise CorruptIndex(f"Index file {self.path} is shorter ({len(data)} bytes) than its "
                                   f"{n} entries")
        self._release()
        self._mem = mem = bytearray(data)
        self._written = n
        return mem

    def _write_through(self) -> None:
        """Write the entries the file does not hold yet (normally the one just appended) with
        the index's own descriptor. A failed write leaves them for the next flush or trim."""
        with self._lock:
            fd = self._fd
            if fd is None:
                try:
                    fd = self._fd = os.open(self.path, os.O_WRONLY)
                except OSError:
                    return
                OPEN_FILES.add(self)
            else:
                OPEN_FILES.touch(self)
            try:
                self._write_pending(fd)
            except OSError:
                pass

    def _write_pending(self, fd: int) -> None:
        """Write the in-memory entries the file does not hold yet."""
        mem = self._mem
        if mem is None:
            return
        n = self._entries
        start = self._written
        if start < n:
            E = self.ENTRY_SIZE
            data = bytes(mem[start * E:n * E])  # a copy: the loop thread may extend `mem` meanwhile
            pos = start * E
            view = memoryview(data)
            while view:
                k = os.pwrite(fd, view, pos)
                pos += k
                view = view[k:]
        self._written = n

    def _data(self) -> Buffer:
        """The entries' bytes for a lookup (self._lock held): the memory, or the file's map."""
        mem = self._mem
        if mem is not None:
            return mem
        m = self._map
        if m is not None:
            OPEN_FILES.touch(self)
            return m
        if self._length == 0:
            return b""  # mmap refuses empty files; an empty index needs no map
        fd = os.open(self.path, os.O_RDONLY)
        try:
            m = mmap.mmap(fd, self._length, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        # Index access is random (binary search): without this the kernel reads ahead a large
        # window around each first touch of a page.
        m.madvise(mmap.MADV_RANDOM)
        self._map = m
        OPEN_FILES.add(self)
        return m

    def _read(self, fn: Callable[[Buffer], object]) -> object:
        with self._lock:
            return fn(self._data())

    def _peek(self, *slots: int) -> list[bytes]:
        """The raw bytes of some entries, read without mapping the file (the last entry, the
        sanity checks): from memory or an open map if there is one, else with pread."""
        E = self.ENTRY_SIZE
        with self._lock:
            buf: Buffer | None = self._mem if self._mem is not None else self._map
            if buf is not None:
                return [bytes(buf[s * E:(s + 1) * E]) for s in slots]
            fd = os.open(self.path, os.O_RDONLY)
            try:
                return [os.pread(fd, E, s * E) for s in slots]
            finally:
                os.close(fd)

    def resize(self, new_size: int) -> bool:
        """Set the file to `new_size` rounded down to whole entries (never below the entries).
        To the entries' size: a trim (roll, close), which writes what is in memory and leaves the
        index on file. Larger: the index becomes an active one, in memory, with that room (the
        loader gives the active segment's index its full size back)."""
        with self._lock:
            size = self._round_down(max(new_size, self._entries * self.ENTRY_SIZE))
            changed = size != self._length
            if size == self._entries * self.ENTRY_SIZE:
                self._trim()
                return changed
            self._load()
            if changed:
                fd = os.open(self.path, os.O_RDWR)
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
            self._length = size
            self._max_entries = size // self.ENTRY_SIZE
            return changed

    def _trim(self) -> None:
        size = self._entries * self.ENTRY_SIZE
        if self._mem is None and self._length == size:
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            self._write_pending(fd)
            if self._length != size:
                os.ftruncate(fd, size)
        finally:
            os.close(fd)
        self._release()
        self._mem = None
        self._length = size
        self._max_entries = self._entries

    def trim_to_valid_size(self) -> None:
        self.resize(self._entries * self.ENTRY_SIZE)

    def reset(self) -> None:
        """Drop every entry and give the file its maximum size again (before a rebuild)."""
        self._truncate_to_entries(0)
        self.resize(self.max_index_size)

    def flush(self) -> None:
        """Write the entries not in the file yet, then fsync it so that a trim (a size change) is
        durable too. The fsync runs outside the lock, on a descriptor of its own."""
        with self._lock:
            try:
                fd = os.open(self.path, os.O_RDWR if self._mem is not None else os.O_RDONLY)
            except FileNotFoundError:
                return  # renamed or deleted underneath (a deletion in progress): nothing to keep
            try:
                self._write_pending(fd)
            except BaseException:
                os.close(fd)
                raise
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        self.trim_to_valid_size()
        self.close_handler()

    def close_handler(self) -> None:
        """Forget the entries in memory and close the descriptor or map."""
        with self._lock:
            self._release()
            if self._mem is not None:
                self._mem = None
                self._written = 0

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
        with self._lock:
            mem = self._load(keep=n)
            del mem[n * self.ENTRY_SIZE:]
            self._written = min(self._written, n)
            self._entries = n

    def _truncate_to_offset(self, offset: int, *, offset_is_value: bool) -> None:
        """Drop every entry for `offset` or later (Kafka: truncateTo). The offset is the entry's
        key in an offset index and its value in a time index."""
        def keep(buf: Buffer) -> int:
            slot = self._slot_for(buf, offset, by_value=offset_is_value)
            if slot < 0:
                return 0
            found = self._value(buf, slot) if offset_is_value else self._key(buf, slot)
            return slot if found == offset else slot + 1
        self._truncate_to_entries(self._read(keep))  # type: ignore[arg-type]

    # -- search --------------------------------------------------------------------------------
    @abstractmethod
    def _key(self, buf: Buffer, n: int) -> int:
        """The search key of entry n (an offset, or a timestamp)."""

    @abstractmethod
    def _value(self, buf: Buffer, n: int) -> int:
        """The value of entry n (a position, or an offset)."""

    # Where the search key and value sit in an entry, for the search loop below: the struct,
    # its byte offset in the entry, and what is added to the stored number (the base offset for
    # a relative offset). Set by each index type.
    _KEY: struct.Struct
    _KEY_AT = 0
    _VALUE: struct.Struct
    _VALUE_AT = 0
    _key_base = 0
    _value_base = 0

    def _slot_for(self, buf: Buffer, target: int, by_value: bool, smallest_upper: bool = False) -> int:
        """Slot of the largest entry <= target (or, with smallest_upper, of the smallest entry
        >= target), comparing keys or values; -1 if there is none. One loop with the unpacking
        inline: this runs for every fetch."""
        n = self._entries
        if n == 0:
            return -1
        E = self.ENTRY_SIZE
        if by_value:
            unpack, at, target = self._VALUE.unpack_from, self._VALUE_AT, target - self._value_base
        else:
            unpack, at, target = self._KEY.unpack_from, self._KEY_AT, target - self._key_base
        first_hot = max(0, n - 1 - 8192 // E)
        if unpack(buf, first_hot * E + at)[0] < target:  # the target is in the warm tail: search only there
            lo, hi = first_hot, n - 1
        elif unpack(buf, at)[0] > target:
            return 0 if smallest_upper else -1
        else:
            lo, hi = 0, first_hot
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = unpack(buf, mid * E + at)[0]
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        if not smallest_upper:
            return lo
        return -1 if lo == n - 1 else lo + 1

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path.name}, entries={self._entries}/{self._max_entries})"
