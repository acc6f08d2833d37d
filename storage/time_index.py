"""`.timeindex`: sparse map from timestamp to offset (Kafka: TimeIndex).

An entry is 12 bytes, big-endian: 8-byte timestamp, 4-byte offset relative to the segment's
base offset. Entry (T, O) says: the largest timestamp in the segment up to offset O is T, so
any record with a timestamp above T comes after O. O is the last offset of the batch where the
segment's maximum timestamp reached T. Entries are written at the moments the offset index gets
one, and only when the maximum timestamp grew; timestamps and offsets both increase. When the
segment stops being active (roll or close) its final maximum is appended, so retention can read
a segment's largest timestamp from the last entry; one slot is kept free for that (`is_full`).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from minibroker_storage.index import AbstractIndex, Buffer, CorruptIndex

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    ENTRY_SIZE = 12
    _KEY, _VALUE = struct.Struct(">q"), struct.Struct(">i")
    _KEY_AT, _VALUE_AT = 0, 8

    def __init__(self, path: Path, base_offset: int, max_index_size: int = -1):
        super().__init__(path, base_offset, max_index_size)
        self._value_base = base_offset  # values (offsets) are stored relative to it
        # None: not read from the file yet
        self._last: TimestampOffset | None = None if self._entries else TimestampOffset(NO_TIMESTAMP, base_offset)

    def _key(self, buf: Buffer, n: int) -> int:
        return _ENTRY.unpack_from(buf, n * 12)[0]

    def _value(self, buf: Buffer, n: int) -> int:
        return self.base_offset + _ENTRY.unpack_from(buf, n * 12)[1]

    def _entry(self, buf: Buffer, n: int) -> TimestampOffset:
        ts, rel = _ENTRY.unpack_from(buf, n * 12)
        return TimestampOffset(ts, self.base_offset + rel)

    def entry(self, n: int) -> TimestampOffset:
        if n >= self._entries:
            raise IndexError(f"Attempt to fetch the {n}th entry from time index {self.path} "
                             f"which has size {self._entries}")
        with self._lock:
            return self._entry(self._data(), n)

    def all_entries(self) -> list[TimestampOffset]:
        with self._lock:
            buf = self._data()
            return [self._entry(buf, i) for i in range(self._entries)]

    def _peek_entry(self, n: int) -> TimestampOffset:
        ts, rel = _ENTRY.unpack(self._peek(n)[0])
        return TimestampOffset(ts, self.base_offset + rel)

    def _last_entry_from_file(self) -> TimestampOffset:
        if self._entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self._peek_entry(self._entries - 1)

    @property
    def last_entry(self) -> TimestampOffset:
        last = self._last
        if last is None:
            last = self._last = self._last_entry_from_file()
        return last

    def is_full(self) -> bool:
        # keep the last slot for the entry appended when the segment becomes inactive
        return self._entries >= self._max_entries - 1

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The greatest entry with timestamp <= target, or (-1, base_offset) if there is none."""
        mem = self._mem
        if mem is not None:  # the active segment's: no lock (only this thread changes it)
            return self._lookup(mem, target_timestamp)
        with self._lock:
            return self._lookup(self._data(), target_timestamp)

    def _lookup(self, buf: Buffer, target_timestamp: int) -> TimestampOffset:
        slot = self._slot_for(buf, target_timestamp, by_value=False)
        return TimestampOffset(NO_TIMESTAMP, self.base_offset) if slot < 0 else self._entry(buf, slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if the timestamp is above the last entry's."""
        if not skip_full_check and self.is_full():
            raise IndexError(f"Attempt to append to a full time index (size = {self._entries}).")
        last = self.last_entry
        if self._entries and offset < last.offset:
            raise ValueError(f"Attempt to append an offset ({offset}) to slot {self._entries} no larger "
                             f"than the last offset appended ({last.offset}) to {self.path}")
        if self._entries and timestamp < last.timestamp:
            raise ValueError(f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no "
                             f"larger than the last timestamp appended ({last.timestamp}) to {self.path}")
        if timestamp > last.timestamp:
            if self._entries >= self._max_entries:
                self.resize((self._entries + 1) * self.ENTRY_SIZE)  # a trimmed file: grow by one slot
            mem = self._mem
            if mem is None:  # an on-file index with room: a truncated one, made active again
                with self._lock:
                    mem = self._load()
            mem += _ENTRY.pack(timestamp, self.relative_offset(offset))
            self._entries += 1
            self._last = TimestampOffset(timestamp, offset)
            self._write_through()  # into the page cache now, as a store into Kafka's map

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= `offset`."""
        self._truncate_to_offset(offset, offset_is_value=True)

    def _truncate_to_entries(self, n: int) -> None:
        super()._truncate_to_entries(n)
        self._last = None

    def sanity_check(self, log_end_offset: int | None = None) -> None:
        """Kafka's checks, plus: timestamps grow at the tail. Read without a map."""
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndex(f"Time index file {self.path} is corrupt, found {self._length} bytes which "
                               f"is neither positive nor a multiple of {self.ENTRY_SIZE}")
        if self._entries:
            # one read for the three entries: a log's load checks every segment's indexes
            n = self._entries
            raw = self._peek(n - 1, 0, max(0, n - 2))
            last, first, prev = (TimestampOffset(t, self.base_offset + r) for t, r in (_ENTRY.unpack(b) for b in raw))
            self._last = last
            if last.timestamp < first.timestamp:
                raise CorruptIndex(f"Corrupt time index found, time index file ({self.path}) has non-zero "
                                   f"size but the last timestamp is {last.timestamp} which is less than "
                                   f"the first timestamp {first.timestamp}")
            if last.offset < self.base_offset:
                raise CorruptIndex(f"Corrupt time index found, time index file ({self.path}) has non-zero "
                                   f"size but the last offset is {last.offset} which is less than the "
                                   f"first offset {self.base_offset}")
            if n > 1 and prev.timestamp >= last.timestamp:
                raise CorruptIndex(f"Time index file {self.path} has entries out of order at its end "
                                   "(an untrimmed, preallocated file?)")
            if log_end_offset is not None and last.offset >= log_end_offset:
                raise CorruptIndex(f"Time index file {self.path} refers to offset {last.offset} at or past "
                                   f"the segment's end offset {log_end_offset}")
