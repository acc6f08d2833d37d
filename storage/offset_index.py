"""`.index`: sparse map from offset to byte position in the segment's `.log` (Kafka: OffsetIndex).

An entry is 8 bytes, big-endian: 4-byte offset relative to the segment's base offset, 4-byte
position. The log writes one when more than `index.interval.bytes` were appended since the last
entry, mapping the **last** offset of a batch to the position where that batch starts (shared/
seeds/003: 15,556-byte batches of 15 records give `offset: 29 position: 15556`,
`offset: 44 position: 31112`, ...). Looking up offset `o` returns the greatest entry <= o; the
batch holding `o` starts at that position or after it, so a short forward scan finds it.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from minibroker_storage.index import AbstractIndex, Buffer, CorruptIndex

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class InvalidOffset(Exception):
    """An index append whose offset is not above the last one."""


class OffsetIndex(AbstractIndex):
    ENTRY_SIZE = 8
    _KEY = _VALUE = struct.Struct(">i")
    _KEY_AT, _VALUE_AT = 0, 4

    def __init__(self, path: Path, base_offset: int, max_index_size: int = -1):
        super().__init__(path, base_offset, max_index_size)
        self._key_base = base_offset  # keys are stored relative to it
        self._last_offset: int | None = None if self._entries else base_offset  # None: not read yet

    # -- entries -------------------------------------------------------------------------------
    def _key(self, buf: Buffer, n: int) -> int:
        return self.base_offset + _ENTRY.unpack_from(buf, n * 8)[0]

    def _value(self, buf: Buffer, n: int) -> int:
        return _ENTRY.unpack_from(buf, n * 8)[1]

    def _entry(self, buf: Buffer, n: int) -> OffsetPosition:
        rel, pos = _ENTRY.unpack_from(buf, n * 8)
        return OffsetPosition(self.base_offset + rel, pos)

    def entry(self, n: int) -> OffsetPosition:
        if n >= self._entries:
            raise IndexError(f"Attempt to fetch the {n}th entry from index {self.path}, "
                             f"which has size {self._entries}")
        with self._lock:
            return self._entry(self._data(), n)

    def all_entries(self) -> list[OffsetPosition]:
        with self._lock:
            buf = self._data()
            return [self._entry(buf, i) for i in range(self._entries)]

    def _peek_entry(self, n: int) -> OffsetPosition:
        rel, pos = _ENTRY.unpack(self._peek(n)[0])
        return OffsetPosition(self.base_offset + rel, pos)

    def _last_entry(self) -> OffsetPosition:
        if self._entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self._peek_entry(self._entries - 1)

    @property
    def last_offset(self) -> int:
        last = self._last_offset
        if last is None:
            last = self._last_offset = self._last_entry().offset
        return last

    # -- lookups -------------------------------------------------------------------------------
    def lookup(self, target_offset: int) -> OffsetPosition:
        """The greatest entry with offset <= target, or (base_offset, 0) if there is none."""
        mem = self._mem
        if mem is not None:  # the active segment's: no lock (only this thread changes it)
            return self._lookup(mem, target_offset)
        with self._lock:
            return self._lookup(self._data(), target_offset)

    def _lookup(self, buf: Buffer, target_offset: int) -> OffsetPosition:
        slot = self._slot_for(buf, target_offset, by_value=False)
        return OffsetPosition(self.base_offset, 0) if slot < 0 else self._entry(buf, slot)

    def lookup_position(self, max_position: int) -> OffsetPosition | None:
        """The entry with the greatest position <= max_position: a batch boundary at or before it."""
        mem = self._mem
        if mem is not None:
            return self._lookup_position(mem, max_position)
        with self._lock:
            return self._lookup_position(self._data(), max_position)

    def _lookup_position(self, buf: Buffer, max_position: int) -> OffsetPosition | None:
        slot = self._slot_for(buf, max_position, by_value=True)
        return None if slot < 0 else self._entry(buf, slot)

    # -- changes -------------------------------------------------------------------------------
    def append(self, offset: int, position: int) -> None:
        if self.is_full():
            raise IndexError(f"Attempt to append to a full index (size = {self._entries}).")
        if self._entries and offset <= self.last_offset:
            raise InvalidOffset(f"Attempt to append an offset {offset} to position {self._entries} no "
                                f"larger than the last offset appended ({self._last_offset}) to {self.path}")
        mem = self._mem
        if mem is None:  # an on-file index with room: a truncated one, made active again
            with self._lock:
                mem = self._load()
        mem += _ENTRY.pack(self.relative_offset(offset), position)
        self._entries += 1
        self._last_offset = offset
        self._write_through()  # into the page cache now, as a store into Kafka's map

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= `offset`."""
        self._truncate_to_offset(offset, offset_is_value=False)

    def _truncate_to_entries(self, n: int) -> None:
        super()._truncate_to_entries(n)
        self._last_offset = None
        self._last_offset = self._last_entry().offset

    def sanity_check(self, log_size: int | None = None) -> None:
        """Cheap checks that decide whether the index is trusted on load (Kafka's, plus: the last
        entry points inside the log, and offsets grow at the tail). Read without a map."""
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndex(f"Index file {self.path} is corrupt, found {self._length} bytes which is "
                               f"neither positive nor a multiple of {self.ENTRY_SIZE}")
        if self._entries:
            # one read for both entries: a log's load checks every segment's indexes
            raw = self._peek(self._entries - 1, max(0, self._entries - 2))
            last, prev = (OffsetPosition(self.base_offset + r, p) for r, p in (_ENTRY.unpack(b) for b in raw))
            if last.offset < self.base_offset:
                raise CorruptIndex(f"Corrupt index found, index file {self.path} has non-zero size but the "
                                   f"last offset is {last.offset} which is less than the base offset "
                                   f"{self.base_offset}")
            if self._entries > 1 and prev.offset >= last.offset:
                raise CorruptIndex(f"Index file {self.path} has entries out of order at its end "
                                   "(an untrimmed, preallocated file?)")
            if log_size is not None and last.position >= log_size:
                raise CorruptIndex(f"Index file {self.path} points at position {last.position} "
                                   f"past the end of the log ({log_size} bytes)")
